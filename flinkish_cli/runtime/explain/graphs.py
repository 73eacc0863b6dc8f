"""The driver records each query's graph when the query starts a new run.

Who and when: Spark's listener tells (:meth:`GraphRecorder.progressed`, on the listener's
thread, which only takes note) that a query reported a batch of a run whose graph is not
recorded yet: its first batch after it started or restarted. The driver's watcher thread
(the one that may wait on Spark) then records it (:meth:`GraphRecorder.record_pending`):

1. Spark's physical plan of the query's last batch, through the flavour
   (:meth:`~flinkish_cli.runtime.flavours.flavour.Flavour.explain`: py4j in a classic driver, a
   Spark Connect command in a session cluster; the same text);
2. Spark's metadata of its stateful operators, ``<checkpoint>/state/<opId>/_metadata``, read
   from the query's checkpoint as footprints are (a few small files, once per run);
3. the graph built from them and the batch's progress report
   (:func:`~flinkish_cli.runtime.explain.graph_builder.build`), written to the registry's
   ``graph.json`` (:mod:`flinkish_cli.registry.graph`) when it differs from the one kept.

A query that has not planned a batch yet gets the graph its progress report alone gives,
and its plan's graph at a later batch. Nothing here can fail the job: a failure is one line
in its log, and the graph is tried again at the query's next batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flinkish_cli.registry import graph as graph_file
from flinkish_cli.registry.graph import QueryGraph
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.explain.graph_builder import build
from flinkish_cli.runtime.flavours.flavour import Flavour

if TYPE_CHECKING:
    from flinkish_cli.state.metadata import OperatorMetadata

log = logging.getLogger("flinkish.runtime")

#: Where a query's checkpoint is: (its storage, its directory), or None when unknown.
CheckpointOf = Callable[[str], "tuple[Any, str] | None"]


class GraphRecorder:
    """The job's graph, as its driver records it."""

    def __init__(
        self, registry: JobRegistry, job_id: str, flavour: Flavour, checkpoint_of: CheckpointOf
    ) -> None:
        self.registry = registry
        self.job_id = job_id
        self.flavour = flavour
        self.checkpoint_of = checkpoint_of
        self.graph = graph_file.read(registry, job_id)  # a restarted driver goes on from it
        self._pending: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._failing: set[str] = set()

    def progressed(self, identity: str, progress: dict[str, Any]) -> None:
        """A query reported a batch (Spark's listener): note it if its run has no graph yet."""
        kept = self.graph.queries.get(identity)
        if kept is not None and kept.complete and kept.run_id == progress.get("runId"):
            return
        with self._lock:
            self._pending[identity] = progress

    def record_pending(self, handles: dict[str, Any]) -> None:
        """Record the graph of every query noted since the last call (the watcher's thread)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        changed = False
        for identity, progress in pending.items():
            try:
                built = self._build(identity, handles.get(identity), progress)
            except Exception as error:  # a graph is never worth the job
                if identity not in self._failing:
                    log.warning("Could not record the graph of query '%s': %s", identity, error)
                self._failing.add(identity)
                continue
            self._failing.discard(identity)
            kept = self.graph.queries.get(identity)
            if kept is not None and kept.run_id == built.run_id and kept.complete:
                continue  # recorded meanwhile
            if kept is not None and _same(kept, built):
                continue
            self.graph.queries[identity] = built
            changed = True
            log.info(
                "Query '%s': its graph has %d operators (%s).",
                identity,
                len(built.nodes),
                "from Spark's plan" if built.complete else "from its progress; no plan yet",
            )
        if changed:
            try:
                graph_file.write(self.registry, self.job_id, self.graph)
            except Exception as error:
                log.warning("Could not write the job's graph: %s", error)
                with self._lock:  # try again at the next look
                    for identity, progress in pending.items():
                        self._pending.setdefault(identity, progress)

    def _build(self, identity: str, handle: Any, progress: dict[str, Any]) -> QueryGraph:
        plan = self.flavour.explain(handle) if handle is not None else None
        return build(plan, progress, self._operators(identity), int(time.time() * 1000))

    def _operators(self, identity: str) -> list[OperatorMetadata]:
        """Spark's metadata of the query's stateful operators, as of its newest batch."""
        from flinkish_cli.state.metadata import read_operator, stateful_operators

        where = self.checkpoint_of(identity)
        if where is None:
            return []
        storage, checkpoint = where
        found = (
            read_operator(storage, checkpoint, op) for op in stateful_operators(storage, checkpoint)
        )
        return [meta for meta in found if meta is not None]


def _same(kept: QueryGraph, built: QueryGraph) -> bool:
    """The same graph, whenever and at whichever batch it was recorded."""
    first, second = kept.to_dict(), built.to_dict()
    for volatile in ("recorded", "batch", "plan"):
        first.pop(volatile)
        second.pop(volatile)
    return first == second
