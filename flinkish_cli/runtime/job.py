"""The life of a job inside its driver: start, heartbeat, control requests, end.

:class:`JobRuntime` is the one object that knows the job's state. The user's script runs
on the main thread; a daemon thread beats the heartbeat (``heartbeat.interval``), writes
the status after each completed micro-batch, and carries out control requests (cancel,
stop) that any shell writes to the registry.

End states, as Flink's:

- FINISHED: every query ended by itself (BATCH mode, or the script stopped them), or the
  job was stopped with a savepoint.
- CANCELED: cancelled (``flinkish cancel``, Ctrl-C or SIGTERM of an attached run).
- FAILED: the script raised, or a query terminated with an exception.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import threading
import time
from typing import Any

from flinkish_cli.registry.control import (
    POLL_SECONDS,
    ControlChannel,
    ControlRequest,
    ControlResponse,
)
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime import hooks
from flinkish_cli.runtime.failures import short_cause
from flinkish_cli.submission.plan import JobPlan

log = logging.getLogger("flinkish.runtime")

#: How long a graceful stop waits for a running micro-batch before stopping it anyway.
GRACEFUL_STOP_TIMEOUT = 120.0
#: How long a cancelled job's script gets to return before the driver exits regardless.
CANCEL_GRACE = 15.0


class JobRuntime:
    """One job, inside its driver."""

    dry_run = False

    def __init__(self, plan: JobPlan, registry: JobRegistry) -> None:
        self.plan = plan
        self.registry = registry
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

    # -- status --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the status now (with a fresh heartbeat)."""
        with self._lock:
            self.status.heartbeat = time.time()
            self._dirty.clear()
            text_status = self.status
            try:
                self.registry.write(text_status)
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
        """Record the driver's host and pid and start the heartbeat."""
        self.flush()
        self._thread = threading.Thread(target=self._loop, name="flinkish-heartbeat", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        next_beat = 0.0
        while not self._done.wait(POLL_SECONDS):
            try:
                self._handle_control()
            except Exception as error:
                log.warning("Could not read control requests: %s", error)
            if self._dirty.is_set() or time.time() >= next_beat:
                self.flush()
                next_beat = time.time() + self.plan.heartbeat_interval_s

    # -- QueryStarter (hooks) ------------------------------------------------------------
    def configure(self, writer: Any, name: str) -> None:
        from flinkish_cli.storage import join

        checkpoint = join(self.plan.job_dir, name)
        hooks.set_writer_option(writer, "checkpointLocation", checkpoint)
        if self.plan.runtime_mode == "BATCH":
            hooks.set_writer_trigger(writer, availableNow=True)
        elif self.plan.trigger_interval_ms and not getattr(writer, "_flinkish_trigger", None):
            hooks.set_writer_trigger(
                writer, processingTime=f"{self.plan.trigger_interval_ms} milliseconds"
            )
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
            entry.record(Progress.from_spark(progress))
        self._dirty.set()

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
            self.control.respond(self._carry_out(request))

    def _carry_out(self, request: ControlRequest) -> ControlResponse:
        if request.action == "cancel":
            accepted = self.request_end(JobState.CANCELED, "Canceled by user.", graceful=False)
        elif request.action == "stop" and not request.args.get("savepoint"):
            reason = request.args.get("reason") or "Stopped by user."
            accepted = self.request_end(JobState.CANCELED, reason, graceful=True)
        else:
            return ControlResponse(
                request.request_id, ok=False, error=f"Unsupported action '{request.action}'."
            )
        if not accepted:
            return ControlResponse(
                request.request_id,
                ok=False,
                error=f"Job {self.plan.job_id} is already ending ({self.status.state.value}).",
            )
        return ControlResponse(request.request_id, ok=True)

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

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the job gracefully."""

        def handler(signum: int, _frame: Any) -> None:
            name = signal.Signals(signum).name
            self.request_end(JobState.CANCELED, f"Stopped by {name}.", graceful=True)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    # -- end -----------------------------------------------------------------------------
    def wait_for_queries(self) -> BaseException | None:
        """Wait until every query has ended; the first query failure, if any."""
        while True:
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

    def end(self, error: BaseException | None, program: str | None = None) -> JobState:
        """Stop what still runs and record the final state."""
        if error is not None and self._ending is None:
            state, cause = JobState.FAILED, short_cause(error, program)
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
        with self._lock:
            for entry in self.status.queries.values():
                entry.active = False
        self._done.set()
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
