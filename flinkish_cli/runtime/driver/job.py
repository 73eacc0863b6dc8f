"""The life of a job inside its driver: its state machine, from start to end.

:class:`JobRuntime` decides what state the job is in and how it ends. It is built from one
settings value and the parts that do the work (:mod:`.parts`: the real ones from
:func:`~.parts.build_parts`, doubles in a test), each in a module of its own (``runtime.``
below is :mod:`flinkish_cli.runtime`):

- ``runtime.status_keeper.StatusKeeper``: the job's status, its lock and the heartbeat
  thread that writes it (``heartbeat.interval``, and after each completed micro-batch);
- ``runtime.queries.queries.JobQueries``: the queries, as the hooks start them and Spark's
  listener reports them;
- :class:`~.control_server.ControlServer`: the control requests any shell writes (cancel,
  stop, savepoint, checkpoint), read by a watcher thread that also applies the checkpoint
  rules, so that nothing it waits for can delay a heartbeat;
- ``runtime.queries.snapshots.Snapshots``: savepoints and checkpoints (and
  ``runtime.queries.periodic.PeriodicSavepoints``, on a thread of its own when configured);
- :class:`~.attempts.Attempts`: the program's attempts and what their failures were;
- ``runtime.queries.footprints.FootprintWatch``: what each query's checkpoint takes on
  storage, on a thread of its own (``flinkish.checkpoint.size.interval``);
- :class:`~.process_metrics.ProcessMetricsWatch`: the JVMs the job runs on and their task
  slots, for ``/metrics``, on a thread of its own (``flinkish.metrics.jvm.interval``);
- ``runtime.explain.graphs.GraphRecorder``: each query's graph, recorded by the watcher
  thread when the query starts a new run.

The user's script runs on the main thread (:meth:`.attempts.Attempts.run`); the driver
(:mod:`.driver`) decides about restarts. End states, as Flink's:

- FINISHED: every query ended by itself (BATCH mode, or the script stopped them), or the
  job was stopped with a savepoint (``flinkish stop``).
- CANCELED: cancelled (``flinkish cancel``, Ctrl-C or SIGTERM of an attached run).
- FAILED: the script raised, or a query terminated with an exception.

One more way a driver ends, that is no end of the job: an in-place rescale (a control
request's or the autoscaler's, ``runtime.scaling.autoscaling``), whose methods
:class:`JobRuntime` takes from ``runtime.scaling.in_place.InPlaceRescales``: the queries
stop between micro-batches with a savepoint, the rescale goes to the supervisor
(:mod:`flinkish_cli.registry.rescale_marker`) and the driver exits RESTARTING with
``runtime.restart.EXIT_RESCALE``; the supervisor starts the next driver at the new
parallelism under the same JobID.

Two places end the process at once (``os._exit``): the heartbeat when Spark's JVM is gone
(``runtime.restart.EXIT_JVM_LOST``, for the supervisor to start a new driver), and a
cancelled job whose script does not return within :data:`CANCEL_GRACE` (a wait it begins
after the queries stopped ends it at once: ``runtime.queries.hooks.ProgramEnded``; a script
that never waits again gets the grace; one that had not reached its first wait, no grace).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.control import ControlChannel, poll_interval
from flinkish_cli.registry.history import SavepointHistory, Trigger
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.runtime.driver.attempts import CheckpointsFailed, NoCheckpointProgress
from flinkish_cli.runtime.driver.control_server import ControlServer
from flinkish_cli.runtime.driver.parts import JobParts, RuntimeSettings
from flinkish_cli.runtime.driver.process_metrics import ProcessMetricsWatch
from flinkish_cli.runtime.queries import hooks
from flinkish_cli.runtime.queries.checkpoint_rules import (
    WATCH_SECONDS,
    delete_owned_checkpoints,
)
from flinkish_cli.runtime.queries.footprints import FootprintWatch
from flinkish_cli.runtime.queries.periodic import PeriodicSavepoints
from flinkish_cli.runtime.queries.stopping import stop_between_batches
from flinkish_cli.runtime.restart import EXIT_JVM_LOST
from flinkish_cli.runtime.scaling.autoscaling import Autoscaler
from flinkish_cli.runtime.scaling.in_place import InPlaceRescales
from flinkish_cli.runtime.scaling.rescaling import RescaleWatch
from flinkish_cli.spark.failures import short_cause

log = logging.getLogger("flinkish.runtime")

#: How long a cancelled job's script gets to return before the driver exits regardless (once
#: it has reached its first wait: before, it ends at once).
CANCEL_GRACE = 15.0


class JobRuntime(InPlaceRescales):
    """One job, inside its driver: its plan, its :class:`~.parts.RuntimeSettings` and its
    collaborators (:class:`~.parts.JobParts`, the real ones from
    :func:`~.parts.build_parts`)."""

    def __init__(self, plan: JobPlan, settings: RuntimeSettings, parts: JobParts) -> None:
        autoscaler = settings.autoscaler
        self.plan = plan
        self.footprint_interval = settings.footprint_interval
        self.jvm_interval = settings.jvm_interval
        self.policy = settings.policy
        self.history_size = settings.history_size
        self.rules = settings.rules
        self.flavour = parts.flavour
        self.registry = registry = parts.registry
        self.keeper = parts.keeper
        self.rule_watcher = parts.rule_watcher
        self.queries = parts.queries
        self.snapshots = parts.snapshots
        self.jvm = parts.jvm
        self.attempts = parts.attempts
        self.probe = parts.probe
        self.connect()
        self.control = ControlServer(ControlChannel(registry, plan.job_id), self)
        self._done = threading.Event()
        self._ending: JobState | None = None
        self._ending_cause: str | None = None
        self._threads: list[threading.Thread] = []
        self.autoscaler: Autoscaler | None = None
        if autoscaler is not None and autoscaler.enabled:
            self.autoscaler = Autoscaler(
                autoscaler,
                registry,
                plan.job_id,
                plan.parallelism,
                lambda: self.status,
                self.rescale_refusal,
                lambda record: self.control.submit(lambda: self._apply_rescale(record)),
            )
        self.rescale_watch = RescaleWatch(
            plan,
            registry,
            lambda: self.status,
            lambda: dict(self.queries.restorer.restored),
            self.abandon_rescale,
            self._rescale_ended,
            settings.readiness,
        )

    def connect(self) -> None:
        """Connect the parts that call back into the state machine: the checkpoint rules'
        watcher fails the attempt (too many failed checkpoints, no progress), and the
        attempts ask whether the job is ending."""
        self.rule_watcher.fail = self._fail_checkpoints
        self.rule_watcher.stalled = self._stalled
        self.attempts.ending = lambda: self.ending

    @property
    def status(self) -> JobStatus:
        return self.keeper.status

    @property
    def spark(self) -> Any:
        return self.queries.spark

    @property
    def has_run(self) -> bool:
        """The program reached its first wait, or a batch committed."""
        return self.queries.has_run

    @property
    def ending(self) -> bool:
        """A cancel or stop has been asked for."""
        return self._ending is not None

    # -- threads -------------------------------------------------------------------------
    def begin(self) -> None:
        """Write the status, start the heartbeat thread and the watcher thread.

        Two threads, so that nothing can delay a heartbeat: the heartbeat thread only writes
        the status; the watcher, which calls into the JVM and reads control requests, may
        wait on Spark without making the job look dead.
        """
        self.keeper.flush()
        threads = [(self._beat, "flinkish-heartbeat"), (self._watch, "flinkish-watch")]
        periodic = self._periodic_savepoints()
        if periodic is not None:
            threads.append((lambda: periodic.run(self._done), "flinkish-periodic-savepoints"))
        scaler = self.autoscaler
        if scaler is not None:
            threads.append((lambda: scaler.run(self._done), "flinkish-autoscaler"))
        if self.footprint_interval > 0:
            watch = FootprintWatch(
                self.keeper,
                self.queries.footprint_targets,
                self.footprint_interval,
                self.plan.job_id,
            )
            threads.append((lambda: watch.run(self._done), "flinkish-checkpoint-size"))
        if self.jvm_interval > 0:
            jvms = ProcessMetricsWatch(
                self.registry, self.plan.job_id, self.probe, self.jvm_interval
            )
            threads.append((lambda: jvms.run(self._done), "flinkish-jvm-metrics"))
        for target, name in threads:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _periodic_savepoints(self) -> PeriodicSavepoints | None:
        if self.policy is None or self.policy.schedule is None:
            return None
        return PeriodicSavepoints(
            self.policy,
            self.snapshots,
            self.control.submit,
            lambda: self._ending is None and self.status.state is JobState.RUNNING,
            SavepointHistory(self.registry),
            self.plan.job_id,
            self.status.start_time,
        )

    def _beat(self) -> None:
        self.keeper.beat(self._done, self._exit_if_spark_lost)

    def _exit_if_spark_lost(self) -> None:
        if self.spark_lost():
            log.error(
                "Spark's JVM (pid %s) is gone; the driver exits so that it can be "
                "restarted under the job's restart strategy.",
                self.jvm.parent,
            )
            logging.shutdown()
            os._exit(EXIT_JVM_LOST)

    def _watch(self) -> None:
        """Control requests at the storage's poll interval; the running batches, the graphs
        and a rescale under way every :data:`WATCH_SECONDS`."""
        watched = 0.0
        while not self._done.wait(poll_interval(self.registry.storage)):
            try:
                self.control.poll()
            except Exception as error:
                log.warning("Could not read control requests: %s", error)
            if time.monotonic() - watched < WATCH_SECONDS:
                continue
            watched = time.monotonic()
            try:
                self.rule_watcher.watch(self.queries.handles, self.queries.last_batch)
            except Exception as error:
                log.warning("Could not watch the running batches: %s", error)
            self.queries.graphs.record_pending(dict(self.queries.handles))
            try:
                self.rescale_watch.watch()
            except Exception as error:
                log.warning("Could not watch the rescale under way: %s", error)

    def spark_lost(self, confirm: bool = False) -> bool:
        """Spark's JVM is gone (see :class:`~.jvm_watch.JvmWatch`)."""
        return self.jvm.lost(confirm)

    # -- what control requests ask (ControlledJob) ---------------------------------------
    @property
    def checkpoint_dir(self) -> str:
        return self.plan.job_dir

    def describe_ending(self) -> str:
        return f"Job {self.plan.job_id} is already ending ({self.status.state.value})."

    def _require_live(self, what: str) -> None:
        if self._ending is not None or self.status.state is not JobState.RUNNING:
            raise JobError(
                f"Cannot {what} job {self.plan.job_id}: it is {self.status.state.value}."
            )

    def trigger_savepoint(self, target_dir: str, explicit_target: bool = False) -> str:
        """A savepoint of the running job; its path."""
        self._require_live("take a savepoint of")
        return self.snapshots.take_savepoint(target_dir, Trigger.MANUAL, explicit_target)

    def wait_for_checkpoint(self, timeout: float) -> dict[str, int]:
        """Each query's batch once every active query has committed a newer one."""
        self._require_live("checkpoint")
        return self.snapshots.wait_for_checkpoint(
            timeout, lambda: self._ending is not None or self._done.is_set()
        )

    def stop_with_savepoint(
        self,
        target_dir: str,
        drain: bool,
        end_state: JobState = JobState.FINISHED,
        explicit_target: bool = False,
        trigger: Trigger = Trigger.STOP,
    ) -> str:
        """Stop every query between batches (after all available input with ``drain``),
        take the savepoint (recorded as ``trigger``: STOP, or UPGRADE), and let the job end
        ``end_state`` (FINISHED for ``stop``, CANCELED for Flink's deprecated
        ``cancel --withSavepoint``)."""
        self._require_live("stop")
        with self.keeper.lock:
            if self._ending is not None:
                raise JobError(f"Job {self.plan.job_id} is already ending.")
            self._ending, self._ending_cause = end_state, None
            if end_state is JobState.CANCELED:
                self._ending_cause = "Canceled with a savepoint."
        if drain:
            for name, query in list(self.queries.handles.items()):
                log.info("Draining query '%s' before the savepoint.", name)
                hooks.process_all_available(self.flavour, query)
        self.queries.stopping()  # the program's next wait ends it
        for query in list(self.queries.handles.values()):
            stop_between_batches(query)
        try:
            return self.snapshots.take_savepoint(target_dir, trigger, explicit_target)
        except BaseException as error:
            if trigger is not Trigger.STOP:  # an upgrade's, a rescale's: their callers decide
                with self.keeper.lock:
                    self._ending = JobState.FAILED
                    self._ending_cause = (
                        f"Stop with savepoint failed after the queries stopped: {error}. "
                        f"Resume from the retained checkpoint {self.plan.job_dir}."
                    )
                raise
            # As Flink's (FLINK-21030): a stop whose savepoint failed does not end the job. The
            # queries have stopped, so the driver ends for a restart and the supervisor starts
            # the next one at once, from the job's latest checkpoint; the stop reports the
            # failure (a rescale's savepoint that fails ends the same way: see rescale).
            with self.keeper.lock:
                self._ending = JobState.RESTARTING
                self._ending_cause = (
                    f"The savepoint of a stop failed ({error}): the job runs on from its "
                    "latest checkpoint."
                )
            log.error("The savepoint of a stop failed (%s): restarting the job as it was.", error)
            if not isinstance(error, Exception):
                raise
            detail = str(getattr(error, "message", None) or error).splitlines()[0].rstrip(".")
            raise JobError(
                f"its savepoint failed: {detail}. The job runs on from its "
                "latest checkpoint (its driver restarts)",
                "Fix the savepoint target, then stop it again.",
            ) from error

    def request_end(self, state: JobState, cause: str, graceful: bool) -> bool:
        """Ask the job to end in ``state``; its queries stop in the background."""
        with self.keeper.lock:
            if self._ending is not None or self.status.state.is_terminal:
                return False
            self._ending = state
            self._ending_cause = cause
        self.keeper.set_state(JobState.CANCELLING)
        threading.Thread(
            target=self._stop_queries, args=(graceful,), name="flinkish-stop", daemon=True
        ).start()
        return True

    def _fail_checkpoints(self, cause: str) -> None:
        """Too many failed checkpoints: the attempt fails, and as in Flink its restart
        strategy decides what comes next."""
        self._fail_attempt(CheckpointsFailed(cause))

    def _stalled(self, cause: str) -> None:
        """The health check found no progress: the attempt fails; its restart strategy
        decides (a restart may well get it going)."""
        self._fail_attempt(NoCheckpointProgress(cause))

    def _fail_attempt(self, failure: BaseException) -> None:
        if self.attempts.fail(failure):
            threading.Thread(target=self._stop_queries, args=(False,), daemon=True).start()

    def _stop_queries(self, graceful: bool) -> None:
        self.queries.stop_all(graceful)
        if self._ending is not None:
            # A program that has not reached its first wait has not made its job yet (a
            # Flink program cancelled before execute()): nothing of it to finish, it ends now.
            grace = CANCEL_GRACE if self.queries.has_run else 0.0
            threading.Timer(grace, self._force_end).start()

    def _force_end(self) -> None:
        """The script did not return after its queries stopped: end the driver regardless."""
        if self.status.state.is_terminal:
            return
        if self.queries.has_run:
            log.warning("The job's program did not return after its queries stopped; exiting.")
        else:
            log.warning("The job ended before its program's first wait: exiting.")
        self.end(None)
        os._exit(0 if self._ending is not JobState.FAILED else 1)

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the job gracefully."""

        def handler(signum: int, _frame: Any) -> None:
            name = signal.Signals(signum).name
            self.request_end(JobState.CANCELED, f"Stopped by {name}.", graceful=True)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    # -- end -----------------------------------------------------------------------------
    def end(
        self, error: BaseException | None, program: str | None = None, note: str | None = None
    ) -> JobState:
        """Stop what still runs and record the final state (``note`` adds to a failure)."""
        self._done.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        self.control.shutdown()  # a savepoint being taken completes first
        if error is not None and self._ending is None:
            state, cause = JobState.FAILED, short_cause(error, program)
            self.attempts.remember_end(error, cause, self.history_size)
            if note:
                cause = f"{cause}\n({note})"
        elif self._ending is not None:
            state, cause = self._ending, self._ending_cause
        else:
            state, cause = JobState.FINISHED, None
        for name, query in list(self.queries.handles.items()):
            try:
                if query.isActive:
                    query.stop()
            except Exception as stop_error:
                log.warning("Stopping query '%s': %s", name, stop_error)
        self.queries.reconcile()
        if not self.spark_lost():
            self.queries.graphs.record_pending(dict(self.queries.handles))  # a short job's
        with self.keeper.lock:
            for entry in self.status.queries.values():
                entry.active = False
        if self.rules.deletes_on(state):
            delete_owned_checkpoints(
                self.registry.storage, self.plan, self.status, self.rules, state
            )
        # The line before the state: a reader that sees the state recorded (`logs -f` stops
        # there) finds the job's last line in its log.
        if state is JobState.RESTARTING:
            log.info("Job %s: its driver ends for a restart. %s", self.plan.job_id, cause or "")
        else:
            log.info(
                "Job %s ended %s.%s", self.plan.job_id, state.value, f" {cause}" if cause else ""
            )
        failure = state not in (JobState.FINISHED, JobState.RESTARTING)
        self.keeper.set_state(state, cause if failure else None)
        return state  # the run directory is the supervisor's to remove
