"""``flinkish upgrade``: replace a job's program, keep its state, roll back when the new
program does not become stable (the Flink Kubernetes Operator's upgrade, without Kubernetes).

1. **Check** everything that can be checked before the old job is touched: the JobID names a
   job the mode can upgrade, the new program exists and compiles, the configuration is valid
   and its deployment reachable (everything ``run`` checks), the savepoint directory is
   writable, and the old job's kept program (:mod:`~flinkish_cli.registry.program`) can be
   brought back for a rollback. A refusal leaves the old job as it was.
2. **Take the state**: ``savepoint`` (the default) stops the job with a savepoint, recorded
   UPGRADE in its history; a job that cannot take one (not running, or its savepoint failed)
   falls back to ``last-state`` only when ``flinkish.upgrade.last-state-fallback.enabled``
   says so, and says so. ``last-state`` cancels the job (if it still runs) and starts from its
   retained checkpoints; ``stateless`` cancels it and starts empty.
3. **Start** the new program (a new JobID, linked both ways: ``upgraded_from`` and
   ``upgraded_to``), with ``run``'s options.
4. **Wait for stability** for ``flinkish.upgrade.readiness.timeout``: the job is RUNNING, its
   program reached its first wait (its queries are all started, as Flink's ``execute()``),
   and every query reported progress in this job (committed a batch, or found no input to
   read) with no failure, no restart, no query exception.
5. **Roll back** otherwise: the new job is cancelled and the previous program (its kept code,
   arguments and configuration; the secrets from this command's configuration) resumes from
   the same savepoint (or checkpoints) as a new job, ``rolled_back``.

**The rollback guarantee.** A rollback replays, in the previous program, input the new
program may have read, so it must never have to undo output the new program committed:
flinkish reads the new job's commit logs and rolls back only when no query committed a batch
beyond the state it started from. A new program that fails, or never becomes stable, after
committing output is not rolled back: it is left to its restart strategy (as with
``--no-rollback``), and the outcome says why. Exactly once holds either way: for state, and
for Spark's file sink, whose own log keeps a replayed batch from being written twice.
"""

from __future__ import annotations

import enum
import os
import shutil
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from flinkish_cli.errors import FlinkishError, JobError, SavepointError
from flinkish_cli.registry import program as programs
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.spark.failures import headline

if TYPE_CHECKING:
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.submission.launcher import Launched
    from flinkish_cli.submission.submit import PreparedJob, RunRequest

#: How often the upgrade looks at the new job while it waits for stability.
POLL_SECONDS = 0.5


class UpgradeMode(str, enum.Enum):
    """How the state crosses the upgrade (the operator's ``upgradeMode``)."""

    SAVEPOINT = "savepoint"
    LAST_STATE = "last-state"
    STATELESS = "stateless"


class Result(str, enum.Enum):
    """How an upgrade ended; only STABLE exits 0."""

    STABLE = "STABLE"  # the new program runs and is stable
    ROLLED_BACK = "ROLLED_BACK"  # the previous program runs again
    UNSTABLE = "UNSTABLE"  # the new program is left to its restart strategy
    FAILED = "FAILED"  # neither program runs


@dataclass
class UpgradeRequest:
    """What ``flinkish upgrade`` was asked."""

    job_id: str
    program: RunRequest  # the new program, with run's options
    mode: UpgradeMode = UpgradeMode.SAVEPOINT
    savepoint_dir: str | None = None  # --savepointPath (else the configured directory)
    rollback: bool = True  # --no-rollback: False


@dataclass
class UpgradeOutcome:
    """What became of an upgrade; ``line`` is its final line for scripts."""

    result: Result
    job_id: str  # the job upgraded
    mode: UpgradeMode
    new_job_id: str | None = None
    rollback_job_id: str | None = None
    source: str | None = None  # the savepoint or checkpoints the new program started from
    reason: str | None = None  # why the new program was not stable
    program: str = ""
    previous_program: str = ""
    notes: list[str] = field(default_factory=list)
    new_job_dir: str = ""  # the new job's checkpoints

    @property
    def line(self) -> str:
        start = _from(self.mode, self.source)
        new = f"job {self.new_job_id} ({self.program})"
        if self.result is Result.STABLE:
            return f"Upgrade of job {self.job_id} completed: {new} runs {start} and is stable."
        if self.result is Result.ROLLED_BACK:
            return (
                f"Upgrade of job {self.job_id} rolled back: {new} {self.reason}; job "
                f"{self.rollback_job_id} runs the previous program ({self.previous_program}) "
                f"{start}."
            )
        if self.result is Result.UNSTABLE:
            return (
                f"Upgrade of job {self.job_id} is not stable: {new} {self.reason}; it is left "
                f"to its restart strategy (it started {start}; once it has ended, resume "
                f"from its checkpoints with 'flinkish run -s {self.new_job_dir} ...')."
            )
        resume = f" -s {self.source}" if self.source else ""
        return (
            f"Upgrade of job {self.job_id} failed: {new} {self.reason}. Resume by hand: "
            f"flinkish run{resume} {self.previous_program or '<job.py>'} ..."
        )

    def summary(self) -> dict[str, Any]:
        """The outcome for ``--output json``."""
        return {
            "result": self.result.value,
            "jid": self.job_id,
            "upgrade-mode": self.mode.value,
            "new-jid": self.new_job_id,
            "rollback-jid": self.rollback_job_id,
            "restored-from": self.source,
            "reason": self.reason,
            "program": self.program,
            "previous-program": self.previous_program or None,
            "notes": list(self.notes),
        }


class UpgradePresenter(Protocol):
    """What the user sees while an upgrade goes on."""

    def savepoint(self, path: str) -> None: ...
    def submitted(self, job_id: str) -> None: ...
    def notice(self, message: str) -> None: ...


def _from(mode: UpgradeMode, source: str | None) -> str:
    if source is None:
        return "with empty state"
    if mode is UpgradeMode.LAST_STATE:
        return f"from the retained checkpoints {source}"
    return f"from savepoint {source}"


@dataclass
class _Rollback:
    """The previous program, brought back before anything is touched."""

    request: RunRequest
    config: Any
    program: str  # what to call it: the script as it was submitted
    directory: Path  # the local copy of its code (kept while a rollback job runs it)


class Upgrade:
    """One upgrade of one job, step by step (see the module's docstring); started by
    :meth:`JobClient.upgrade <flinkish_cli.client.jobs.JobClient.upgrade>`."""

    def __init__(
        self, client: JobClient, request: UpgradeRequest, presenter: UpgradePresenter
    ) -> None:
        self.client = client
        self.config = client.config
        self.registry = client.registry
        self.request = request
        self.presenter = presenter
        self.mode = request.mode
        self.outcome = UpgradeOutcome(
            Result.FAILED,
            parse_job_id(request.job_id),
            request.mode,
            program=str(request.program.script or request.program.module),
        )

    # -- 1. checks -------------------------------------------------------------------------
    def check(self) -> tuple[JobStatus, _Rollback | None]:
        """Everything before the old job is touched; raises on any refusal."""
        from flinkish_cli.submission import submit

        old = self.registry.get(self.outcome.job_id)
        self._check_state(old)
        target = None
        if self.mode is UpgradeMode.SAVEPOINT:
            from flinkish_cli.client.jobs import savepoint_target

            target = savepoint_target(self.config, self.request.savepoint_dir)
            _check_writable(self.config, target)
        prepared = submit.prepare(self.request.program, self.config)
        prepared.discard()
        for message in prepared.notices:
            self.presenter.notice(message)
        rollback = self._bring_back(old) if self.request.rollback else None
        return old, rollback

    def _check_state(self, old: JobStatus) -> None:
        state = old.effective_state()
        job = old.job_id
        if state in (JobState.FINISHED, JobState.CANCELED):
            raise JobError(
                f"Cannot upgrade job {job}: it is {state.value}.",
                f"Start the new program from its last state with 'flinkish run -s <savepoint "
                f"or {self.registry.job_dir(job)}> ...'.",
            )
        if state in (JobState.CREATED, JobState.CANCELLING):
            raise JobError(
                f"Cannot upgrade job {job}: it is {state.value}.",
                "Wait until it runs (or has ended) and try again; see 'flinkish list -a'.",
            )
        running = state is JobState.RUNNING
        if self.mode is UpgradeMode.SAVEPOINT and not running and not self._fallback_allowed():
            raise JobError(
                f"Cannot upgrade job {job} with a savepoint: it is {state.value}, and only a "
                "running job takes one.",
                "Upgrade from its retained checkpoints with --upgrade-mode last-state, or let "
                "the upgrade fall back to them with -D "
                "flinkish.upgrade.last-state-fallback.enabled=true.",
            )
        if self.mode is UpgradeMode.LAST_STATE or (
            self.mode is UpgradeMode.SAVEPOINT and not running
        ):
            self._check_checkpoints(old)

    def _fallback_allowed(self) -> bool:
        return bool(self.config.get("flinkish.upgrade.last-state-fallback.enabled"))

    def _check_checkpoints(self, old: JobStatus) -> None:
        """``last-state`` needs the job's checkpoints, and a cancel that keeps them."""
        if not old.queries:
            raise JobError(
                f"Cannot upgrade job {old.job_id} from its last state: it has no checkpoints "
                "(none of its queries started).",
                "Upgrade it with --upgrade-mode stateless.",
            )
        retention = "execution.checkpointing.externalized-checkpoint-retention"
        kept = _job_conf(self.registry, old.job_id).get(retention, "RETAIN_ON_CANCELLATION")
        if not old.effective_state().is_terminal and kept != "RETAIN_ON_CANCELLATION":
            raise JobError(
                f"Cannot upgrade job {old.job_id} from its last state: its {retention} is "
                f"{kept}, so cancelling it deletes the checkpoints the upgrade needs.",
                "Upgrade it with a savepoint (--upgrade-mode savepoint).",
            )

    def _bring_back(self, old: JobStatus) -> _Rollback:
        """The old job's program, fetched and checked: what a rollback will run."""
        from flinkish_cli.submission import submit

        record = programs.load(self.registry, old.job_id)
        log_dir = Path(str(self.config.get("env.log.dir"))).expanduser()
        log_dir.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=f"flinkish-program-{old.job_id}-", dir=log_dir))
        try:
            files = programs.fetch(self.registry, old.job_id, record, directory / "kept")
            request = _rollback_request(record, files, directory / "code")
            config = _rollback_config(record, self.config)
            prepared = submit.prepare(request, config)
            prepared.discard()
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        shown = record.origin if record.kind == "file" else f"-pym {record.target}"
        return _Rollback(request, config, shown, directory)

    # -- 2.-5. -----------------------------------------------------------------------------
    def run(self) -> UpgradeOutcome:
        """Carry out the upgrade (after :meth:`check`): its outcome."""
        old, rollback = self.check()
        outcome = self.outcome
        try:
            source = self._take_state(old)
            outcome.source, outcome.mode = source, self.mode
            baseline = self._baseline(old, source)
            new, launched = self._start(self.request.program, self.config, source, old.job_id)
            outcome.new_job_id, outcome.new_job_dir = new.plan.job_id, new.plan.job_dir
            _link(self.registry, old.job_id, new.plan.job_id)
            reason = self._wait_stable(new, launched)
            if reason is None:
                outcome.result = Result.STABLE
                return outcome
            outcome.reason = reason
            committed = _committed_beyond(self.config, self.registry, new.plan.job_id, baseline)
            if committed:
                outcome.reason += (
                    f", after committing output ({committed}) that a rollback would have to undo"
                )
                outcome.result = Result.UNSTABLE
            elif rollback is None:
                outcome.result = Result.UNSTABLE
            else:
                outcome.previous_program = rollback.program
                self._roll_back(new.plan.job_id, rollback, source)
                rollback = None if outcome.result is Result.ROLLED_BACK else rollback
            return outcome
        finally:
            if rollback is not None:  # not running anywhere: its local copy goes
                shutil.rmtree(rollback.directory, ignore_errors=True)

    def _take_state(self, old: JobStatus) -> str | None:
        """End the old job the mode's way; where the new program starts from."""
        job = old.job_id
        if self.mode is UpgradeMode.SAVEPOINT:
            if old.effective_state() is JobState.RUNNING:
                try:
                    return self._stop_with_savepoint(job)
                except FlinkishError as error:
                    if not self._fallback_allowed():
                        raise
                    why = str(error).splitlines()[0]
                    self._fall_back(job, f"its savepoint failed ({why})")
            else:
                self._fall_back(job, f"it is {old.effective_state().value}")
        if self.mode is UpgradeMode.STATELESS:
            self._cancel_if_live(job)
            return None
        self._cancel_if_live(job)
        return self.registry.job_dir(job)

    def _stop_with_savepoint(self, job: str) -> str:
        stopped = self.client.stop(job, self.request.savepoint_dir, drain=False, upgrade=True)
        self.presenter.savepoint(stopped.path)
        problem = stopped.ended_as(JobState.FINISHED)
        if problem is not None:
            raise problem
        return stopped.path

    def _fall_back(self, job: str, why: str) -> None:
        self.mode = UpgradeMode.LAST_STATE
        note = (
            f"Job {job} cannot take a savepoint: {why}. Upgrading from its latest retained "
            "checkpoint instead (flinkish.upgrade.last-state-fallback.enabled)."
        )
        self.outcome.notes.append(note)
        self.presenter.notice(note)

    def _cancel_if_live(self, job: str) -> None:
        """Cancel ``job`` unless it has ended; a job that ends (fails) on its own while
        the cancel is asked is as good as cancelled."""
        if self.registry.get(job).effective_state().is_terminal:
            return
        try:
            self.client.cancel(job)
        except JobError:
            if not self.registry.get(job).effective_state().is_terminal:
                raise

    def _baseline(self, old: JobStatus, source: str | None) -> dict[str, int]:
        """Each query's last committed batch in the state the new program starts from."""
        if source is None:
            return {}
        return {
            name: batch
            for name, query in self.registry.get(old.job_id).queries.items()
            if (batch := _last_commit(self.config, query.checkpoint)) is not None
        }

    def _start(
        self,
        request: RunRequest,
        config: Any,
        source: str | None,
        replaces: str,
        rolled_back: bool = False,
        shown: str = "",
    ) -> tuple[PreparedJob, Launched]:
        from flinkish_cli.submission import submit
        from flinkish_cli.submission.run import restore_plan

        request = replace(
            request,
            detached=True,
            from_savepoint=source,
            upgraded_from=replaces,
            rolled_back=rolled_back,
            shutdown_on_attached_exit=False,
        )
        prepared = submit.prepare(request, config, restore_plan(request, config))
        if rolled_back:  # the program is still the one the user deployed, not our copy
            prepared.program.origin = shown
        launched = submit.start(prepared)
        self.presenter.submitted(prepared.plan.job_id)
        return prepared, launched

    def _wait_stable(self, new: PreparedJob, launched: Launched) -> str | None:
        """None once the new job is stable; else why it is not."""
        timeout = self.config.get("flinkish.upgrade.readiness.timeout").total_seconds()
        deadline = time.monotonic() + timeout
        while True:
            status = self.registry.find(new.plan.job_id)
            if status is not None:
                verdict = judge(status)
                if verdict.stable or verdict.failure:
                    return verdict.failure
            if launched.process.poll() is not None:
                status = self.registry.find(new.plan.job_id)
                verdict = judge(status) if status is not None else None
                if verdict is not None and (verdict.stable or verdict.failure):
                    return verdict.failure
                return f"ended before it ran (its driver exited; see its log {new.log_path})"
            if time.monotonic() >= deadline:
                waiting = judge(status).waiting if status is not None else "its driver to report"
                return f"was not stable within {_seconds(timeout)} (still waiting for {waiting})"
            time.sleep(POLL_SECONDS)

    def _roll_back(self, failed: str, rollback: _Rollback, source: str | None) -> None:
        outcome = self.outcome
        note = f"Rolling back: cancelling job {failed} and resuming the previous program."
        self.presenter.notice(note)
        self._cancel_if_live(failed)
        from flinkish_cli.submission import launcher

        prepared, launched = self._start(
            rollback.request, rollback.config, source, failed, True, rollback.program
        )
        outcome.rollback_job_id = prepared.plan.job_id
        _link(self.registry, failed, prepared.plan.job_id)
        try:
            status = launcher.wait_until_running(prepared.registry, prepared.plan.job_id, launched)
        except JobError as error:
            outcome.reason = f"{outcome.reason}, and the rollback job did not run: {error.message}"
            outcome.result = Result.FAILED
            return
        if status.state is JobState.RUNNING:
            outcome.result = Result.ROLLED_BACK
            return
        cause = headline(status.failure_cause)
        outcome.reason = f"{outcome.reason}, and the rollback job failed: {cause}"
        outcome.result = Result.FAILED


@dataclass(frozen=True)
class Verdict:
    """The new job's stability, from its status."""

    stable: bool
    failure: str | None = None  # why it can no longer become stable
    waiting: str = ""  # what it still waits for


def judge(status: JobStatus) -> Verdict:
    """Stable: RUNNING, the program reached its first wait, every query active and with
    progress in this job (a committed batch, or Spark's report that it found no new input);
    a failure: any failure, restart or query exception."""
    state = status.effective_state()
    if state.is_terminal or state in (JobState.FAILING, JobState.CANCELLING):
        cause = headline(status.effective_failure_cause())
        return Verdict(False, f"ended {state.value}" + (f": {cause}" if cause else ""))
    if status.restarts or status.exceptions or state is JobState.RESTARTING:
        last = status.exceptions[-1]["cause"] if status.exceptions else status.failure_cause
        cause = headline(last)
        return Verdict(False, "failed" + (f": {cause}" if cause else ""))
    for name, query in status.queries.items():
        if query.exception:
            return Verdict(False, f"failed in query {name}: {headline(query.exception)}")
    if state is not JobState.RUNNING:
        return Verdict(False, waiting=f"it to run (it is {state.value})")
    if not status.queries_started:
        return Verdict(False, waiting="its program to start its queries")
    waiting = [
        name for name, q in status.queries.items() if not (q.active and (q.recent or q.idle))
    ]
    if not status.queries or waiting:
        return Verdict(False, waiting=f"the first batch of {', '.join(waiting) or 'a query'}")
    return Verdict(True)


# -- helpers --------------------------------------------------------------------------------
def _seconds(value: float) -> str:
    return f"{value:.0f} s"


def _job_conf(registry: Any, job_id: str) -> dict[str, str]:
    """The configuration the job ran with (its kept program's), or none."""
    try:
        return programs.load(registry, job_id).conf
    except FlinkishError:
        return {}


def _check_writable(config: Any, target: str) -> None:
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


def _rollback_request(record: programs.ProgramRecord, files: list[Path], code: Path) -> RunRequest:
    """The previous program as a run request: its script unpacked from its kept job.zip."""
    from flinkish_cli.submission.submit import RunRequest

    script = None
    if record.kind == "file":
        job_zip, files = files[0], files[1:]
        with zipfile.ZipFile(job_zip) as archive:
            _extract(archive, code)
        script = str(code / record.target)
    return RunRequest(
        script=script,
        module=record.target if record.kind == "module" else None,
        args=list(record.args),
        py_files=[str(path) for path in files],
        py_archives=list(record.archives),
        jobmanager=record.options.get("jobmanager"),
    )


def _extract(archive: zipfile.ZipFile, dest: Path) -> None:
    """Unpack the kept code, refusing any name that would land outside ``dest``."""
    root = dest.resolve()
    for name in archive.namelist():
        target = (dest / name).resolve()
        if not target.is_relative_to(root):
            raise JobError(f"The kept program holds the unsafe path {name!r}; not unpacked.")
    archive.extractall(dest)


def _rollback_config(record: programs.ProgramRecord, config: Any) -> Any:
    """The previous program's configuration, with this command's secrets (the record never
    holds any)."""
    from flinkish_cli.config import Configuration

    everything = config.to_flat(include_secrets=True)
    public = config.to_flat(include_secrets=False)
    secrets = {key: value for key, value in everything.items() if key not in public}
    return Configuration.from_flat({**record.conf, **secrets})


def _last_commit(config: Any, checkpoint: str) -> int | None:
    """The last batch in a query checkpoint's commit log (None: none, or unreadable)."""
    from flinkish_cli.savepoints.layout import numbered
    from flinkish_cli.storage import join, open_for_config

    try:
        storage = open_for_config(checkpoint, config)
        names = [info.name for info in storage.list(join(checkpoint.rstrip("/"), "commits"))]
    except (FlinkishError, OSError):
        return None
    batches = numbered(names)
    return batches[-1] if batches else None


def _committed_beyond(config: Any, registry: Any, job_id: str, baseline: dict[str, int]) -> str:
    """The new job's queries that committed a batch beyond the state it started from
    (``query batch N`` each), read from their commit logs: output a rollback cannot undo."""
    status = registry.find(job_id)
    if status is None:
        return ""
    beyond = []
    for name, query in sorted(status.queries.items()):
        last = _last_commit(config, query.checkpoint)
        if last is not None and last > baseline.get(name, -1):
            beyond.append(f"query {name} batch {last}")
    return ", ".join(beyond)


def _link(registry: Any, old: str, new: str) -> None:
    """Record on the ended job which job replaced it (the new one names it at submission)."""
    status = registry.find(old)
    if status is not None and status.effective_state().is_terminal:
        status.upgraded_to = new
        registry.write(status)


__all__ = [
    "Result",
    "UpgradeMode",
    "UpgradeOutcome",
    "UpgradePresenter",
    "UpgradeRequest",
    "Verdict",
    "judge",
]
