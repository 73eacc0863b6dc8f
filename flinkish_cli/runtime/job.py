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
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.plan.job import JobPlan
from flinkish_cli.plan.rundir import PID_FILE
from flinkish_cli.registry import protocol
from flinkish_cli.registry.control import (
    POLL_SECONDS,
    ControlChannel,
    ControlRequest,
    ControlResponse,
    poll_interval,
)
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime import faults, hooks
from flinkish_cli.runtime.checkpoint_rules import BatchWatcher, CheckpointRules
from flinkish_cli.runtime.flavour import CLASSIC, Flavour
from flinkish_cli.runtime.identity import QueryIdentity
from flinkish_cli.runtime.restart import EXIT_JVM_LOST, Decision, record_failure
from flinkish_cli.runtime.restoring import JobRestorer
from flinkish_cli.spark.failures import short_cause

log = logging.getLogger("flinkish.runtime")

#: How long a graceful stop waits for a running micro-batch before stopping it anyway.
GRACEFUL_STOP_TIMEOUT = 120.0
#: How long a cancelled job's script gets to return before the driver exits regardless.
CANCEL_GRACE = 15.0


class SparkLostError(Exception):
    """Spark's JVM (classic) is gone: nothing in this process can run the job any more."""


class JobRuntime:
    """One job, inside its driver."""

    dry_run = False

    def __init__(
        self,
        plan: JobPlan,
        registry: JobRegistry,
        flavour: Flavour,
        settings: Any = None,
        rules: CheckpointRules | None = None,
    ) -> None:
        self.plan = plan
        self.flavour = flavour
        self.registry = registry
        self.settings = settings
        self.rules = rules or CheckpointRules()
        self.spark: Any = None
        self.control = ControlChannel(registry, plan.job_id)
        self.status = registry.find(plan.job_id) or JobStatus(job_id=plan.job_id, name=plan.name)
        self.status.host = socket.gethostname()
        self.status.pid = os.getpid()
        self.status.supervisor_pid = _supervisor_pid(plan)
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
        self.restorer = JobRestorer(plan, settings, registry)
        self.watcher = BatchWatcher(self.rules, self._fail_checkpoints)
        self._failure: BaseException | None = None  # a checkpoint rule failed the job
        self.has_run = False  # the program reached its first wait, or a batch committed
        self._identities: dict[str, QueryIdentity] = {}
        self._script_listeners: list[tuple[Any, Any]] = []
        self._program_stopped = False  # the program called spark.stop()
        self._parent = os.getppid()  # classic: spark-submit's JVM started this process
        self._jvm_lost = False

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
            if self.spark_lost():
                log.error(
                    "Spark's JVM (pid %s) is gone; the driver exits so that it can be "
                    "restarted under the job's restart strategy.",
                    self._parent,
                )
                logging.shutdown()
                os._exit(EXIT_JVM_LOST)
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

    def spark_lost(self, confirm: bool = False) -> bool:
        """Classic Spark: the JVM that started this driver has exited (its orphan now).

        ``confirm``: the program just lost its connection to the gateway. A JVM killed with
        SIGKILL refuses connections before the kernel has finished its exit and re-parented
        this process, so wait a little for that before judging it alive (otherwise its
        death would count twice under the restart strategy: here and in the supervisor).
        """
        if self.flavour.name != CLASSIC or self.plan.deploy_mode != "client":
            return False
        deadline = time.monotonic() + (GATEWAY_LOSS_GRACE_S if confirm else 0.0)
        while not self._jvm_lost:
            if os.getppid() != self._parent:
                self._jvm_lost = True
            elif time.monotonic() >= deadline:
                break
            else:
                time.sleep(0.05)
        return self._jvm_lost

    # -- QueryStarter (hooks) ------------------------------------------------------------
    def attach(self, spark: Any) -> None:
        """The program's SparkSession, met at its first query: listen to its queries."""
        if self.spark is spark:
            return
        self.spark = spark
        from flinkish_cli.runtime.listener import StatusListener

        hooks.original(self.flavour.manager, "addListener")(spark.streams, StatusListener(self))

    def configure(self, writer: Any, query: QueryIdentity, spark: Any) -> None:
        """Checkpoint (restored first when the job resumes) and trigger of a starting query."""
        self.attach(spark)
        checkpoint, owner = self._checkpoint_of(writer, query, spark)
        target = self._storage_of(checkpoint, owner)
        self.restorer.restore_query(
            query,
            target,
            checkpoint,
            spark,
            script_owned=owner == "script",
            repartition=self.flavour.repartition,
        )
        sink_path = getattr(writer, "_flinkish_path", None)
        if sink_path and query.identity in self.restorer.restored:
            self.restorer.check_file_sink(query, str(sink_path), target, checkpoint)
        if owner == "flinkish":
            hooks.set_writer_option(self.flavour, writer, "checkpointLocation", checkpoint)
        script_trigger = getattr(writer, "_flinkish_trigger", None)
        if self.plan.runtime_mode == "BATCH":
            if script_trigger and not script_trigger.get("availableNow"):
                log.info(
                    "%s: BATCH mode runs it with availableNow (the script set %s).",
                    query.label(),
                    script_trigger,
                )
            hooks.set_writer_trigger(self.flavour, writer, availableNow=True)
        elif not script_trigger:
            interval_ms = max(self.plan.trigger_interval_ms or 0, self.rules.min_pause_ms)
            if interval_ms:
                hooks.set_writer_trigger(
                    self.flavour, writer, processingTime=f"{interval_ms} milliseconds"
                )
        if query.generated:
            log.info(
                "Streaming query #%s has no name: its identity is '%s' (%s), generated from "
                "the order in which the program starts its unnamed queries. Name it with "
                ".queryName('...') so that its state survives changes to the program.",
                query.identity.rsplit("-", 1)[-1],
                query.identity,
                query.shape.describe(),
            )
        with self._lock:
            self.status.queries[query.identity] = QueryStatus(
                name=query.identity, checkpoint=checkpoint
            )
            self._identities[query.identity] = query

    def _checkpoint_of(self, writer: Any, query: QueryIdentity, spark: Any) -> tuple[str, str]:
        """The query's checkpoint and who owns it: the script's own, as Spark would use it,
        or flinkish's ``<execution.checkpointing.dir>/<JobID>/<identity>``."""
        from flinkish_cli.storage import join

        own = getattr(writer, "_flinkish_checkpoint", None)
        if own:
            return str(own).rstrip("/"), "script"
        if query.spark_name is not None:
            try:
                root = spark.conf.get("spark.sql.streaming.checkpointLocation", None)
            except Exception:
                root = None
            if root:  # Spark's own rule for named queries: <root>/<queryName>
                return join(str(root).rstrip("/"), str(query.spark_name)), "script"
        return join(self.plan.job_dir, query.identity), "flinkish"

    def _storage_of(self, path: str, owner: str) -> Any:
        """The storage of a query's checkpoint (the registry's, unless the script chose)."""
        if owner == "flinkish":
            return self.registry.storage
        from flinkish_cli.storage import open_storage

        return open_storage(path, self.settings)

    def started(self, query: QueryIdentity, handle: Any) -> None:
        with self._lock:
            self.queries[query.identity] = handle
            entry = self.status.queries[query.identity]
            entry.query_id = str(handle.id)
            entry.run_id = str(handle.runId)
            entry.active = True
            waiting = self.status.state in (JobState.CREATED, JobState.RESTARTING)
            if waiting and not self.restorer.waits_for_queries(list(self.queries)):
                self.status.state = JobState.RUNNING
        log.info("%s started (id %s, checkpoint %s).", query.label(), handle.id, entry.checkpoint)
        self.flush()

    def first_wait(self) -> None:
        """The program waits on its queries: they are the job (restore checked here)."""
        self.restorer.check_all_found(list(self.queries))
        self.has_run = True
        with self._lock:
            if self.status.state in (JobState.CREATED, JobState.RESTARTING):
                self.status.state = JobState.RUNNING
        self.flush()

    def listener_added(self, manager: Any, listener: Any) -> None:
        self._script_listeners.append((manager, listener))

    def session_stopped(self) -> None:
        """The program called ``spark.stop()``: its queries stop, as they would in Spark."""
        log.info("The program stopped its SparkSession: stopping its queries.")
        self._program_stopped = True
        for handle in self._all_active():
            with contextlib.suppress(Exception):
                handle.stop()

    def _all_active(self) -> list[Any]:
        """Every active query of the session (the job's, and any started around the hooks)."""
        handles = list(self.queries.values())
        if self.spark is not None:
            with contextlib.suppress(Exception):
                known = {str(h.id) for h in handles}
                handles += [q for q in self.spark.streams.active if str(q.id) not in known]
        return [h for h in handles if _is_active(h)]

    # -- listener ------------------------------------------------------------------------
    def on_started(self, name: str | None, query_id: str, run_id: str) -> None:
        return None

    def _identity_of(self, progress: dict[str, Any]) -> str | None:
        """The identity a progress report belongs to: by the query's run (an unnamed query
        has no name in Spark's reports, a renamed one Spark's name), else by its name."""
        run_id, query_id = str(progress.get("runId")), str(progress.get("id"))
        for identity, entry in self.status.queries.items():
            if entry.run_id == run_id:
                return identity
        for identity, entry in self.status.queries.items():
            if entry.query_id == query_id and entry.active:
                return identity
        name = progress.get("name")
        return name if name in self.status.queries else None

    def on_progress(self, progress: dict[str, Any]) -> None:
        with self._lock:
            name = self._identity_of(progress)
            entry = self.status.queries.get(name) if name else None
            if entry is None:
                return
            done = Progress.from_spark(progress)
            entry.record(done)
        self.has_run = True
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
            try:
                command = protocol.command_of(request)
            except ValueError as error:
                self.control.respond(
                    ControlResponse(request.request_id, ok=False, error=str(error))
                )
                continue
            if protocol.ends_at_once(command):
                self._answer(request, command)  # at once, even while a savepoint is being taken
            else:
                self._workers.submit(self._answer, request, command)

    def _answer(self, request: ControlRequest, command: protocol.Command) -> None:
        try:
            response = self._carry_out(request.request_id, command)
        except FlinkishError as error:
            response = ControlResponse(request.request_id, ok=False, error=str(error))
        except Exception as error:
            log.exception("Control request %s failed.", request.action)
            response = ControlResponse(
                request.request_id, ok=False, error=f"{type(error).__name__}: {error}"
            )
        self.control.respond(response)

    def _carry_out(self, request_id: str, command: protocol.Command) -> ControlResponse:
        if isinstance(command, protocol.Cancel):
            accepted = self.request_end(JobState.CANCELED, "Canceled by user.", graceful=False)
        elif isinstance(command, protocol.Stop):
            accepted = self.request_end(JobState.CANCELED, command.reason, graceful=True)
        elif isinstance(command, protocol.StopWithSavepoint):
            end_state = JobState(command.end_state)
            path = self.stop_with_savepoint(command.target, command.drain, end_state)
            return ControlResponse(
                request_id, ok=True, result=protocol.SavepointDone(path).to_result()
            )
        elif isinstance(command, protocol.TriggerSavepoint):
            self._require_live("take a savepoint of")
            path = self.take_savepoint(command.target)
            return ControlResponse(
                request_id, ok=True, result=protocol.SavepointDone(path).to_result()
            )
        else:
            batches = self.wait_for_checkpoint(command.timeout)
            done = protocol.CheckpointDone(self.plan.job_dir, batches)
            return ControlResponse(request_id, ok=True, result=done.to_result())
        if not accepted:
            return ControlResponse(
                request_id,
                ok=False,
                error=f"Job {self.plan.job_id} is already ending ({self.status.state.value}).",
            )
        return ControlResponse(request_id, ok=True)

    def _require_live(self, what: str) -> None:
        if self._ending is not None or self.status.state is not JobState.RUNNING:
            raise JobError(
                f"Cannot {what} job {self.plan.job_id}: it is {self.status.state.value}."
            )

    # -- savepoints and checkpoints ------------------------------------------------------
    def _query_dirs(self) -> dict[str, str]:
        """Each query's checkpoint directory, as recorded when it started."""
        with self._lock:
            return {name: self.status.queries[name].checkpoint for name in self.queries}

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
            before_copy=lambda: faults.inject("savepoint-snapshot", self.plan.attempt),
            shapes={
                name: query.shape.to_text()
                for name, query in self._identities.items()
                if query.generated and name in self.queries
            },
        )
        log.info("Savepoint completed: %s", path)
        return path

    def stop_with_savepoint(
        self, target_dir: str, drain: bool, end_state: JobState = JobState.FINISHED
    ) -> str:
        """Stop every query between batches (after all available input with ``drain``),
        take the savepoint, and let the job end ``end_state`` (FINISHED for ``stop``,
        CANCELED for Flink's deprecated ``cancel --withSavepoint``)."""
        self._require_live("stop")
        with self._lock:
            if self._ending is not None:
                raise JobError(f"Job {self.plan.job_id} is already ending.")
            self._ending, self._ending_cause = end_state, None
            if end_state is JobState.CANCELED:
                self._ending_cause = "Canceled with a savepoint."
        if drain:
            for name, query in list(self.queries.items()):
                log.info("Draining query '%s' before the savepoint.", name)
                hooks.process_all_available(self.flavour, query)
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
        checkpoints flinkish owns (the job's status stays, for ``list -a``); a checkpoint
        location the script chose is the script's, and stays."""
        from flinkish_cli.storage import join

        for name, entry in list(self.status.queries.items()):
            if entry.checkpoint != join(self.plan.job_dir, name):
                continue
            with contextlib.suppress(Exception):
                self.registry.storage.delete_tree(entry.checkpoint)
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
        """Run the job's program once, until its queries end; the failure, if any.

        As under ``spark-submit``, the job ends when its program returns: in STREAMING mode
        queries still running then are stopped (between batches); in BATCH mode, where every
        query is bounded, the job waits for them to process the input available.
        """
        from flinkish_cli.runtime.program import run_program

        controller = hooks.QueryController(self, self.flavour)
        hooks.install(controller)
        self.queries = {}
        self._failure = None
        self._program_stopped = False
        self.watcher.reset()
        try:
            try:
                run_program(self.plan.entry)
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    raise RuntimeError(
                        f"The job's program exited with status {exit_.code}."
                    ) from None
            controller.wait_point()
            if self.plan.runtime_mode != "BATCH" and self._ending is None:
                running = self._all_active()
                if running:
                    log.info(
                        "The job's program returned while %d quer%s still ran: stopping "
                        "them between micro-batches (the job ends with its program, as under "
                        "spark-submit).",
                        len(running),
                        "y" if len(running) == 1 else "ies",
                    )
                    for handle in running:
                        with contextlib.suppress(Exception):
                            stop_between_batches(handle)
            return self.wait_for_queries()
        except BaseException as error:  # the script's failure is the job's failure
            if self.spark_lost(confirm=_lost_gateway(error)):
                return SparkLostError("Spark's JVM exited while the job ran.")
            if self._failure is not None:
                return self._failure
            log.error("The job's program failed.", exc_info=error)
            return error

    @property
    def ending(self) -> bool:
        """A cancel or stop has been asked for."""
        return self._ending is not None

    def record_failure(self, config: Any, error: BaseException, program: str | None) -> Decision:
        """Record the failed attempt and decide (:func:`~.restart.record_failure`); a restart
        is written to the registry at once."""
        cause = short_cause(error, program)
        with self._lock:
            decision = record_failure(config, self.status, cause, time.time())
        if decision.restart:
            log.warning("Job failed: %s. Restarting in %.1f s.", cause, decision.delay)
            self.flush()
        return decision

    def restart_after(self, delay: float) -> bool:
        """Clear what the failed attempt left, wait ``delay``; False if the job was
        cancelled meanwhile."""
        self.clear_attempt()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self._ending is not None:
                return False
            time.sleep(0.1)
        return self._ending is None

    def clear_attempt(self) -> None:
        """Nothing of a failed attempt leaks into the next: its queries stop, Spark forgets
        their terminations (``awaitAnyTermination`` would return at once otherwise), the
        listeners the script added go, and the job's own modules are imported afresh."""
        for handle in self._all_active():
            with contextlib.suppress(Exception):
                handle.stop()
        if self.spark is not None:
            with contextlib.suppress(Exception):
                self.spark.streams.resetTerminated()
            for manager, listener in self._script_listeners:
                with contextlib.suppress(Exception):
                    manager.removeListener(listener)
        self._script_listeners.clear()
        forget_job_modules()

    # -- end -----------------------------------------------------------------------------
    def wait_for_queries(self) -> BaseException | None:
        """Wait until every query has ended; the first query failure, if any."""
        while True:
            if self._failure is not None:
                return self._failure
            if self.spark_lost():
                return SparkLostError("Spark's JVM exited while the job ran.")
            active = False
            for query in list(self.queries.values()):
                if _is_active(query):
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
        return state  # the run directory is the supervisor's to remove


def _supervisor_pid(plan: JobPlan) -> int | None:
    """The pid of the job's supervisor, from the run directory it owns (client mode)."""
    if not plan.run_dir:
        return None
    try:
        with open(os.path.join(plan.run_dir, PID_FILE), encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _is_active(query: Any) -> bool:
    try:
        return bool(query.isActive)
    except Exception:  # the session or the JVM is going away
        return False


#: Modules loaded before the job's program first ran (flinkish, pyspark, the standard library).
_BASE_MODULES = frozenset(sys.modules)


def forget_job_modules() -> None:
    """Drop the modules the job's program imported from its own code, so that a restarted
    attempt imports them afresh (module-level state starts over, as in a new process)."""
    prefixes = tuple({sys.prefix, sys.base_prefix, os.path.dirname(os.__file__)})
    for name, module in list(sys.modules.items()):
        if name in _BASE_MODULES or name.startswith(("pyspark", "py4j", "flinkish_cli")):
            continue
        path = getattr(module, "__file__", None) or ""
        if path and not path.startswith(prefixes):
            del sys.modules[name]


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


#: How long a driver that lost its gateway waits to see whether Spark's JVM has exited.
GATEWAY_LOSS_GRACE_S = 5.0


def _lost_gateway(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a lost connection to Spark's JVM."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionError) or type(seen).__name__ == "Py4JNetworkError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False
