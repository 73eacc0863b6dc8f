"""Restoring a job's queries inside its driver, from a savepoint or retained checkpoint.

The CLI has already checked the source (:func:`flinkish_cli.savepoints.restore.plan_restore`);
the driver reads it again when the program starts its first query (HDFS is only reachable
from here). Then, query by query, just before each starts:

- a query the savepoint knows gets the savepoint's state copied into its checkpoint (a
  generated identity must still be the same kind of query: same sink, same sources, or,
  with ``-n``, it starts fresh); with ``-n``, the state of operators the state check found
  gone from the end of the query is left out (``RestorePlan.leave_out``);
- a query the savepoint does not know starts fresh (a new query, as a new operator in Flink);
- the state is repartitioned when the session's shuffle partitions differ from the
  savepoint's (RocksDB; Spark keeps a checkpoint's partitions otherwise).

An in-place rescale (``RestorePlan.rescale``, the autoscaler's: the same JobID, a new
parallelism) restores nothing that is in place: each stateful query's own checkpoint is
repartitioned to the new parallelism, and only a checkpoint that is missing, or whose
repartition a killed driver left half done, is first restored from the rescale's savepoint.

At the program's first wait every query of the savepoint must have found its query, unless
``--allowNonRestoredState``. In ``claim`` mode the source is deleted once every restored
query has committed a batch of its own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flinkish_cli.errors import SavepointError
from flinkish_cli.plan.job import JobPlan
from flinkish_cli.runtime import faults
from flinkish_cli.runtime.queries.identity import QueryIdentity, QueryShape
from flinkish_cli.savepoints import layout

log = logging.getLogger("flinkish.runtime")


class JobRestorer:
    """The restore of one job (nothing happens when the job starts fresh)."""

    def __init__(self, plan: JobPlan, settings: Any, registry: Any) -> None:
        self.plan = plan
        self.settings = settings
        self.registry = registry  # restore markers live in the job's metadata
        self.source: Any = None  # RestoreSource, read when the first query starts
        self.source_storage: Any = None
        self.seen: set[str] = set()  # identities handled (a restart never restores again)
        self.sinks: dict[str, str] = {}  # identity -> its file sink's directory
        self.restored: dict[str, int] = {}  # identity -> the batch it resumed after
        self.validated = False  # every savepoint query found its query (first wait)
        self._claimed = False

    @property
    def active(self) -> bool:
        return self.plan.restore is not None

    def _open(self) -> None:
        if self.source is not None or self.plan.restore is None:
            return
        from flinkish_cli.savepoints.restore import open_source
        from flinkish_cli.storage import open_storage

        self.source_storage = open_storage(self.plan.restore.source, self.settings)
        self.source = open_source(self.source_storage, self.plan.restore.source)

    def saved_offsets(self, identity: str) -> list[Any]:
        """The source offsets the savepoint holds for the query ``identity`` when this start
        of it restores the savepoint (its first in the job, not a rescale in place); none
        otherwise."""
        restore = self.plan.restore
        if restore is None or restore.rescale is not None or self.plan.attempt > 0:
            return []
        if identity in self.seen:
            return []
        self._open()
        saved = self.source.manifest.query(identity)
        return list(saved.source_offsets) if saved is not None else []

    def restore_query(
        self,
        query: QueryIdentity,
        target: Any,
        checkpoint: str,
        spark: Any,
        script_owned: bool,
        repartition: Any,
        sink: str | None = None,
    ) -> None:
        """Put the query's state into ``checkpoint`` before it starts (once per job);
        ``sink`` is the directory of its file sink, if it writes to one."""
        if sink:
            self.sinks[query.identity] = sink
        if self.plan.restore is None or query.identity in self.seen:
            return  # a fresh job, or a restarted attempt: the job's own checkpoint is newer
        self.seen.add(query.identity)
        if self.plan.restore.rescale is not None:
            self._rescale_in_place(query, target, checkpoint, spark, repartition)
            return
        if self.plan.attempt > 0 and target.exists(checkpoint):
            if self._marker(query.identity) != "started":
                return  # a restarted driver: the job's own checkpoint is newer
            log.warning(
                "The restore of %s into %s was interrupted (its driver died): restoring again.",
                query.label(),
                checkpoint,
            )
            target.delete_tree(checkpoint)
        self._open()
        saved = self.source.manifest.query(query.identity)
        if saved is None:
            log.info("%s is not in %s: it starts fresh.", query.label(), self.source.path)
            return
        if not self._check_shape(query, saved):
            return
        if target.exists(checkpoint):
            self._check_existing(query, target, checkpoint, saved, script_owned)
            return
        from flinkish_cli.savepoints.restore import restore_query

        self._mark(query.identity, "started")
        leave_out = self.plan.restore.leave_out.get(query.identity, [])
        restore_query(
            self.source_storage, self.source, query.identity, target, checkpoint, leave_out
        )
        faults.inject("restore-copied", self.plan.attempt)
        self.restored[query.identity] = saved.last_committed_batch
        if saved.last_committed_batch < 0:
            self._start_partitions(query, target, checkpoint, spark)
        elif self._rescale(query, saved, checkpoint, spark, repartition, target):
            faults.inject("restore-repartitioned", self.plan.attempt)
        self._mark(query.identity, "done")

    def _start_partitions(
        self, query: QueryIdentity, target: Any, checkpoint: str, spark: Any
    ) -> None:
        """A query saved before its first committed batch has no state: it starts as a fresh
        query of this run would, with the session's shuffle partitions (Spark would plan the
        batch it planned, and replays, with the partitions recorded in its offset log)."""
        from flinkish_cli.savepoints.restore import set_stateless_partitions

        partitions = _session_partitions(spark, self.plan.parallelism)
        if set_stateless_partitions(target, checkpoint, partitions):
            log.info(
                "%s had committed no batch: it starts with %s shuffle partitions.",
                query.label(),
                partitions,
            )

    def _rescale_in_place(
        self, query: QueryIdentity, target: Any, checkpoint: str, spark: Any, repartition: Any
    ) -> None:
        """An in-place rescale (or its rollback: the same rescale, back to the old
        parallelism): a stateful query's own checkpoint is repartitioned where it is,
        restored from the rescale's savepoint first when it is missing, unreadable or its
        repartition was cut short; a stateless query keeps its checkpoint and gets the new
        partitions in its offset log. The query's marker says ``started``, then ``done
        <partitions>``."""
        from flinkish_cli.savepoints.create import snapshot_query
        from flinkish_cli.savepoints.restore import restore_query

        stage = self._marker(query.identity)
        partitions = _session_partitions(spark, self.plan.parallelism)
        if stage == f"done {partitions}":
            return  # an earlier driver of this rescale finished it
        self._open()
        saved = self.source.manifest.query(query.identity)
        current = None
        if stage != "started" and target.exists(checkpoint):
            try:
                current = snapshot_query(target, checkpoint, query.identity).manifest
            except Exception as error:  # damaged: the savepoint has the query's state
                log.warning("The checkpoint %s cannot be read (%s).", checkpoint, error)
        if saved is None and current is None:
            return  # a query new since the rescale's savepoint: it starts fresh
        self._mark(query.identity, "started")
        if saved is not None and current is None:
            if stage == "started":
                log.warning(
                    "The rescale of %s was cut short (its driver died): restoring it again "
                    "from %s.",
                    query.label(),
                    self.source.path,
                )
            if target.exists(checkpoint):
                target.delete_tree(checkpoint)
            restore_query(self.source_storage, self.source, query.identity, target, checkpoint)
            current = saved
        assert current is not None
        batch = current.last_committed_batch
        self.restored[query.identity] = -1 if batch is None else batch
        if not current.stateful:  # no state: only the partitions its offset log recorded
            from flinkish_cli.savepoints.restore import set_stateless_partitions

            if set_stateless_partitions(target, checkpoint, partitions):
                log.info("%s: %s shuffle partitions from now on.", query.label(), partitions)
        elif self._rescale(query, current, checkpoint, spark, repartition, target):
            faults.inject("rescale-repartitioned", 0 if stage is None else 1)
        self._mark(query.identity, f"done {partitions}")

    def check_file_sink(
        self, query: QueryIdentity, path: str, target: Any, checkpoint: str
    ) -> None:
        """Refuse a restored query whose file sink already holds later batches.

        Spark's file sink keeps its own log of committed batches (``<path>/_spark_metadata``)
        and skips a batch id it already holds. Output written after the savepoint (the old
        job ran on) has such ids: the resumed query would plan those batches anew, over more
        input, and the sink would skip them, losing that input. The savepoint's planned batch
        is replayed exactly, so the sink may hold it.
        """
        from flinkish_cli.storage import join, open_storage

        sink = open_storage(path, self.settings)
        log_dir = join(path.rstrip("/"), "_spark_metadata")
        if not sink.exists(log_dir):
            return
        held = layout.numbered([i.name.split(".")[0] for i in sink.list(log_dir)])
        planned = layout.numbered(_names(target, join(checkpoint, "offsets")))
        replayable = planned[-1] if planned else -1
        if held and held[-1] > replayable:
            saved = self.restored.get(query.identity)
            at = (
                f"at batch {saved}"
                if saved is not None and saved >= 0
                else "before its first batch"
            )
            raise SavepointError(
                f"{query.label()} writes to the file sink {path}, which holds batches up to "
                f"{held[-1]}, written after the savepoint (taken {at}): resumed, Spark's "
                f"file sink would skip batches {replayable + 1}..{held[-1]} and lose their "
                "input.",
                "Resume from the job's latest savepoint or retained checkpoint, or write this "
                "query to a new output path.",
            )

    def _marker_path(self, identity: str) -> str:
        from flinkish_cli.storage import join

        rescale = self.plan.restore.rescale if self.plan.restore else None
        parts = ("restore", f"rescale-{rescale}", identity) if rescale else ("restore", identity)
        return join(self.registry.meta_dir(self.plan.job_id), *parts)

    def _mark(self, identity: str, stage: str) -> None:
        """A restore is ``started`` before its first file is copied and ``done`` after the
        state is in place (repartitioned too): a driver that died in between is redone."""
        self.registry.storage.write_text(self._marker_path(identity), stage)

    def _marker(self, identity: str) -> str | None:
        try:
            return self.registry.storage.read_text(self._marker_path(identity)).strip()
        except Exception:
            return None

    def _rescale(
        self,
        query: QueryIdentity,
        saved: Any,
        checkpoint: str,
        spark: Any,
        repartition: Any,
        target: Any,
    ) -> bool:
        """Repartition restored state to the session's shuffle partitions (RocksDB); True
        when the state was repartitioned.

        A batch planned and never committed is taken out of the offset log first
        (:meth:`_drop_planned`; Spark repartitions only a checkpoint whose last planned batch
        committed, and its repartition commits a batch of its own under the next id), then
        planned again after the repartition batch with the same offsets (:meth:`_replan`):
        the batch reads the records its first run read, under the next batch id. A
        ``foreachBatch`` sink sees that input under a later batch id; the exactly-once Kafka
        sink knows the batch by its digest
        (:func:`~flinkish_cli.runtime.connectors.kafka_sink.same_input`) and writes nothing
        it already committed."""
        partitions = _session_partitions(spark, self.plan.parallelism)
        if not saved.stateful or not saved.shuffle_partitions:
            return False
        if saved.shuffle_partitions == partitions:
            return False
        if "RocksDB" not in (saved.state_store_provider or ""):
            log.warning(
                "%s keeps its state in %s partitions (hashmap state backend: Spark keeps a "
                "checkpoint's partitions); the session asks for %s.",
                query.label(),
                saved.shuffle_partitions,
                partitions,
            )
            return False
        log.info(
            "Repartitioning the state of %s from %s to %s partitions.",
            query.label(),
            saved.shuffle_partitions,
            partitions,
        )
        planned = self._drop_planned(query, target, checkpoint, saved.last_committed_batch)
        try:
            repartition(spark, checkpoint, partitions)
        except SavepointError:
            raise
        except Exception as error:
            from flinkish_cli.spark.failures import short_cause

            raise SavepointError(
                f"Spark could not repartition the state of {query.label()} in {checkpoint} to "
                f"{partitions} partitions: {short_cause(error)}",
                "The savepoint is unchanged; run again with its parallelism "
                f"(-p {saved.shuffle_partitions}) or retry.",
            ) from error
        self.restored[query.identity] += 1
        if planned is not None:
            self._replan(query, target, checkpoint, planned, partitions)
        return True

    def _replan(
        self, query: QueryIdentity, target: Any, checkpoint: str, text: str, partitions: int
    ) -> None:
        """Plan a dropped batch's offset log entry ``text`` again after the repartition's
        batch, at ``partitions`` (the repartition batch starts where the dropped batch did, so
        the batch reads the same records)."""
        from flinkish_cli.storage import join

        offsets = join(checkpoint, "offsets")
        batch = layout.numbered(_names(target, offsets))[-1] + 1
        target.write_text(
            join(offsets, str(batch)), layout.with_shuffle_partitions(text, partitions)
        )
        log.info(
            "%s replays its planned batch as batch %s, with the offsets it was planned with.",
            query.label(),
            batch,
        )

    def _drop_planned(
        self, query: QueryIdentity, target: Any, checkpoint: str, committed: int | None
    ) -> str | None:
        """Take out of the offset log the batches planned after the last committed one (a
        query stopped in a busy moment, or its savepoint, may hold its next batch planned):
        Spark repartitions only a checkpoint whose last planned batch committed. The sources'
        own logs stay, so a file source's next batch takes the files that batch had planned;
        :class:`SavepointError` when the query's file sink holds such a batch (its rows
        would be written twice). The first dropped batch's entry is returned, to be planned
        again (:meth:`_replan`)."""
        from flinkish_cli.storage import join, open_storage

        last = -1 if committed is None else committed
        offsets = join(checkpoint, "offsets")
        planned = [b for b in layout.numbered(_names(target, offsets)) if b > last]
        if not planned:
            return None
        sink = self.sinks.get(query.identity)
        if sink:
            names = _names(open_storage(sink, self.settings), join(sink, "_spark_metadata"))
            held = layout.numbered([n.split(".")[0] for n in names])
            if held and held[-1] > last:
                raise SavepointError(
                    f"{query.label()} planned batch {planned[0]} and never committed it, but "
                    f"its file sink {sink} holds batch {held[-1]}: its state cannot be "
                    "repartitioned without writing those rows twice.",
                    "Resume at the checkpoint's own parallelism; rescale once the query has "
                    "committed a batch after it.",
                )
        first = str(target.read_text(join(offsets, str(planned[0]))))
        for batch in planned:
            target.delete(join(offsets, str(batch)))
            target.delete(join(offsets, f".{batch}.crc"))
        log.info(
            "%s planned batch %s and never committed it: planned again after the repartition.",
            query.label(),
            planned[0],
        )
        return first

    def _check_shape(self, query: QueryIdentity, saved: Any) -> bool:
        """A generated identity must still name the same kind of query: False when it does
        not and ``-n`` skips the saved state (the query starts fresh), else an error."""
        if not query.generated:
            return True
        before = QueryShape.from_text(getattr(saved, "shape", None))
        if before is None or before.matches(query.shape):
            return True
        assert self.plan.restore is not None
        if self.plan.restore.allow_non_restored_state:
            log.warning(
                "Skipping the savepoint's state of '%s' (%s, -n): the job's %s is another "
                "kind of query; it starts fresh.",
                query.identity,
                before.describe(),
                query.label(),
            )
            return False
        raise SavepointError(
            f"The job's unnamed query '{query.identity}' ({query.shape.describe()}) does not "
            f"match the savepoint's '{query.identity}' ({before.describe()}): the program's "
            "unnamed queries changed order or kind since the savepoint.",
            "Unnamed queries are known by their order of start; name them with "
            ".queryName('...') (naming a query 'unnamed-<n>' keeps that state), or pass "
            "-n/--allowNonRestoredState to start without the savepoint's state for it.",
        )

    def _check_existing(
        self, query: QueryIdentity, target: Any, checkpoint: str, saved: Any, script_owned: bool
    ) -> None:
        """The query's checkpoint already exists (the script's own checkpointLocation)."""
        from flinkish_cli.savepoints.create import snapshot_query

        try:
            current = snapshot_query(target, checkpoint, query.identity)
            at = current.manifest.last_committed_batch
        except Exception:
            at = None
        if at == saved.last_committed_batch:
            log.info(
                "%s: %s is already at the savepoint's batch %s.", query.label(), checkpoint, at
            )
            return
        owner = "the script's checkpointLocation" if script_owned else "the job's checkpoint"
        raise SavepointError(
            f"Cannot restore {query.label()}: {owner} {checkpoint} already holds batch {at}, "
            f"the savepoint {self.source.path} is at batch {saved.last_committed_batch}.",
            "flinkish never overwrites a checkpoint: move that directory away to restore the "
            "savepoint, or run without -s to resume from the checkpoint.",
        )

    def waits_for_queries(self, identities: list[str]) -> bool:
        """Whether the savepoint has queries the job has not started yet: a resumed job is
        RUNNING once all have (or at the program's first wait, which checks them)."""
        if self.plan.restore is None or self.validated or self.plan.attempt > 0:
            return False
        self._open()
        return any(q.name not in identities for q in self.source.manifest.queries)

    def check_all_found(self, identities: list[str]) -> None:
        """At the program's first wait: every savepoint query has found its query."""
        if self.plan.restore is None or self.validated:
            return
        if self.plan.attempt > 0:  # checked by the job's first driver (a claim may be gone)
            self.validated = True
            return
        self._open()
        missing = [q.name for q in self.source.manifest.queries if q.name not in identities]
        if missing and not self.plan.restore.allow_non_restored_state:
            names = ", ".join(repr(m) for m in missing)
            raise SavepointError(
                f"The savepoint {self.source.path} has state for "
                f"quer{'y' if len(missing) == 1 else 'ies'} {names}, which the job did not "
                f"start (it started: {', '.join(identities) or 'nothing'}).",
                "Start those queries as before (same queryName, or for unnamed queries the "
                "same order), or pass -n/--allowNonRestoredState to skip that state.",
            )
        if missing:
            log.warning("Skipping the savepoint's state of %s (-n).", ", ".join(missing))
        self.validated = True

    def claim_if_done(self, last_batches: dict[str, int | None]) -> None:
        """``claim``: once every restored query has committed a new batch, delete the source."""
        restore = self.plan.restore
        if self._claimed or self.source is None or not restore or restore.claim_mode != "claim":
            return
        if not self.validated or not self.restored:
            return
        if not all(_after(last_batches.get(name), batch) for name, batch in self.restored.items()):
            return
        self._claimed = True
        source, storage, names = self.source, self.source_storage, list(self.restored)

        def delete() -> None:
            try:
                if source.kind == "savepoint":
                    storage.delete_tree(source.path)
                else:
                    for name in names:
                        storage.delete_tree(source.query_dir(name))
                log.info("Claimed %s: deleted after the job's first checkpoints.", source.path)
            except Exception as error:
                log.warning("Could not delete the claimed %s: %s", source.path, error)

        threading.Thread(target=delete, name="flinkish-claim", daemon=True).start()


def _after(committed: int | None, batch: int) -> bool:
    """Whether a query has committed a batch after ``batch`` (-1: before its first)."""
    return committed is not None and committed > batch


def _names(storage: Any, directory: str) -> list[str]:
    """The names in ``directory`` (none when it is not there)."""
    return [i.name for i in storage.list(directory)] if storage.exists(directory) else []


def _session_partitions(spark: Any, default: int) -> int:
    """The shuffle partitions the session runs with (the script may have set them)."""
    try:
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
    except Exception:
        return default
