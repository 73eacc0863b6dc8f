"""The checks ``flinkish upgrade`` makes before it touches the old job.

:func:`check_state`: the old job is in a state the upgrade mode can start from (a savepoint
needs a running job, unless ``flinkish.upgrade.last-state-fallback.enabled``; the last state
needs retained checkpoints, and a cancel that keeps them). :func:`check_writable`: the
savepoint directory can be written. Each raises what the user should do instead; the rest of
the checks (the new program, the old one's kept program) are the submission's own, made by
:class:`~flinkish_cli.client.upgrade.machine.Upgrade`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from flinkish_cli.client.upgrade.outcome import UpgradeMode
from flinkish_cli.errors import FlinkishError, JobError, SavepointError
from flinkish_cli.registry import program as programs
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry


def fallback_allowed(config: Any) -> bool:
    """Whether an upgrade with a savepoint may fall back to the job's last state."""
    return bool(config.get("flinkish.upgrade.last-state-fallback.enabled"))


def check_state(registry: JobRegistry, config: Any, old: JobStatus, mode: UpgradeMode) -> None:
    """The old job can be upgraded in ``mode``; a :class:`JobError` saying what to do when not."""
    state = old.effective_state()
    job = old.job_id
    if state in (JobState.FINISHED, JobState.CANCELED):
        raise JobError(
            f"Cannot upgrade job {job}: it is {state.value}.",
            f"Start the new program from its last state with 'flinkish run -s <savepoint "
            f"or {registry.job_dir(job)}> ...'.",
        )
    if state in (JobState.CREATED, JobState.CANCELLING):
        raise JobError(
            f"Cannot upgrade job {job}: it is {state.value}.",
            "Wait until it runs (or has ended) and try again; see 'flinkish list -a'.",
        )
    running = state is JobState.RUNNING
    if mode is UpgradeMode.SAVEPOINT and not running and not fallback_allowed(config):
        raise JobError(
            f"Cannot upgrade job {job} with a savepoint: it is {state.value}, and only a "
            "running job takes one.",
            "Upgrade from its retained checkpoints with --upgrade-mode last-state, or let "
            "the upgrade fall back to them with -D "
            "flinkish.upgrade.last-state-fallback.enabled=true.",
        )
    if mode is UpgradeMode.LAST_STATE or (mode is UpgradeMode.SAVEPOINT and not running):
        _check_checkpoints(registry, old)


def _check_checkpoints(registry: JobRegistry, old: JobStatus) -> None:
    """``last-state`` needs the job's checkpoints, and a cancel that keeps them."""
    if not old.queries:
        raise JobError(
            f"Cannot upgrade job {old.job_id} from its last state: it has no checkpoints "
            "(none of its queries started).",
            "Upgrade it with --upgrade-mode stateless.",
        )
    retention = "execution.checkpointing.externalized-checkpoint-retention"
    kept = _job_conf(registry, old.job_id).get(retention, "RETAIN_ON_CANCELLATION")
    if not old.effective_state().is_terminal and kept != "RETAIN_ON_CANCELLATION":
        raise JobError(
            f"Cannot upgrade job {old.job_id} from its last state: its {retention} is "
            f"{kept}, so cancelling it deletes the checkpoints the upgrade needs.",
            "Upgrade it with a savepoint (--upgrade-mode savepoint).",
        )


def _job_conf(registry: JobRegistry, job_id: str) -> dict[str, str]:
    """The configuration the job ran with (its kept program's), or none."""
    try:
        return programs.load(registry, job_id).conf
    except FlinkishError:
        return {}


def check_writable(config: Any, target: str) -> None:
    """The savepoint directory can be written: a local one (or its nearest existing parent)
    by this user, a remote one by a probe object written and deleted again."""
    from flinkish_cli.storage import join, open_for_config

    storage = open_for_config(target, config)
    local = storage.local_path(target)
    if local is not None:
        path = Path(local)
        while not path.exists() and path.parent != path:
            path = path.parent
        if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
            raise SavepointError(
                f"The savepoint directory {target} is not writable ({path} "
                f"{'is not a directory' if not path.is_dir() else 'is not writable'}).",
                "Pass a writable directory with --savepointPath, or fix "
                "execution.checkpointing.savepoint-dir.",
            )
        return
    probe = join(target, f".flinkish-write-check-{uuid.uuid4().hex[:12]}")
    try:
        storage.write_bytes(probe, b"")
        storage.delete(probe)
    except FlinkishError as error:
        raise SavepointError(
            f"The savepoint directory {target} is not writable: {error.message}",
            error.hint,
        ) from None
