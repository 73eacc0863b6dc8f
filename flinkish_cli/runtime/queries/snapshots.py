"""Savepoints and checkpoints of a running job, taken inside its driver.

A savepoint copies every query's checkpoint at its last committed micro-batch
(:func:`flinkish_cli.savepoints.create.take_savepoint`) while the queries run on. A
checkpoint, as Flink's ``flink checkpoint`` asks for one, is the next committed batch of
every active query: Spark commits one per trigger, so :meth:`Snapshots.wait_for_checkpoint`
waits for it rather than forcing one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.history import (
    SavepointHistory,
    SavepointRecord,
    SavepointState,
    Trigger,
)
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime import faults
from flinkish_cli.runtime.queries.queries import JobQueries
from flinkish_cli.runtime.status_keeper import StatusKeeper
from flinkish_cli.savepoints.retention import Retention
from flinkish_cli.spark.failures import short_cause

log = logging.getLogger("flinkish.runtime")


class Snapshots:
    """Takes the job's savepoints and waits for its checkpoints."""

    def __init__(
        self,
        plan: JobPlan,
        registry: JobRegistry,
        settings: Any,
        queries: JobQueries,
        keeper: StatusKeeper,
        retention: Retention | None = None,
    ) -> None:
        self.plan = plan
        self.keeper = keeper
        self.retention = retention
        self.registry = registry
        self.settings = settings
        self.queries = queries

    def take_savepoint(
        self, target_dir: str, trigger: Trigger = Trigger.MANUAL, explicit_target: bool = False
    ) -> str:
        """A savepoint of every query at its last committed batch (the job may be running),
        recorded in the job's savepoint history, COMPLETED or FAILED."""
        import pyspark

        from flinkish_cli.savepoints.create import take_savepoint
        from flinkish_cli.savepoints.manifest import load_manifest
        from flinkish_cli.storage import open_storage

        queries = self.queries
        target = open_storage(target_dir, self.settings)
        try:
            path = take_savepoint(
                self.registry.storage,
                queries.checkpoint_dirs(),
                target,
                target_dir,
                self.plan.job_id,
                self.plan.name,
                pyspark.__version__,
                before_copy=lambda: faults.inject("savepoint-snapshot", self.plan.attempt),
                shapes={
                    name: query.shape.to_text()
                    for name, query in queries.identities.items()
                    if query.generated and name in queries.handles
                },
            )
        except BaseException as error:
            self._remember(
                SavepointRecord(
                    self.plan.job_id,
                    trigger,
                    SavepointState.FAILED,
                    target_dir,
                    explicit_target=explicit_target,
                    cause=short_cause(error),
                )
            )
            self._retain(prune_only=True)  # failed records are bounded too
            raise
        log.info("Savepoint completed: %s", path)
        record = SavepointRecord(
            self.plan.job_id,
            trigger,
            SavepointState.COMPLETED,
            path,
            explicit_target=explicit_target,
        )
        try:  # what the manifest says; the savepoint stands even if this cannot be read
            manifest = load_manifest(target, path, "The savepoint is complete")
            record.size = sum(entry.size for entry in manifest.files)
            record.batches = {q.name: q.last_committed_batch for q in manifest.queries}
        except Exception as error:
            log.warning("Could not read the manifest of savepoint %s: %s", path, error)
        self._remember(record)
        self._retain(directory=target_dir)
        return path

    def _retain(self, prune_only: bool = False, directory: str | None = None) -> None:
        """Dispose of the savepoints past the retention (never this one, the newest), bound
        the history by the same count and age (after a failed savepoint, only that), and
        sweep what killed drivers left incomplete in ``directory``, where this one went."""
        if self.retention is None:
            return
        from flinkish_cli.savepoints.retention import apply_retention, prune_history
        from flinkish_cli.storage import open_storage

        history = SavepointHistory(self.registry)
        try:
            if prune_only:
                prune_history(history, self.plan.job_id, self.retention)
            else:
                apply_retention(
                    history,
                    self.plan.job_id,
                    self.retention,
                    lambda path: open_storage(path, self.settings),
                )
                self._sweep(history, directory)
        except Exception as error:  # retention never fails a savepoint or the job
            log.warning("Savepoint retention failed: %s", error)

    def _sweep(self, history: SavepointHistory, directory: str | None) -> None:
        from flinkish_cli.savepoints.retention import sweep_abandoned
        from flinkish_cli.storage import open_storage

        if directory is None:
            return
        lineage = history.lineage(self.plan.job_id)  # the job, and those it replaced
        sweep_abandoned(open_storage(directory, self.settings), directory, lineage)

    def _remember(self, record: SavepointRecord) -> None:
        """Write a record of the history; a storage problem costs the record, never the job."""
        try:
            SavepointHistory(self.registry).record(record)
        except Exception as error:
            log.warning("Could not record savepoint %s in the history: %s", record.path, error)

    def wait_for_checkpoint(self, timeout: float, ending: Callable[[], bool]) -> dict[str, int]:
        """Wait until every active query has committed a batch newer than now; each query's
        last committed batch. :class:`JobError` when the job starts ending (``ending()``)
        or none completes within ``timeout`` seconds.

        Spark runs no batch while there is no new input: a query that is idle with all its
        input committed is already at a complete checkpoint, its last committed batch.
        """
        queries = self.queries
        start = {
            name: queries.last_batch(name)
            for name, query in list(queries.handles.items())
            if query.isActive
        }
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = {name: queries.last_batch(name) for name in start}
            if all(
                b is not None and (start[n] is None or b > start[n] or self._idle(n))
                for n, b in now.items()
            ):
                return {n: int(b) for n, b in now.items() if b is not None}
            if ending():
                raise JobError(f"Job {self.plan.job_id} is ending; no further checkpoint.")
            time.sleep(0.1)
        raise JobError(f"No checkpoint completed within {timeout:.0f} s.")

    def _idle(self, name: str) -> bool:
        """The query waits for input and has committed everything it has read."""
        try:
            status = self.queries.handles[name].status
        except Exception:
            return False
        return not status.get("isDataAvailable") and not status.get("isTriggerActive")
