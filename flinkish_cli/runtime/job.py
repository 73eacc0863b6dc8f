"""The life of a job inside its driver: start, heartbeat, control requests, end.

:class:`JobRuntime` is the one object that knows the job's state. The user's script runs
on the main thread; a daemon thread beats the heartbeat (``heartbeat.interval``), writes
the status after each completed micro-batch, and carries out control requests (cancel,
stop) that any shell writes to the registry.

End states, as Flink's:

- FINISHED: every query ended by itself (BATCH mode, or the script stopped them), or the
  job was stopped with a savepoint (``flinkish stop``).
- CANCELED: cancelled (``flinkish cancel``, Ctrl-C or SIGTERM of an attached run).
- FAILED: the script raised, or a query terminated with an exception.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.registry.control import (
    POLL_SECONDS,
    ControlChannel,
    ControlRequest,
    ControlResponse,
    poll_interval,
)
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime import hooks
from flinkish_cli.runtime.checkpoint_rules import BatchWatcher, CheckpointRules
from flinkish_cli.runtime.failures import short_cause
from flinkish_cli.runtime.restoring import JobRestorer
from flinkish_cli.submission.plan import JobPlan

log = logging.getLogger("flinkish.runtime")

#: How long a graceful stop waits for a running micro-batch before stopping it anyway.
GRACEFUL_STOP_TIMEOUT = 120.0
#: How long a cancelled job's script gets to return before the driver exits regardless.
CANCEL_GRACE = 15.0
#: How long ``flinkish checkpoint`` waits for the next committed batch of every query.
CHECKPOINT_WAIT = 600.0


class JobRuntime:
    """One job, inside its driver."""

    dry_run = False

    def __init__(
        self,
        plan: JobPlan,
        registry: JobRegistry,
        settings: Any = None,
        rules: CheckpointRules | None = None,
    ) -> None:
        self.plan = plan
        self.registry = registry
        self.settings = settings
        self.rules = rules or CheckpointRules()
        self.spark: Any = None
        self.control = ControlChannel(registry, plan.job_id)
        self.status = registry.find(plan.job_id) or JobStatus(job_id=plan.job_id, name=plan.name)
        self.status.host = socket.gethostname()
        self.status.pid = os.getpid()
        self.status.log_path = plan.log_path
        self.status.heartbeat_timeout = plan.heartbeat_timeout_s
        self.status.master = plan.master
        self.status.mode = plan.runtime_mode
        self.status.parallelism = plan.parallelism
        self.queries: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._dirty = threading.Event()
        self._done = threading.Event()
        self._ending: JobState | None = None
        self._ending_cause: str | None = None
        self._thread: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self._workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flinkish-control")
        self._inflight: set[str] = set()
        self.restorer = JobRestorer(plan, registry.storage, settings)
        self.watcher = BatchWatcher(self.rules, self._fail_checkpoints)
        self._failure: BaseException | None = None  # a checkpoint rule failed the job
        self.has_run = False  # the job reached RUNNING at least once

    # -- status --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the status now (with a fresh heartbeat); writes are ordered, and the
        status lock is held only to take the snapshot, never during the write."""
        with self._write_lock:
            with self._lock:
                self.status.heartbeat = time.time()
                self._dirty.clear()
                snapshot = JobStatus.from_json(self.status.to_json())
            try:
                self.registry.write(snapshot)
            except Exception as error:  # never let the registry take the job down
                log.warning("Could not write the job's status: %s", error)

    def _set_state(self, state: JobState, cause: str | None = None) -> None:
        with self._lock:
            self.status.state = state
            if cause is not None:
                self.status.failure_cause = cause
            if state.is_terminal:
                self.status.end_time = time.time()
        self.flush()

    def begin(self) -> None:
        """Record the driver's host and pid, start the heartbeat and the watcher.

        Two threads, so that nothing can delay a heartbeat: the heartbeat thread only writes
        the status; the watcher, which calls into the JVM and reads control requests, may
        wait on Spark without making the job look dead.
        """
        self.flush()
        self._thread = threading.Thread(target=self._beat, name="flinkish-heartbeat", daemon=True)
        self._thread.start()
        self._watcher = threading.Thread(target=self._watch, name="flinkish-watch", daemon=True)
        self._watcher.start()

    def _beat(self) -> None:
        next_beat = 0.0
        while not self._done.wait(POLL_SECONDS / 2):
            if self._dirty.is_set() or time.time() >= next_beat:
                late = time.time() - self.status.heartbeat - self.plan.heartbeat_interval_s
                if late > self.plan.heartbeat_interval_s:
                    log.warning("The heartbeat is %.1f s late (is the driver starved?).", late)
                self.flush()
                next_beat = time.time() + self.plan.heartbeat_interval_s

    def _watch(self) -> None:
        while not self._done.wait(poll_interval(self.registry.storage)):
            try:
                self._handle_control()
            except Exception as error:
                log.warning("Could not read control requests: %s", error)
            try:
                self.watcher.watch(self.queries, self._last_batch)
            except Exception as error:
                log.warning("Could not watch the running batches: %s", error)

    # -- QueryStarter (hooks) ------------------------------------------------------------
    def configure(self, writer: Any, name: str) -> None:
        from flinkish_cli.storage import join

        checkpoint = join(self.plan.job_dir, name)
        self.restorer.restore_query(name, checkpoint, self.spark)
        hooks.set_writer_option(writer, "checkpointLocation", checkpoint)
        if self.plan.runtime_mode == "BATCH":
            hooks.set_writer_trigger(writer, availableNow=True)
        elif not getattr(writer, "_flinkish_trigger", None):
            interval_ms = max(self.plan.trigger_interval_ms or 0, self.rules.min_pause_ms)
            if interval_ms:
                hooks.set_writer_trigger(writer, processingTime=f"{interval_ms} milliseconds")
        with self._lock:
            existing = self.status.queries.get(name)
            if existing is None:
                self.status.queries[name] = QueryStatus(name=name, checkpoint=checkpoint)

    def started(self, name: str, query: Any) -> None:
        with self._lock:
            self.queries[name] = query
            entry = self.status.queries[name]
            entry.query_id = str(query.id)
            entry.run_id = str(query.runId)
            entry.active = True
        log.info("Query '%s' started (id %s).", name, query.id)

    def all_started(self) -> None:
        self.has_run = True
        with self._lock:
            if self.status.state in (JobState.CREATED, JobState.RESTARTING):
                self.status.state = JobState.RUNNING
        self.flush()

    # -- listener ------------------------------------------------------------------------
    def on_started(self, name: str | None, query_id: str, run_id: str) -> None:
        return None

    def on_progress(self, progress: dict[str, Any]) -> None:
        name = progress.get("name")
        with self._lock:
            entry = self.status.queries.get(name or "")
            if entry is None:
                return
            done = Progress.from_spark(progress)
            entry.record(done)
        self._dirty.set()
        self.watcher.completed(str(name), done)
        with self._lock:
            batches = {n: q.last_committed_batch for n, q in self.status.queries.items()}
        self.restorer.claim_if_done(batches)

    def reconcile(self) -> None:
        """Record batches the (asynchronous) listener has not reported yet."""
        for name, query in list(self.queries.items()):
            try:
                recent = query.recentProgress
            except Exception:  # the JVM may be going away
                continue
            with self._lock:
                entry = self.status.queries[name]
                last = entry.last_committed_batch if entry.last_committed_batch is not None else -1
                for progress in recent:
                    document = progress if isinstance(progress, dict) else json.loads(progress.json)
                    if int(document.get("batchId", -1)) > last:
                        entry.record(Progress.from_spark(document))
                        last = entry.last_committed_batch or last

    def on_terminated(self, query_id: str, exception: str | None) -> None:
        with self._lock:
            for entry in self.status.queries.values():
                if entry.query_id == query_id:
                    entry.active = False
                    if exception:
                        entry.exception = exception.splitlines()[0][:500]
        self._dirty.set()

    # -- control -------------------------------------------------------------------------
    def _handle_control(self) -> None:
        for request in self.control.pending():
            if request.request_id in self._inflight:
                continue
            self._inflight.add(request.request_id)
            if request.action in ("cancel", "stop") and not request.args.get("savepoint"):
                self._answer(request)  # at once, even while a savepoint is being taken
            else:
                self._workers.submit(self._answer, request)

    def _answer(self, request: ControlRequest) -> None:
        try:
            response = self._carry_out(request)
        except FlinkishError as error:
            response = ControlResponse(request.request_id, ok=False, error=str(error))
        except Exception as error:
            log.exception("Control request %s failed.", request.action)
            response = ControlResponse(
                request.request_id, ok=False, error=f"{type(error).__name__}: {error}"
            )
        self.control.respond(response)

    def _carry_out(self, request: ControlRequest) -> ControlResponse:
        action, args = request.action, request.args
        if action == "cancel":
            accepted = self.request_end(JobState.CANCELED, "Canceled by user.", graceful=False)
        elif action == "stop" and not args.get("savepoint"):
            reason = args.get("reason") or "Stopped by user."
            accepted = self.request_end(JobState.CANCELED, reason, graceful=True)
        elif action == "stop":
            path = self.stop_with_savepoint(str(args["target"]), bool(args.get("drain")))
            return ControlResponse(request.request_id, ok=True, result={"path": path})
        elif action == "savepoint":
            self._require_live("take a savepoint of")
            path = self.take_savepoint(str(args["target"]))
            return ControlResponse(request.request_id, ok=True, result={"path": path})
        elif action == "checkpoint":
            batches = self.wait_for_checkpoint(float(args.get("timeout") or CHECKPOINT_WAIT))
            result = {"path": self.plan.job_dir, "batches": batches}
            return ControlResponse(request.request_id, ok=True, result=result)
        else:
            return ControlResponse(request.request_id, ok=False, error=f"Unknown '{action}'.")
        if not accepted:
            return ControlResponse(
                request.request_id,
                ok=False,
                error=f"Job {self.plan.job_id} is already ending ({self.status.state.value}).",
            )
        return ControlResponse(request.request_id, ok=True)

    def _require_live(self, what: str) -> None:
        if self._ending is not None or self.status.state is not JobState.RUNNING:
            raise JobError(
                f"Cannot {what} job {self.plan.job_id}: it is {self.status.state.value}."
            )

    # -- savepoints and checkpoints ------------------------------------------------------
    def _query_dirs(self) -> dict[str, str]:
        from flinkish_cli.storage import join

        return {name: join(self.plan.job_dir, name) for name in self.queries}

    def take_savepoint(self, target_dir: str) -> str:
        """A savepoint of every query at its last committed batch (the job may be running)."""
        import pyspark

        from flinkish_cli.savepoints.create import take_savepoint
        from flinkish_cli.storage import open_storage

        path = take_savepoint(
            self.registry.storage,
            self._query_dirs(),
            open_storage(target_dir, self.settings),
            target_dir,
            self.plan.job_id,
            self.plan.name,
            pyspark.__version__,
        )
        log.info("Savepoint completed: %s", path)
        return path

    def stop_with_savepoint(self, target_dir: str, drain: bool) -> str:
        """Stop every query between batches (after all available input with ``drain``),
        take the savepoint, and let the job end FINISHED."""
        self._require_live("stop")
        with self._lock:
            self._ending, self._ending_cause = JobState.FINISHED, None
        if drain:
            for name, query in list(self.queries.items()):
                log.info("Draining query '%s' before the savepoint.", name)
                query.processAllAvailable()
        for query in list(self.queries.values()):
            stop_between_batches(query)
        try:
            return self.take_savepoint(target_dir)
        except BaseException as error:
            with self._lock:
                self._ending = JobState.FAILED
                self._ending_cause = (
                    f"Stop with savepoint failed after the queries stopped: {error}. "
                    f"Resume from the retained checkpoint {self.plan.job_dir}."
                )
            raise

    def wait_for_checkpoint(self, timeout: float) -> dict[str, int]:
        """Wait until every active query has committed a batch newer than now.

        Spark runs no batch while there is no new input: a query that is idle with all its
        input committed is already at a complete checkpoint, its last committed batch.
        """
        self._require_live("checkpoint")
        with self._lock:
            start = {
                name: self.status.queries[name].last_committed_batch
                for name, query in self.queries.items()
                if query.isActive
            }
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                now = {n: self.status.queries[n].last_committed_batch for n in start}
            if all(
                b is not None and (start[n] is None or b > start[n] or self._idle(n))
                for n, b in now.items()
            ):
                return {n: int(b) for n, b in now.items() if b is not None}
            if self._ending is not None or self._done.is_set():
                raise JobError(f"Job {self.plan.job_id} is ending; no further checkpoint.")
            time.sleep(0.1)
        raise JobError(f"No checkpoint completed within {timeout:.0f} s.")

    def _idle(self, name: str) -> bool:
        """The query waits for input and has committed everything it has read."""
        try:
            status = self.queries[name].status
        except Exception:
            return False
        return not status.get("isDataAvailable") and not status.get("isTriggerActive")

    # -- restore and checkpoint rules ----------------------------------------------------
    def before_start(self, names: list[str]) -> None:
        self.restorer.before_start(names)

    def _last_batch(self, name: str) -> int | None:
        with self._lock:
            entry = self.status.queries.get(name)
            return entry.last_committed_batch if entry else None

    def _fail_checkpoints(self, cause: str) -> None:
        """Too many failed checkpoints: the job fails (its restart strategy decides next)."""
        if self._failure is None:
            self._failure = JobError(cause)
            threading.Thread(target=self._stop_queries, args=(False,), daemon=True).start()

    def request_end(self, state: JobState, cause: str, graceful: bool) -> bool:
        """Ask the job to end in ``state``; its queries stop in the background."""
        with self._lock:
            if self._ending is not None or self.status.state.is_terminal:
                return False
            self._ending = state
            self._ending_cause = cause
        self._set_state(JobState.CANCELLING)
        threading.Thread(
            target=self._stop_queries, args=(graceful,), name="flinkish-stop", daemon=True
        ).start()
        return True

    def _stop_queries(self, graceful: bool) -> None:
        for name, query in list(self.queries.items()):
            try:
                if graceful:
                    stop_between_batches(query)
                else:
                    query.stop()
            except Exception as error:
                log.warning("Stopping query '%s': %s", name, error)
        if self._ending is not None:
            threading.Timer(CANCEL_GRACE, self._force_end).start()

    def _force_end(self) -> None:
        """The script did not return after its queries stopped: end the driver regardless."""
        if self.status.state.is_terminal:
            return
        log.warning("The job's program did not return after its queries stopped; exiting.")
        self.end(None)
        os._exit(0 if self._ending is not JobState.FAILED else 1)

    def _delete_checkpoints(self, state: JobState) -> None:
        """execution.checkpointing.externalized-checkpoint-retention: delete the queries'
        checkpoints (the job's status stays, for ``list -a``)."""
        from flinkish_cli.storage import join

        for name in list(self.status.queries):
            with contextlib.suppress(Exception):
                self.registry.storage.delete_tree(join(self.plan.job_dir, name))
        log.info(
            "Deleted the checkpoints of job %s (%s, retention %s).",
            self.plan.job_id,
            state.value,
            self.rules.retention,
        )

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the job gracefully."""

        def handler(signum: int, _frame: Any) -> None:
            name = signal.Signals(signum).name
            self.request_end(JobState.CANCELED, f"Stopped by {name}.", graceful=True)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    # -- attempts and restarts -----------------------------------------------------------
    def run_attempt(self) -> BaseException | None:
        """Run the job's program once, until its queries end; the failure, if any."""
        from flinkish_cli.runtime.program import run_program

        controller = hooks.QueryController(self)
        hooks.install(controller)
        self.queries = {}
        self._failure = None
        self.watcher.reset()
        try:
            try:
                run_program(self.plan.entry)
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    raise RuntimeError(
                        f"The job's program exited with status {exit_.code}."
                    ) from None
            controller.start_pending()
            if not self.queries:
                self.all_started()
            return self.wait_for_queries()
        except BaseException as error:  # the script's failure is the job's failure
            if self._failure is not None:
                return self._failure
            log.error("The job's program failed.", exc_info=error)
            return error

    @property
    def ending(self) -> bool:
        """A cancel or stop has been asked for."""
        return self._ending is not None

    def restart_after(self, error: BaseException, delay: float, program: str | None) -> bool:
        """Record RESTARTING, stop what still runs, wait ``delay``; False if cancelled."""
        cause = short_cause(error, program)
        log.warning("Job failed: %s. Restarting in %.1f s.", cause, delay)
        with self._lock:
            self.status.state = JobState.RESTARTING
            self.status.restarts += 1
            self.status.failure_cause = cause
        self.flush()
        for query in list(self.queries.values()):
            with contextlib.suppress(Exception):
                if query.isActive:
                    query.stop()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self._ending is not None:
                return False
            time.sleep(0.1)
        return self._ending is None

    # -- end -----------------------------------------------------------------------------
    def wait_for_queries(self) -> BaseException | None:
        """Wait until every query has ended; the first query failure, if any."""
        while True:
            if self._failure is not None:
                return self._failure
            active = False
            for query in list(self.queries.values()):
                if query.isActive:
                    active = True
                    continue
                error = query.exception()
                if error is not None and self._ending is None:
                    return error
            if not active:
                return None
            time.sleep(0.2)

    def end(
        self, error: BaseException | None, program: str | None = None, note: str | None = None
    ) -> JobState:
        """Stop what still runs and record the final state (``note`` adds to a failure)."""
        self._done.set()
        for thread in (self._thread, self._watcher):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)
        self._workers.shutdown(wait=True)  # a savepoint being taken completes first
        if error is not None and self._ending is None:
            state, cause = JobState.FAILED, short_cause(error, program)
            if note:
                cause = f"{cause}\n({note})"
        elif self._ending is not None:
            state, cause = self._ending, self._ending_cause
        else:
            state, cause = JobState.FINISHED, None
        for name, query in list(self.queries.items()):
            try:
                if query.isActive:
                    query.stop()
            except Exception as stop_error:
                log.warning("Stopping query '%s': %s", name, stop_error)
        self.reconcile()
        with self._lock:
            for entry in self.status.queries.values():
                entry.active = False
        if self.rules.deletes_on(state):
            self._delete_checkpoints(state)
        self._set_state(state, cause if state is not JobState.FINISHED else None)
        log.info("Job %s ended %s.%s", self.plan.job_id, state.value, f" {cause}" if cause else "")
        if self.plan.run_dir and os.path.isdir(self.plan.run_dir):
            shutil.rmtree(self.plan.run_dir, ignore_errors=True)
        return state


def stop_between_batches(query: Any, timeout: float = GRACEFUL_STOP_TIMEOUT) -> None:
    """Stop ``query`` while it waits for its next trigger, never in the middle of a batch.

    Spark has no "stop after this batch"; flinkish watches the query's status and stops it
    as soon as no trigger is active. Should a trigger begin in the instant between the check
    and the stop, Spark aborts that batch and it is replayed from the offset log on resume,
    so no data is lost or duplicated. After ``timeout`` the query is stopped regardless.
    """
    deadline = time.monotonic() + timeout
    while query.isActive and time.monotonic() < deadline:
        if not query.status.get("isTriggerActive"):
            break
        time.sleep(0.02)
    query.stop()
