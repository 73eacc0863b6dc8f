"""The job's streaming queries as its driver sees them: started by the hooks, reported by
Spark's listener.

:class:`JobQueries` is the :class:`~flinkish_cli.runtime.queries.hooks.QueryStarter` the hooks call
as the program starts its queries (each gets its checkpoint, restored first when the job
resumes, and its trigger) and the receiver of Spark's query events
(:class:`~flinkish_cli.runtime.queries.listener.StatusListener`): each completed micro-batch goes
into the job's status (its figures, and the latest batch's figures per node of the query's
graph), and the first batch of each run of a query to the job's graph
(:class:`~flinkish_cli.runtime.explain.graphs.GraphRecorder`). It also knows every query of the
session still running, and clears what an attempt of the program left behind before the
next one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any

from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.batch_figures import BatchFigures
from flinkish_cli.registry.status import JobState, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.connectors import kafka_checks
from flinkish_cli.runtime.connectors.file_backlog import FileBacklog
from flinkish_cli.runtime.connectors.kafka_offsets import (
    GroupCommitter,
    added_partitions,
    added_partitions_line,
)
from flinkish_cli.runtime.connectors.kafka_sink import (
    EXACTLY_ONCE,
    GUARANTEE_KEY,
    PREFIX_KEY,
    TransactionalBatchWrites,
    TransactionalSink,
    spec_for,
)
from flinkish_cli.runtime.explain.graphs import GraphRecorder
from flinkish_cli.runtime.flavours.flavour import Flavour
from flinkish_cli.runtime.queries import hooks
from flinkish_cli.runtime.queries.checkpoint_rules import BatchWatcher, CheckpointRules
from flinkish_cli.runtime.queries.identity import QueryIdentity
from flinkish_cli.runtime.queries.restoring import JobRestorer
from flinkish_cli.runtime.queries.stopping import is_active, stop_between_batches
from flinkish_cli.runtime.status_keeper import StatusKeeper
from flinkish_cli.spark.failures import message_lines

log = logging.getLogger("flinkish.runtime")


class JobQueries:
    """The job's queries: their handles, identities and progress."""

    dry_run = False

    def __init__(
        self,
        plan: JobPlan,
        flavour: Flavour,
        registry: JobRegistry,
        settings: Any,
        rules: CheckpointRules,
        keeper: StatusKeeper,
        restorer: JobRestorer,
        watcher: BatchWatcher,
    ) -> None:
        self.plan = plan
        self.flavour = flavour
        self.registry = registry
        self.settings = settings
        self.rules = rules
        self.keeper = keeper
        self.restorer = restorer
        self.watcher = watcher
        self.spark: Any = None
        self.handles: dict[str, Any] = {}
        self.stopped = False  # the runtime stopped this attempt's queries (stopping())
        self.has_run = False  # the program reached its first wait, or a batch committed
        self.identities: dict[str, QueryIdentity] = {}
        self._script_listeners: list[tuple[Any, Any]] = []
        #: identity -> (storage, checkpoint, file sink (storage, output) or None): what the
        #: driver measures (:mod:`~flinkish_cli.runtime.queries.footprints`)
        self._footprints: dict[str, Any] = {}
        self.graphs = GraphRecorder(registry, plan.job_id, flavour, self.checkpoint_storage)
        self.backlog = FileBacklog(self._open_storage)  # a file source's lag
        #: each committed batch's Kafka offsets, to the sources' consumer groups
        self.kafka_offsets = GroupCommitter(plan.name)
        self._kafka_checked: set[str] = set()  # queries whose Kafka sources were checked

    @property
    def _entries(self) -> dict[str, QueryStatus]:
        return self.keeper.status.queries

    def _kafka_sink(self, writer: Any, query: QueryIdentity, storage: Any, checkpoint: str) -> None:
        """A Kafka sink under ``exactly-once``: written in Kafka transactions
        (:mod:`~flinkish_cli.runtime.connectors.kafka_sink`) instead of by Spark's sink."""
        conf = self.plan.flink_conf
        sink = getattr(writer, "_flinkish_sink", None)
        function = getattr(writer, "_flinkish_batch_function", None)
        own_batches = sink == "foreachBatch" and function is not None
        if sink != "kafka" and not (own_batches and self.flavour.batch_writer is not None):
            return
        if conf.get(GUARANTEE_KEY, "").strip().lower() != EXACTLY_ONCE:
            return
        prefix = conf.get(PREFIX_KEY, "").strip()
        spec = spec_for(hooks.writer_options(writer), prefix, query.identity, self.plan.attempt)
        root = checkpoint.rstrip("/")

        def offsets(batch: int) -> str:
            return str(storage.read_text(f"{root}/offsets/{batch}"))

        if own_batches:
            writes = TransactionalBatchWrites(function, spec, offsets, hooks.batch_kafka_writer)
            hooks.set_writer_foreach_batch(self.flavour, writer, writes)
            return
        hooks.set_writer_foreach_batch(self.flavour, writer, TransactionalSink(spec, offsets))
        log.info(
            "Kafka sink of '%s': exactly-once, in Kafka transactions '%s-%s-<partition>'.",
            query.identity,
            prefix,
            query.identity,
        )

    # -- QueryStarter (hooks) ------------------------------------------------------------
    def attach(self, spark: Any) -> None:
        """The program's SparkSession, met at its first query: listen to its queries."""
        if self.spark is spark:
            return
        self.spark = spark
        from flinkish_cli.runtime.queries.listener import StatusListener

        hooks.original(self.flavour.manager, "addListener")(spark.streams, StatusListener(self))

    def _repartition(self, spark: Any, checkpoint: str, partitions: int) -> None:
        """The restore's offline repartition, in this flavour (with the job's configuration)."""
        self.flavour.repartition(spark, checkpoint, partitions, self.restorer.plan.flink_conf)

    def configure(self, writer: Any, query: QueryIdentity, spark: Any) -> None:
        """Checkpoint (restored first when the job resumes) and trigger of a starting query."""
        self.attach(spark)
        checkpoint, owner = self._checkpoint_of(writer, query, spark)
        target = self._storage_of(checkpoint, owner)
        sink_path = getattr(writer, "_flinkish_path", None)
        if self.plan.attempt == 0 and query.identity not in self._kafka_checked:
            self._kafka_checked.add(query.identity)  # a restart in the driver is not checked
            kafka_checks.check(
                query.identity,
                kafka_checks.sources_of(writer),
                self.restorer.saved_offsets(query.identity),
            )
        self.restorer.restore_query(
            query,
            target,
            checkpoint,
            spark,
            script_owned=owner == "script",
            repartition=self._repartition,
            sink=str(sink_path) if sink_path else None,
        )
        if sink_path and query.identity in self.restorer.restored:
            self.restorer.check_file_sink(query, str(sink_path), target, checkpoint)
        self._footprints[query.identity] = (target, checkpoint, self._sink_of(sink_path))
        if owner == "flinkish":
            location = checkpoint
            if checkpoint.startswith("/") and os.environ.get("CONTAINER_ID"):
                # a driver in a YARN container: Spark's default file system is the cluster's,
                # and a registry on local disk keeps its checkpoints there
                location = f"file://{checkpoint}"
            hooks.set_writer_option(self.flavour, writer, "checkpointLocation", location)
        trigger_ms = self._set_trigger(writer, query)
        self._kafka_sink(writer, query, target, checkpoint)
        if query.generated:
            log.info(
                "Streaming query #%s has no name: its identity is '%s' (%s), generated from "
                "the order in which the program starts its unnamed queries. Name it with "
                ".queryName('...') so that its state survives changes to the program.",
                query.identity.rsplit("-", 1)[-1],
                query.identity,
                query.shape.describe(),
            )
        with self.keeper.lock:
            # a restarted attempt's query goes on from its checkpoint: where the job's batches
            # of it began and ended stays (what counts them), the rest starts afresh
            before = self._entries.get(query.identity)
            if before is not None and before.checkpoint != checkpoint:
                before = None
            self._entries[query.identity] = QueryStatus(
                name=query.identity,
                checkpoint=checkpoint,
                last_committed_batch=before.last_committed_batch if before else None,
                first_batch=before.first_batch if before else None,
                footprint=before.footprint if before else None,
                trigger_ms=trigger_ms,
            )
            self.identities[query.identity] = query

    def _sink_of(self, path: Any) -> tuple[Any, str] | None:
        """The storage and directory of a sink's output path (where a file sink keeps its
        log): a relative path is the driver's, as Spark's, and unknown in a session cluster."""
        import os

        from flinkish_cli.storage import open_storage

        if not path:
            return None
        path = str(path)
        if "://" not in path and not os.path.isabs(path):
            if self.flavour.remote:
                return None
            path = os.path.abspath(path)
        try:
            return open_storage(path, self.settings), path
        except Exception:  # a scheme flinkish cannot list: the checkpoint is still measured
            return None

    def _open_storage(self, path: str) -> Any:
        from flinkish_cli.storage import open_storage

        return open_storage(path, self.settings)

    def checkpoint_storage(self, identity: str) -> tuple[Any, str] | None:
        """The storage and directory of a query's checkpoint, once it has started."""
        with self.keeper.lock:
            found = self._footprints.get(identity)
        return (found[0], found[1]) if found else None

    def footprint_targets(self) -> dict[str, Any]:
        """What to measure of each query of this attempt (see ``_footprints``)."""
        with self.keeper.lock:
            return {n: t for n, t in self._footprints.items() if n in self.handles}

    def _set_trigger(self, writer: Any, query: QueryIdentity) -> int | None:
        """BATCH mode: availableNow; else the job's interval unless the script set one.
        Returns the query's processing-time interval in ms (None when it has none)."""
        script_trigger = getattr(writer, "_flinkish_trigger", None)
        if self.plan.runtime_mode == "BATCH":
            if script_trigger and not script_trigger.get("availableNow"):
                log.info(
                    "%s: BATCH mode runs it with availableNow (the script set %s).",
                    query.label(),
                    script_trigger,
                )
            hooks.set_writer_trigger(self.flavour, writer, availableNow=True)
            return None
        if script_trigger:
            return _interval_ms(script_trigger.get("processingTime"))
        interval_ms = max(self.plan.trigger_interval_ms or 0, self.rules.min_pause_ms)
        if interval_ms:
            hooks.set_writer_trigger(
                self.flavour, writer, processingTime=f"{interval_ms} milliseconds"
            )
        return interval_ms or None

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
        with self.keeper.lock:
            self.handles[query.identity] = handle
            entry = self._entries[query.identity]
            entry.query_id = str(handle.id)
            entry.run_id = str(handle.runId)
            entry.active = True
            waiting = self.keeper.state in (JobState.CREATED, JobState.RESTARTING)
            if waiting and not self.restorer.waits_for_queries(list(self.handles)):
                self.keeper.status.state = JobState.RUNNING
        log.info("%s started (id %s, checkpoint %s).", query.label(), handle.id, entry.checkpoint)
        self.keeper.flush()

    def first_wait(self) -> None:
        """The program waits on its queries: they are the job (restore checked here)."""
        self.restorer.check_all_found(list(self.handles))
        self.has_run = True
        with self.keeper.lock:
            if self.keeper.state in (JobState.CREATED, JobState.RESTARTING):
                self.keeper.status.state = JobState.RUNNING
            self.keeper.status.queries_started = True
        self.keeper.flush()

    def listener_added(self, manager: Any, listener: Any) -> None:
        self._script_listeners.append((manager, listener))

    def session_stopped(self) -> None:
        """The program called ``spark.stop()``: its queries stop, as they would in Spark."""
        log.info("The program stopped its SparkSession: stopping its queries.")
        for handle in self.all_active():
            with contextlib.suppress(Exception):
                handle.stop()

    # -- listener ------------------------------------------------------------------------
    def on_started(self, name: str | None, query_id: str, run_id: str) -> None:
        return None

    def _identity_of(self, progress: dict[str, Any]) -> str | None:
        """The identity a progress report belongs to: by the query's run (an unnamed query
        has no name in Spark's reports, a renamed one Spark's name), else by its name."""
        run_id, query_id = str(progress.get("runId")), str(progress.get("id"))
        for identity, entry in self._entries.items():
            if entry.run_id == run_id:
                return identity
        for identity, entry in self._entries.items():
            if entry.query_id == query_id and entry.active:
                return identity
        name = progress.get("name")
        return name if name in self._entries else None

    def on_progress(self, progress: dict[str, Any]) -> None:
        with self.keeper.lock:
            name = self._identity_of(progress)
            entry = self._entries.get(name) if name else None
            if entry is None:
                return
            checkpoint = entry.checkpoint
        done = Progress.from_spark(progress)
        if done.lag is None:  # Spark's file source tells none: measured here, off the lock
            done.lag = self.backlog.of(checkpoint, progress)
        with self.keeper.lock:
            entry.record(done)
            entry.figures = BatchFigures.from_spark(progress)
        self.graphs.progressed(str(name), progress)
        log.info("%s", done.line(str(name)))  # one line a batch (Spark's own is at INFO, off)
        added = added_partitions(progress)
        if added:
            log.info("%s", added_partitions_line(str(name), added))
        try:
            self.kafka_offsets.committed(str(name), self.handles.get(str(name)), progress)
        except Exception as error:  # never the batch's concern
            log.debug("Kafka offsets of %s not committed: %s", name, error)
        self.has_run = True
        self.keeper.changed()
        self.watcher.completed(str(name), done)
        with self.keeper.lock:
            batches = {n: q.last_committed_batch for n, q in self._entries.items()}
        self.restorer.claim_if_done(batches)

    def on_idle(self, query_id: str, run_id: str) -> None:
        with self.keeper.lock:
            name = self._identity_of({"runId": run_id, "id": query_id})
            entry = self._entries.get(name) if name else None
            if entry is None or entry.idle:
                return
            entry.idle = True
        self.keeper.changed()

    def on_terminated(self, query_id: str, exception: str | None) -> None:
        with self.keeper.lock:
            for entry in self._entries.values():
                if entry.query_id == query_id:
                    entry.active = False
                    if exception:
                        entry.exception = "\n".join(message_lines(exception)[:2])[:800]
        self.keeper.changed()

    def reconcile(self) -> None:
        """Record batches the (asynchronous) listener has not reported yet."""
        for name, query in list(self.handles.items()):
            try:
                recent = query.recentProgress
            except Exception:  # the JVM may be going away
                continue
            with self.keeper.lock:
                entry = self._entries[name]
                last = entry.last_committed_batch if entry.last_committed_batch is not None else -1
                for progress in recent:
                    document = _document(progress)
                    if int(document.get("batchId", -1)) > last:
                        entry.record(Progress.from_spark(document))
                        entry.figures = BatchFigures.from_spark(document)
                        last = entry.last_committed_batch or last

    # -- what the job asks of its queries ------------------------------------------------
    def last_batch(self, name: str) -> int | None:
        """The query's last committed batch, as recorded."""
        with self.keeper.lock:
            entry = self._entries.get(name)
            return entry.last_committed_batch if entry else None

    def checkpoint_dirs(self) -> dict[str, str]:
        """Each query's checkpoint directory, as recorded when it started."""
        with self.keeper.lock:
            return {name: self._entries[name].checkpoint for name in self.handles}

    def failed_query(self) -> str | None:
        """The query that terminated with an exception, if one did."""
        for name, handle in list(self.handles.items()):
            with contextlib.suppress(Exception):  # the JVM may be going away
                if not is_active(handle) and handle.exception() is not None:
                    return name
        return None

    def all_active(self) -> list[Any]:
        """Every active query of the session (the job's, and any started around the hooks)."""
        handles = list(self.handles.values())
        if self.spark is not None:
            with contextlib.suppress(Exception):
                known = {str(h.id) for h in handles}
                handles += [q for q in self.spark.streams.active if str(q.id) not in known]
        return [h for h in handles if is_active(h)]

    def new_attempt(self) -> None:
        """Forget the handles of the previous attempt: the program starts its queries again."""
        self.handles = {}
        self.kafka_offsets.new_attempt()  # the new attempt's queries: their sources again
        self.stopped = False
        with self.keeper.lock:
            self.keeper.status.queries_started = False

    def clear_attempt(self) -> None:
        """Nothing of a failed attempt leaks into the next: its queries stop, Spark forgets
        their terminations (``awaitAnyTermination`` would return at once otherwise) and the
        listeners the script added go."""
        for handle in self.all_active():
            with contextlib.suppress(Exception):
                handle.stop()
        if self.spark is not None:
            with contextlib.suppress(Exception):
                self.spark.streams.resetTerminated()
            for manager, listener in self._script_listeners:
                with contextlib.suppress(Exception):
                    manager.removeListener(listener)
        self._script_listeners.clear()

    def stopping(self) -> None:
        """The runtime stops this attempt's queries: the program's waits from now on end it
        (:class:`~flinkish_cli.runtime.queries.hooks.ProgramEnded`)."""
        self.stopped = True

    def stop_all(self, graceful: bool) -> None:
        """Stop the job's queries: between batches (``graceful``), or at once."""
        self.stopping()
        for name, query in list(self.handles.items()):
            try:
                if graceful:
                    stop_between_batches(query)
                else:
                    query.stop()
            except Exception as error:
                log.warning("Stopping query '%s': %s", name, error)


def _document(progress: Any) -> dict[str, Any]:
    """A progress report as Spark's JSON document (pyspark's objects hold UUIDs)."""
    text = getattr(progress, "json", None)
    return json.loads(text) if isinstance(text, str) else dict(progress)


def _interval_ms(text: Any) -> int | None:
    """A script's ``trigger(processingTime='5 seconds')`` in ms; None for another trigger or
    an interval written in a form only Spark reads."""
    from flinkish_cli.config.units import ValueProblem, parse_duration

    if not isinstance(text, str):
        return None
    try:
        return int(parse_duration(text.strip().removeprefix("interval ")).total_seconds() * 1000)
    except ValueProblem:
        return None
