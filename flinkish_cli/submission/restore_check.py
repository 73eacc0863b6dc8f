"""The state check before a restore: does the new program fit the state it is about to start
from? Run by ``run -s`` and by ``upgrade`` (against the running job's state) before anything
is started, stopped or written.

1. What the state holds (:class:`SavedState`): a savepoint's or retained checkpoint's
   queries (``run -s``), or the running job's (``upgrade``, whose savepoint is not taken
   yet: its queries' checkpoints at their last committed batch, which the savepoint will
   copy). Each stateful query's state *metadata* is copied to a temporary directory (the
   operator metadata and schema files under ``state/``: a few files, never the state), and
   its operators named from it.
2. The new program is planned in a child process (:mod:`flinkish_cli.planning.state_check`,
   a local Spark session with the job's configuration, the program run dry) and Spark
   itself judges each stateful operator's saved state: its own compatibility rules, as a
   restarted query applies them when it plans its first batch.
3. :func:`~flinkish_cli.planning.compatibility.compare` weighs the answer with Flink's rules
   (``-n/--allowNonRestoredState`` for state the new program no longer has); a mismatch is
   refused in one message naming the query, the operator and what differs, and what is
   allowed is said on standard error.

Where Spark cannot tell without running (the program fails, exits or waits in the dry run,
or takes longer than ``flinkish.restore.state-check.timeout``; a query Spark cannot plan
this way; state on HDFS, which only a job's driver reaches), the check says so and the
start goes ahead: the new job's own start checks the state, and ``upgrade``'s readiness
check and rollback stand behind it. ``flinkish.restore.state-check.enabled: false`` turns
the check off.

The dry run runs the program's code up to its first wait on this machine, as ``flinkish
info`` does: what the program does before it starts its queries (reading a static table,
creating a directory) happens here too.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import SavepointError
from flinkish_cli.plan.child import run_child
from flinkish_cli.planning.compatibility import PlannedQuery, SavedQuery, Verdict, compare

if TYPE_CHECKING:
    from flinkish_cli.registry.status import JobStatus
    from flinkish_cli.savepoints.manifest import QueryManifest
    from flinkish_cli.savepoints.restore import RestoreSource
    from flinkish_cli.storage import Storage
    from flinkish_cli.submission.submit import RunRequest

ENABLED = "flinkish.restore.state-check.enabled"
TIMEOUT = "flinkish.restore.state-check.timeout"
#: What the user reads while the check plans the program.
CHECKING = "Checking the program against {what} (planning it in a local Spark session)..."


@dataclass
class SavedQueryState:
    """One query of the state: its manifest, and where its checkpoint is (its storage and
    directory; None where this process cannot read it) with the files it lists, when known."""

    manifest: QueryManifest
    storage: Storage | None
    directory: str | None
    files: list[str] | None = None


@dataclass
class SavedState:
    """What a program is about to restore: how messages name it, and its queries."""

    described: str
    queries: list[SavedQueryState] = field(default_factory=list)


def of_source(source: RestoreSource, storage: Storage) -> SavedState:
    """The state ``run -s`` names (read and checked by the restore's own checks)."""
    what = "savepoint" if source.kind == "savepoint" else "retained checkpoint"
    queries = []
    for query in source.manifest.queries:
        files = None
        if source.kind == "savepoint":
            prefix = f"{query.name}/"
            files = [f.path[len(prefix) :] for f in source.manifest.files_of(query.name)]
        queries.append(SavedQueryState(query, storage, source.query_dir(query.name), files))
    return SavedState(f"the state of {what} {source.path}", queries)


def of_job(status: JobStatus, config: Any) -> SavedState:
    """The state of a job's queries (the checkpoints its status names, wherever the script
    put them), at their last committed batches: what a savepoint of it would hold."""
    from flinkish_cli.savepoints.create import snapshot_query
    from flinkish_cli.storage import open_for_config
    from flinkish_cli.storage.uri import HDFS, scheme_of

    saved = SavedState(f"the state of job {status.job_id}")
    for name, query in sorted(status.queries.items()):
        if not query.checkpoint:
            continue
        if scheme_of(query.checkpoint) == HDFS:
            from flinkish_cli.savepoints.manifest import QueryManifest

            empty = QueryManifest(name, -1, None, 0, [], None, None)
            saved.queries.append(SavedQueryState(empty, None, query.checkpoint))
            continue
        storage = open_for_config(query.checkpoint, config)
        if not storage.exists(query.checkpoint):
            continue
        snapshot = snapshot_query(storage, query.checkpoint, name)
        saved.queries.append(
            SavedQueryState(snapshot.manifest, storage, query.checkpoint, snapshot.files)
        )
    return saved


def enabled(config: Any) -> bool:
    return bool(config.get(ENABLED))


def check_restore(
    request: RunRequest,
    config: Any,
    saved: SavedState,
    notice: Callable[[str], None],
    subject: str,
    untouched: str,
    planner: Callable[[dict[str, Any], float], dict[str, Any]] | None = None,
    environment: dict[str, str] | None = None,
) -> Verdict:
    """Check ``request``'s program against ``saved``; refuses a mismatch with a
    :class:`SavepointError` (``"<subject> does not fit <state>: ..."``, the hint ending with
    ``untouched``), says on ``notice`` what is allowed or cannot be told, and returns the
    verdict (its :attr:`~Verdict.leave_out` goes into the restore plan). ``planner`` stands
    for the child process (tests); ``environment`` is the child's (this process's by
    default: a server passes the one its jobs run with)."""
    if not enabled(config):
        return Verdict()
    unreachable = [q.manifest.name for q in saved.queries if q.storage is None]
    if unreachable:
        notice(
            f"The state check cannot read {saved.described} (HDFS is read by the job's "
            "driver only): the new job's start checks it."
        )
        return Verdict()
    started = time.monotonic()
    notice(CHECKING.format(what=saved.described))
    with tempfile.TemporaryDirectory(prefix="flinkish-state-check-") as temp:
        queries, saved_queries = _copy_metadata(saved, temp)
        timeout = config.get(TIMEOUT).total_seconds()
        payload = _request(request, config, queries)
        if planner is not None:
            answer = planner(payload, timeout)
        else:
            answer = run_planner(payload, timeout, environment)
    verdict = _verdict(answer, saved_queries, bool(request.allow_non_restored_state))
    refusal = verdict.refusal()
    if refusal is not None:
        message, hint = refusal
        raise SavepointError(
            f"{subject} does not fit {saved.described}: {message}", f"{hint} {untouched}"
        )
    for text in verdict.unknown:
        notice(
            f"The state check cannot tell without running: {text}. The new job's start checks it."
        )
    for text in verdict.skipped:
        notice(f"Skipping saved state (-n): {text}")
    if verdict.checked:
        names = ", ".join(f"'{name}'" for name in verdict.checked)
        notice(
            f"The state of {names} fits the program (Spark's own checks, "
            f"{time.monotonic() - started:.1f} s)."
        )
    return verdict


def _verdict(answer: dict[str, Any], saved: list[SavedQuery], allow: bool) -> Verdict:
    if answer.get("failure"):
        verdict = Verdict()
        verdict.unknown.append(str(answer["failure"]).rstrip("."))
        return verdict
    planned = [PlannedQuery.from_dict(q) for q in answer.get("queries") or []]
    return compare(saved, planned, allow)


def _copy_metadata(saved: SavedState, temp: str) -> tuple[list[dict[str, Any]], list[SavedQuery]]:
    """Copy each stateful query's state metadata under ``temp``; the child's view of each
    query, and the saved side of the comparison."""
    from flinkish_cli.planning.state_check import is_state_metadata, saved_operator
    from flinkish_cli.storage import join

    queries, compared = [], []
    for query in saved.queries:
        manifest = query.manifest
        copy = None
        operators = []
        if manifest.stateful and manifest.last_committed_batch >= 0:
            assert query.storage is not None and query.directory is not None
            copy = os.path.join(temp, f"q{len(queries)}")
            files = query.files
            if files is None:
                state = join(query.directory, "state")
                files = [
                    info.path[len(query.directory.rstrip("/")) + 1 :]
                    for info in query.storage.walk(state)
                ]
            for relative in files:
                if is_state_metadata(relative):
                    local = os.path.join(copy, *relative.split("/"))
                    os.makedirs(os.path.dirname(local), exist_ok=True)
                    query.storage.download_file(join(query.directory, relative), local)
            operators = [
                saved_operator(copy, op.operator_id, op.partitions) for op in manifest.operators
            ]
        queries.append(
            {
                "name": manifest.name,
                "batch": manifest.last_committed_batch,
                "copy": copy,
                "offsets": json.dumps(
                    {
                        "batchWatermarkMs": manifest.watermark_ms,
                        "batchTimestampMs": 0,
                        "conf": manifest.conf,
                    }
                ),
            }
        )
        compared.append(
            SavedQuery(manifest.name, manifest.last_committed_batch, operators, manifest.shape)
        )
    return queries, compared


def _request(request: RunRequest, config: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """The child's request: the program, its Spark settings and the saved queries."""
    from flinkish_cli.config import to_spark
    from flinkish_cli.submission.shipping import ship_connectors

    translation = to_spark(config)
    ship_connectors(config, translation.conf)  # the program's connectors, as the job gets them
    master = translation.master if translation.master.startswith("local") else "local[*]"
    if request.script:
        entry = {"kind": "file", "target": str(Path(request.script).resolve())}
    else:
        entry = {"kind": "module", "target": str(request.module)}
    entry["args"] = list(request.args)  # type: ignore[assignment]
    path = [str(Path(p).resolve()) for p in request.py_files if "://" not in p]
    return {
        "entry": entry,
        "path": path,
        "conf": {k: v for k, v in translation.conf.items() if k != "spark.master"},
        "master": master,
        "class_data_sharing": bool(config.get("env.java.class-data-sharing")),
        "queries": queries,
    }


def run_planner(
    request: dict[str, Any], timeout: float, environment: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run :mod:`flinkish_cli.planning.state_check` in a process of its own (with
    ``environment``, else this one's): its answer, or one whose ``failure`` says why there
    is none (it took longer than ``timeout``, or crashed). The child and everything it
    started (Spark's JVM) go when it is done."""
    ended = run_child("flinkish_cli.planning.state_check", request, timeout, environment)
    if ended.timed_out:
        return {
            "failure": f"planning the program took longer than {timeout:.0f} s ({TIMEOUT}): "
            "it may wait for something before it starts its queries"
        }
    if ended.answer is not None:
        return ended.answer
    last = ended.last_line() or "no output"
    return {"failure": f"the planning process ended with status {ended.returncode} ({last})"}


def refuse_rescale(saved: SavedState, config: Any) -> None:
    """The state partitions the new run asks for (``-p``) must be reachable: the restore's
    own rule (:func:`~flinkish_cli.savepoints.restore.check_rescale`) on ``saved``."""
    from flinkish_cli.savepoints.manifest import Manifest
    from flinkish_cli.savepoints.restore import check_rescale

    manifest = Manifest("", "", "", "", "", [q.manifest for q in saved.queries], [])
    check_rescale(
        manifest, int(config.get("parallelism.default")), str(config.get("state.backend.type"))
    )


__all__ = [
    "CHECKING",
    "ENABLED",
    "TIMEOUT",
    "SavedState",
    "check_restore",
    "enabled",
    "of_job",
    "of_source",
    "refuse_rescale",
    "run_planner",
]
