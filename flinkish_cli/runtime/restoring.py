"""Restoring a job's queries inside its driver, from a savepoint or retained checkpoint.

The CLI has already checked the source (:func:`flinkish_cli.savepoints.restore.plan_restore`);
here, just before the job's queries start, the driver reads it again (HDFS is only reachable
from here), matches its queries to the job's, copies each query's state into the job's own
checkpoint directory, repartitions it when the parallelism changed, and, in ``claim`` mode,
deletes the source once the job has committed its own first checkpoints.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flinkish_cli.submission.plan import JobPlan

log = logging.getLogger("flinkish.runtime")


class JobRestorer:
    """The restore of one job (nothing happens when the job starts fresh)."""

    def __init__(self, plan: JobPlan, target: Any, settings: Any) -> None:
        self.plan = plan
        self.target = target  # the storage of the job's checkpoints
        self.settings = settings
        self.source: Any = None  # RestoreSource, read when the first query starts
        self.source_storage: Any = None
        self.restored: dict[str, int] = {}  # query name -> the batch it resumed after
        self._claimed = False

    def before_start(self, names: list[str]) -> None:
        """Read the source and check that the job's queries match it."""
        restore = self.plan.restore
        if restore is None or self.source is not None:
            return
        from flinkish_cli.savepoints.restore import match_queries, open_source
        from flinkish_cli.storage import open_storage

        self.source_storage = open_storage(restore.source, self.settings)
        self.source = open_source(self.source_storage, restore.source)
        match_queries(self.source.manifest, names, restore.allow_non_restored_state)

    def restore_query(self, name: str, checkpoint: str, spark: Any) -> None:
        """Put the query's state into ``checkpoint`` (once, and never over newer state)."""
        from flinkish_cli.savepoints.restore import check_rescale, repartition, restore_query

        if self.source is None or name in self.restored:
            return
        query = self.source.manifest.query(name)
        if query is None or self.target.exists(checkpoint):
            return  # no state for it, or a restart: the job's own checkpoint is newer
        restore_query(self.source_storage, self.source, name, self.target, checkpoint)
        self.restored[name] = query.last_committed_batch
        backend = str(self.plan.flink_conf.get("state.backend.type", "hashmap")).lower()
        if name in check_rescale(self.source.manifest, self.plan.parallelism, backend):
            log.info(
                "Repartitioning the state of query '%s' from %s to %s partitions.",
                name,
                query.shuffle_partitions,
                self.plan.parallelism,
            )
            repartition(spark, checkpoint, self.plan.parallelism)
            self.restored[name] += 1

    def claim_if_done(self, last_batches: dict[str, int | None]) -> None:
        """``claim``: once every restored query has committed a new batch, delete the source."""
        restore = self.plan.restore
        if self._claimed or self.source is None or not restore or restore.claim_mode != "claim":
            return
        if not all((last_batches.get(name) or -1) > batch for name, batch in self.restored.items()):
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
