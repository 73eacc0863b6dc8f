"""The job graph as the registry keeps it: each query's plan as a graph of operators,
recorded by the job's driver when the query (re)starts::

    <root>/<JobID>/_flinkish/graph.json
    {"version": 1, "queries": {"<query>": {"run_id": ..., "nodes": [...], "edges": [...], ...}}}

A query's graph changes only when the query starts again (a new run of it: a restart, a
resumed job, the program starting it anew), so the file is written then (and once more when
a query's plan comes after its first batch: a graph from its progress report until then);
the figures that change every batch live in the status (:mod:`flinkish_cli.registry.batch_figures`)
and are joined to the graph when it is read (:mod:`flinkish_cli.registry.graph_view`).

A :class:`Node` is an operator as a Flink user reads a job graph: a source (with the index of
its figures among Spark's reported sources), a watermark, a stateful operator (its operator
id, state partitions, store names, and the index of its figures among Spark's
``stateOperators``), a join or union of streams, a static input, and the sink. Stateless
operators are chained into the node next to them (:attr:`Node.chain`), as Flink chains
operators into a task. An :class:`Edge` is what flows between two nodes: forwarded, or
exchanged (Spark's shuffle: ``HASH`` on its keys into its partitions, ``BROADCAST``,
``REBALANCE``, ``GLOBAL``, ``RANGE``), with the side of a join it feeds.

Each node has an id stable across runs of the same plan: 32 hex digits (Flink's id form)
derived from the JobID, the query and the node's key (:func:`node_id`); Flink's plan and
flinkish's document both use it.

Reading is forgiving, as the series': a damaged or foreign file is an empty graph, so one bad
file never takes the REST API or the dashboard down.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.errors import StorageError
from flinkish_cli.registry.names import is_query_name
from flinkish_cli.registry.store import JobRegistry

GRAPH_FILE = "graph.json"
VERSION = 1
#: The longest physical plan (Spark's explain text) kept with a query's graph.
MAX_PLAN = 64 * 1024

#: The kinds of node.
SOURCE, STATIC, WATERMARK, STATEFUL, JOIN, UNION, OPERATOR, SINK = (
    "source",
    "static",
    "watermark",
    "stateful",
    "join",
    "union",
    "operator",
    "sink",
)
KINDS = (SOURCE, STATIC, WATERMARK, STATEFUL, JOIN, UNION, OPERATOR, SINK)
#: How rows travel along an edge (Flink's ship strategies).
FORWARD, HASH, BROADCAST, REBALANCE, GLOBAL, RANGE = (
    "FORWARD",
    "HASH",
    "BROADCAST",
    "REBALANCE",
    "GLOBAL",
    "RANGE",
)
SHIP_STRATEGIES = (FORWARD, HASH, BROADCAST, REBALANCE, GLOBAL, RANGE)


@dataclass(frozen=True)
class Node:
    """One operator of a query's graph."""

    #: unique within the query ("source-0", "stateful-1", "sink"): what :func:`node_id` hashes
    key: str
    kind: str
    #: what a user reads: "Stream-stream join (Inner)", "Source: RateStreamV2"
    label: str
    #: Spark's physical operator ("StreamingSymmetricHashJoin", "MicroBatchScan")
    operator: str = ""
    #: the details: a source's description, keys, a join's condition, a watermark's delay
    description: str = ""
    #: Spark's operators chained into this node, in the order rows pass them (its own too)
    chain: tuple[str, ...] = ()
    #: a stateful operator's id (its ``state/<id>/`` directory), partitions and stores
    operator_id: int | None = None
    partitions: int | None = None
    stores: tuple[str, ...] = ()
    #: ``transformWithState``'s state variables ("count (ValueState)")
    state_variables: tuple[str, ...] = ()
    #: where its figures are in the batch's report: a source's index, a stateful operator's
    source: int | None = None
    stateful: int | None = None


@dataclass(frozen=True)
class Edge:
    """Rows flowing from node ``source`` to node ``target`` (their keys)."""

    source: str
    target: str
    ship_strategy: str = FORWARD
    #: the exchange's keys (HASH, RANGE) and partitions
    keys: tuple[str, ...] = ()
    partitions: int | None = None
    #: the side of a join this edge feeds ("left", "right"), if it feeds a join
    side: str | None = None


@dataclass
class QueryGraph:
    """One query's graph, as its driver recorded it for one run of the query."""

    run_id: str | None
    #: the batch whose plan it is, and when it was recorded (epoch ms)
    batch: int | None
    recorded: int
    #: True when built from Spark's physical plan; False when from the progress report alone
    #: (no plan yet, or none to be had): its sources, stateful operators and sink in a row
    complete: bool
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    #: Spark's physical plan as it explained it (cut to :data:`MAX_PLAN` characters)
    plan: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> QueryGraph | None:
        """A query's graph from the file; None when it is not one."""
        if not isinstance(data, dict):
            return None
        try:
            nodes = [_node(n) for n in data["nodes"]]
            edges = [_edge(e) for e in data["edges"]]
        except (KeyError, TypeError, ValueError):
            return None
        keys = {n.key for n in nodes}
        dangling = any(e.source not in keys or e.target not in keys for e in edges)
        if len(keys) != len(nodes) or dangling:
            return None
        run_id, batch, plan = data.get("run_id"), data.get("batch"), data.get("plan")
        return cls(
            run_id=run_id if isinstance(run_id, str) else None,
            batch=batch if isinstance(batch, int) and not isinstance(batch, bool) else None,
            recorded=_whole(data.get("recorded")) or 0,
            complete=data.get("complete") is True,
            nodes=nodes,
            edges=edges,
            plan=plan[:MAX_PLAN] if isinstance(plan, str) else None,
        )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    return value


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError("not a list")
    return tuple(_text(v) for v in value)


def _whole(value: Any, default: int | None = None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _node(data: Any) -> Node:
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise ValueError("not a node")
    return Node(
        key=_text(data["key"]),
        kind=data["kind"],
        label=_text(data.get("label", "")),
        operator=_text(data.get("operator", "")),
        description=_text(data.get("description", "")),
        chain=_texts(data.get("chain", [])),
        operator_id=_whole(data.get("operator_id")),
        partitions=_whole(data.get("partitions")),
        stores=_texts(data.get("stores", [])),
        state_variables=_texts(data.get("state_variables", [])),
        source=_whole(data.get("source")),
        stateful=_whole(data.get("stateful")),
    )


def _edge(data: Any) -> Edge:
    if not isinstance(data, dict) or data.get("ship_strategy", FORWARD) not in SHIP_STRATEGIES:
        raise ValueError("not an edge")
    side = data.get("side")
    return Edge(
        source=_text(data["source"]),
        target=_text(data["target"]),
        ship_strategy=data.get("ship_strategy", FORWARD),
        keys=_texts(data.get("keys", [])),
        partitions=_whole(data.get("partitions")),
        side=side if side in ("left", "right") else None,
    )


@dataclass
class JobGraph:
    """Every query's graph, by query identity."""

    queries: dict[str, QueryGraph] = field(default_factory=dict)

    def to_json(self) -> str:
        document = {
            "version": VERSION,
            "queries": {name: graph.to_dict() for name, graph in self.queries.items()},
        }
        return json.dumps(document, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> JobGraph:
        """The graph in ``text``; an empty one when it is not a job graph (damaged, foreign);
        a query whose graph is damaged is left out."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return cls()
        queries = data.get("queries")
        if not isinstance(queries, dict):
            return cls()
        graphs = {name: QueryGraph.from_dict(graph) for name, graph in queries.items()}
        return cls({name: g for name, g in graphs.items() if g is not None and is_query_name(name)})


def node_id(job_id: str, query: str, key: str) -> str:
    """A node's id: 32 hex digits (Flink's form), the same for the same node of the same
    query of the job across runs and restarts."""
    return hashlib.md5(f"{job_id}/{query}/{key}".encode(), usedforsecurity=False).hexdigest()


def _path(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), GRAPH_FILE)


def read(registry: JobRegistry, job_id: str) -> JobGraph:
    """The job's graph; empty when it has none or the file cannot be read."""
    try:
        return JobGraph.from_json(registry.storage.read_text(_path(registry, job_id)))
    except (OSError, ValueError, StorageError):  # missing, not text, storage down: no graph
        return JobGraph()


def write(registry: JobRegistry, job_id: str, graph: JobGraph) -> None:
    """Replace the job's graph file (only its driver does, when a query starts a new run)."""
    registry.storage.write_text(_path(registry, job_id), graph.to_json())
