"""``flinkish upgrade``: replace a job's program, keep its state, roll back when the new
program does not become stable (the Flink Kubernetes Operator's upgrade, without Kubernetes).

1. **Check** everything that can be checked before the old job is touched: the JobID names a
   job the mode can upgrade, the new program exists and compiles, the configuration is valid
   and its deployment reachable (everything ``run`` checks), the savepoint directory is
   writable, the new program fits the old job's state (the state partitions ``-p`` asks
   for, and the state check of :mod:`~flinkish_cli.submission.restore_check`: the program
   planned without running a batch, Spark's own rules on its stateful operators, ``-n``
   for state it no longer has), and the old job's kept program
   (:mod:`~flinkish_cli.registry.program`) can be brought back for a rollback. A refusal
   leaves the old job as it was. Where the state check cannot tell without running, it
   says so, and steps 4 and 5 stand behind it.
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
for Spark's file sink, whose own log keeps a replayed batch from being written twice. Under
the exactly-once Kafka sink a batch may be in Kafka before Spark's commit log holds it, so a
batch the new job planned beyond the state it started from also means no rollback
(:func:`~.stability.planned_beyond`).

**Where it runs.** In the process that asks, acting on the registry in storage; or, with
``-m host:port`` naming a ``flinkish web`` that takes programs (``web.submit.enable``), in
that server: the CLI uploads the new program and sends the request
(:meth:`~flinkish_cli.client.rest.RestJobClient.upgrade`), the server runs this same class
with the request's configuration (:meth:`~flinkish_cli.client.uploads.Uploads.upgrade`),
its programs started as submitted programs are (:class:`Launching`: their own environment,
the warm runner), and what the user sees comes back as it happens. Which of the two,
:func:`flinkish_cli.client.connect.upgrade` decides.

The modules around it: :mod:`.outcome` (the request, the presenter, the outcome and
its final line), :mod:`.checks` (step 1's checks of the old job),
:mod:`.rollback` (the previous program, brought back) and :mod:`.stability`
(step 4's verdict, and the commit logs the rollback guarantee reads).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.base import savepoint_target
from flinkish_cli.client.jobs import JobClient
from flinkish_cli.client.upgrade.checks import check_state, check_writable, fallback_allowed
from flinkish_cli.client.upgrade.outcome import (
    Result,
    UpgradeMode,
    UpgradeOutcome,
    UpgradePresenter,
    UpgradeRequest,
)
from flinkish_cli.client.upgrade.rollback import Rollback, bring_back
from flinkish_cli.client.upgrade.stability import (
    committed_beyond,
    judge,
    last_commits,
    last_planned,
    planned_beyond,
)
from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.registry import status_writer
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.spark.failures import headline

if TYPE_CHECKING:
    from flinkish_cli.submission.launcher import Launched
    from flinkish_cli.submission.submit import RunRequest
    from flinkish_cli.submission.warm_runner import WarmRunner

#: How often the upgrade looks at the new job while it waits for stability.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Launching:
    """How the upgrade starts programs on this machine. The default: as ``run`` does, in
    this process's environment. ``flinkish web``'s: as a submitted program starts
    (:func:`~flinkish_cli.submission.upload.start_prepared`), in ``environment`` (none of
    the server's secrets; the state check's planning process too), in the spare of
    ``warm``, the new program shown as ``origin`` (its path on the user's machine, not the
    upload's copy)."""

    environment: dict[str, str] | None = None
    warm: WarmRunner | None = None
    origin: str | None = None

    def start(self, prepared: Any) -> Launched:
        from flinkish_cli.submission import submit, upload

        if self.environment is None:
            return submit.start(prepared)
        return upload.start_prepared(prepared, self.environment, self.warm)


class Upgrade:
    """One upgrade of one job, step by step (see the module's docstring), acting on the jobs
    through ``client``: ``Upgrade(client, request, presenter).run()``."""

    def __init__(
        self,
        client: JobClient,
        request: UpgradeRequest,
        presenter: UpgradePresenter,
        launching: Launching | None = None,
    ) -> None:
        self.client = client
        self.config = client.config
        self.registry = client.registry
        self.request = request
        self.presenter = presenter
        self.launching = launching or Launching()
        self.mode = request.mode
        #: what the new program's restore leaves out (-n), as the state check found
        self.leave_out: dict[str, list[int]] = {}
        program = request.program
        self.outcome = UpgradeOutcome(
            Result.FAILED,
            parse_job_id(request.job_id),
            request.mode,
            program=self.launching.origin or str(program.script or program.module),
        )

    # -- 1. checks -------------------------------------------------------------------------
    def check(self) -> tuple[JobStatus, Rollback | None]:
        """Everything before the old job is touched; raises on any refusal."""
        from flinkish_cli.submission import submit

        old = self.registry.get(self.outcome.job_id)
        check_state(self.registry, self.config, old, self.mode)
        if self.mode is UpgradeMode.SAVEPOINT:
            target = savepoint_target(self.config, self.request.savepoint_dir)
            check_writable(self.config, target)
        prepared = submit.prepare(self.request.program, self.config)
        prepared.discard()
        for message in prepared.notices:
            self.presenter.notice(message)
        self.leave_out = self._check_against_state(old)
        rollback = (
            bring_back(self.registry, self.config, old.job_id) if self.request.rollback else None
        )
        return old, rollback

    def _check_against_state(self, old: JobStatus) -> dict[str, list[int]]:
        """The new program against the old job's state (the state its savepoint or last
        state will hold): the partitions a rescale must reach, then the state check
        (:mod:`~flinkish_cli.submission.restore_check`); what the restore leaves out (-n)."""
        if self.mode is UpgradeMode.STATELESS:
            return {}
        from flinkish_cli.submission import restore_check

        job = old.job_id
        running = old.effective_state() is JobState.RUNNING
        untouched = f"Job {job} {'still runs, untouched' if running else 'is left as it is'}."
        saved = restore_check.of_job(old, self.config)
        try:
            restore_check.refuse_rescale(saved, self.config)
        except FlinkishError as error:
            raise type(error)(
                f"Cannot upgrade job {job}: {error.message}", f"{error.hint or ''} {untouched}"
            ) from None
        verdict = restore_check.check_restore(
            self.request.program,
            self.config,
            saved,
            self.presenter.notice,
            f"Cannot upgrade job {job}: the new program",
            untouched,
            environment=self.launching.environment,
        )
        return verdict.leave_out

    # -- 2.-5. -----------------------------------------------------------------------------
    def run(self) -> UpgradeOutcome:
        """Carry out the upgrade (after :meth:`check`): its outcome."""
        old, rollback = self.check()
        outcome = self.outcome
        try:
            source = self._take_state(old)
            outcome.source, outcome.mode = source, self.mode
            baseline = self._baseline(old, source)
            planned = self._baseline(old, source, planned=True)
            new = self._start(self.request.program, self.config, source, old.job_id)
            outcome.new_job_id, outcome.new_job_dir = new.job_id, new.job_dir
            status_writer.link_upgrade(self.registry, old.job_id, new.job_id)
            reason = self._wait_stable(new)
            if reason is None:
                outcome.result = Result.STABLE
                self._discard_replaced(old.job_id)
                return outcome
            outcome.reason = reason
            committed = self._committed_beyond(new.job_id, baseline, planned)
            if committed:
                outcome.reason += (
                    f", after committing output ({committed}) that a rollback would have to undo"
                )
                outcome.result = Result.UNSTABLE
            elif rollback is None:
                outcome.result = Result.UNSTABLE
            else:
                outcome.previous_program = rollback.program
                self._roll_back(new.job_id, rollback, source)
                rollback = None if outcome.result is Result.ROLLED_BACK else rollback
            return outcome
        finally:
            if rollback is not None:  # not running anywhere: its local copy goes
                shutil.rmtree(rollback.directory, ignore_errors=True)

    def _discard_replaced(self, job_id: str) -> None:
        """Once the new job is stable, the replaced job's own checkpoints go: the new job
        started from its savepoint (or a copy of them) and keeps its own, as the operator's
        upgrade leaves only the new job's (a job that runs for months through many upgrades
        never keeps one copy per version). Its status, savepoint history and logs stay."""
        from flinkish_cli.runtime.queries.checkpoint_rules import discard_checkpoints

        status = self.registry.get(job_id)
        if status is not None and status.effective_state().is_terminal:
            gone = discard_checkpoints(self.registry.storage, self.registry.job_dir(job_id), status)
            if gone:
                self.presenter.notice(
                    f"Deleted the checkpoints of the replaced job {job_id} (queries "
                    f"{', '.join(sorted(gone))}): the new job keeps its own."
                )

    def _take_state(self, old: JobStatus) -> str | None:
        """End the old job the mode's way; where the new program starts from."""
        job = old.job_id
        if self.mode is UpgradeMode.SAVEPOINT:
            if old.effective_state() is JobState.RUNNING:
                try:
                    return self._stop_with_savepoint(job)
                except FlinkishError as error:
                    if not fallback_allowed(self.config):
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

    def _baseline(
        self, old: JobStatus, source: str | None, planned: bool = False
    ) -> dict[str, int]:
        """Each query's last committed batch in the state the new program starts from (its
        last planned one, with ``planned``)."""
        if source is None:
            return {}
        last = last_planned if planned else last_commits
        return last(self.config, self.registry.get(old.job_id))

    def _committed_beyond(
        self, job_id: str, baseline: dict[str, int], planned: dict[str, int]
    ) -> str:
        """What the new job committed beyond ``baseline``: output a rollback cannot undo;
        under the exactly-once Kafka sink also the batches it planned beyond ``planned``."""
        from flinkish_cli.runtime.connectors.kafka_sink import EXACTLY_ONCE, GUARANTEE_KEY

        status = self.registry.find(job_id)
        if status is None:
            return ""
        committed = committed_beyond(self.config, status, baseline)
        if committed or self.config.get(GUARANTEE_KEY) != EXACTLY_ONCE:
            return committed
        return planned_beyond(self.config, status, planned)

    def _start(
        self,
        request: RunRequest,
        config: Any,
        source: str | None,
        replaces: str,
        rolled_back: bool = False,
        shown: str = "",
    ) -> _Started:
        """Start the new (or the previous) program from ``source``, as :attr:`launching`
        says."""
        from flinkish_cli.submission import submit
        from flinkish_cli.submission.run import restore_plan

        request = replace(
            request,
            detached=True,
            from_savepoint=source,
            upgraded_from=replaces,
            rolled_back=rolled_back,
            shutdown_on_attached_exit=False,
            # checked against the state before the old job was touched (step 1); a rollback
            # restores what the previous program had
            leave_out={} if rolled_back else self.leave_out,
        )
        prepared = submit.prepare(request, config, restore_plan(request, config))
        # the program as the user deployed it, not our copy (a rollback's, an upload's)
        origin = shown if rolled_back else self.launching.origin
        if origin:
            prepared.program.origin = origin
        launched = self.launching.start(prepared)
        self.presenter.submitted(prepared.plan.job_id)
        return _Started(
            prepared.plan.job_id, prepared.plan.job_dir, str(prepared.log_path), launched
        )

    def _wait_stable(self, new: _Started) -> str | None:
        """None once the new job is stable; else why it is not."""
        timeout = self.config.get("flinkish.upgrade.readiness.timeout").total_seconds()
        deadline = time.monotonic() + timeout
        while True:
            status = self.registry.find(new.job_id)
            if status is not None:
                verdict = judge(status)
                if verdict.stable or verdict.failure:
                    return verdict.failure
            if new.exited():
                status = self.registry.find(new.job_id)
                last = judge(status) if status is not None else None
                if last is not None and (last.stable or last.failure):
                    return last.failure
                return f"ended before it ran (its driver exited; see its log {new.log_path})"
            if time.monotonic() >= deadline:
                waiting = judge(status).waiting if status is not None else "its driver to report"
                return f"was not stable within {_seconds(timeout)} (still waiting for {waiting})"
            time.sleep(POLL_SECONDS)

    def _roll_back(self, failed: str, rollback: Rollback, source: str | None) -> None:
        outcome = self.outcome
        note = f"Rolling back: cancelling job {failed} and resuming the previous program."
        self.presenter.notice(note)
        self._cancel_if_live(failed)
        from flinkish_cli.submission import launcher

        started = self._start(
            rollback.request, rollback.config, source, failed, True, rollback.program
        )
        outcome.rollback_job_id = started.job_id
        status_writer.link_upgrade(self.registry, failed, started.job_id)
        try:
            status = launcher.wait_until_running(self.registry, started.job_id, started.process)
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


# -- helpers --------------------------------------------------------------------------------
@dataclass
class _Started:
    """A job the upgrade started, with its supervisor's process."""

    job_id: str
    job_dir: str
    log_path: str
    process: Launched

    def exited(self) -> bool:
        return self.process.process.poll() is not None


def _seconds(value: float) -> str:
    return f"{value:.0f} s"


__all__ = ["POLL_SECONDS", "Launching", "Upgrade"]
