"""A query's graph, built from what both flavours of Spark give: its physical plan as Spark
explains it (``StreamingQuery.explain()``'s text, the same over py4j and over Spark Connect),
its progress report, and Spark's metadata of its stateful operators.

No Spark here: the driver (:mod:`flinkish_cli.runtime.explain.graphs`) fetches the three and hands
them over; the unit tests hand over what a real Spark 4.3 wrote (``tests/fixtures/plans/``).
The text is read by :mod:`flinkish_cli.runtime.explain.spark_plan`.

How a plan becomes a graph, as a Flink user reads one:

- **Nodes** are the operators that shape the stream: each leaf (a streaming source, matched to
  Spark's reported sources in the order Spark lists both, or a static input), each
  ``EventTimeWatermark``, each stateful operator (aggregation, deduplication, stream-stream
  join, session window, ``flatMapGroupsWithState``/``applyInPandasWithState``,
  ``transformWithState``, streaming limit) with its operator id and state partitions from the
  plan's ``state info``, each join or union of streams, and the sink (from the progress
  report: Spark's v1 sinks, ``foreachBatch`` and files among them, are not in the plan).
- **Chaining**: every other operator (projections, filters, partial aggregates, sorts, the
  restore half of an aggregation) is chained into a node next to it, as Flink chains
  operators into a task: after an exchange, into the operator that reads it; otherwise into
  the operator that feeds it.
- **Edges** carry the exchanges (Spark's shuffles) between nodes: ``hashpartitioning`` is
  Flink's ``HASH`` with its keys and partitions, ``BroadcastExchange`` ``BROADCAST``,
  ``roundrobinpartitioning`` ``REBALANCE``, ``SinglePartition`` ``GLOBAL``,
  ``rangepartitioning`` ``RANGE``; without one, ``FORWARD``. The inputs of a join are its
  left and right sides.
- **Stores**: each stateful operator's store names (and ``transformWithState``'s state
  variables) are Spark's own record of them (``state/<opId>/_metadata``), never a list kept
  here.

Without a plan (the query has not planned a batch yet, or Spark would not explain it) the
graph is built from the progress report alone: its sources, its stateful operators in the
order data meets them (the operator ids from Spark's metadata where its operator names tell),
and its sink, in a row, marked incomplete.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.registry.graph import (
    FORWARD,
    JOIN,
    MAX_PLAN,
    OPERATOR,
    SINK,
    SOURCE,
    STATEFUL,
    STATIC,
    UNION,
    WATERMARK,
    Edge,
    Node,
    QueryGraph,
)
from flinkish_cli.runtime.explain.spark_plan import (
    JOINS,
    PlanNode,
    exchange_of,
    join_keys,
    join_type,
    parse_plan,
    path_of,
    readable,
    short_kind,
    state_info,
    stateful_description,
    watermark_of,
)
from flinkish_cli.state.metadata import OperatorMetadata

#: Spark's stateful physical operators: what a user calls each.
STATEFUL_OPERATORS = {
    "StateStoreSave": "Aggregation",
    "SessionWindowStateStoreSave": "Session window aggregation",
    "StreamingDeduplicate": "Deduplication",
    "StreamingDeduplicateWithinWatermark": "Deduplication within watermark",
    "StreamingSymmetricHashJoin": "Stream-stream join",
    "FlatMapGroupsWithState": "flatMapGroupsWithState",
    "FlatMapGroupsInPandasWithState": "applyInPandasWithState",
    "TransformWithState": "transformWithState",
    "TransformWithStateInPandas": "transformWithStateInPandas",
    "TransformWithStateInPySpark": "transformWithState",
    "StreamingGlobalLimit": "Streaming limit",
}
EXCHANGES = ("Exchange", "BroadcastExchange")
#: The roots Spark puts above a query's plan for its v2 sinks (the sink node stands for them).
SINK_WRITES = ("WriteToDataSourceV2", "WriteToMicroBatchDataSource", "WriteToContinuousDataSource")
#: Spark's progress names of the stateful operators, by the physical operator reporting them.
PROGRESS_NAMES = {
    "StateStoreSave": "stateStoreSave",
    "SessionWindowStateStoreSave": "sessionWindowStateStoreSaveExec",
    "StreamingDeduplicate": "dedupe",
    "StreamingDeduplicateWithinWatermark": "dedupeWithinWatermark",
    "StreamingSymmetricHashJoin": "symmetricHashJoin",
    "StreamingGlobalLimit": "globalLimit",
}


@dataclass
class _Stream:
    """What leaves a subtree: the node producing it, the exchange it passed (if any) and
    the operators it passed since (or since its producer, when none)."""

    producer: str
    exchange: tuple[str, tuple[str, ...], int | None] | None = None
    passed: list[str] = field(default_factory=list)


class _Builder:
    def __init__(
        self,
        progress: dict[str, Any],
        operators: dict[int, tuple[int, str, tuple[str, ...], tuple[str, ...]]],
    ) -> None:
        self.progress = progress
        self.operators = operators
        self.nodes: dict[str, Node] = {}
        self.chains: dict[str, list[str]] = {}
        self.before: dict[str, list[str]] = {}
        self.edges: list[Edge] = []
        self.counts: dict[str, int] = {}
        sources = [s for s in progress.get("sources") or [] if isinstance(s, dict)]
        self.sources = [str(s.get("description") or "") for s in sources]

    def key(self, kind: str) -> str:
        number = self.counts.get(kind, 0)
        self.counts[kind] = number + 1
        return f"{kind}-{number}"

    def add(self, node: Node) -> str:
        self.nodes[node.key] = node
        self.chains[node.key] = [node.operator] if node.operator else []
        self.before[node.key] = []
        return node.key

    def connect(self, stream: _Stream, target: str, side: str | None) -> None:
        if stream.exchange is None:  # no exchange between them: chained into the producer
            self.chains[stream.producer] += stream.passed
            self.edges.append(Edge(stream.producer, target, FORWARD, side=side))
            return
        strategy, keys, partitions = stream.exchange
        self.before[target] += stream.passed  # after the exchange: the reader's
        self.edges.append(Edge(stream.producer, target, strategy, keys, partitions, side))

    def walk(self, plan: PlanNode, leaves: dict[int, int | None]) -> list[_Stream]:
        if plan.name in EXCHANGES and len(plan.children) == 1:
            exchange = exchange_of(plan)
            streams = self.walk(plan.children[0], leaves)
            for stream in streams:
                if stream.exchange is None:
                    self.chains[stream.producer] += stream.passed
                stream.exchange, stream.passed = exchange, []
            return streams
        node = self.node_of(plan, leaves)
        if node is None:  # chained: passes what its child produces
            streams = [s for child in plan.children for s in self.walk(child, leaves)]
            for stream in streams:
                stream.passed.append(plan.name)
            return streams
        key = self.add(node)
        two = len(plan.children) == 2 and plan.name in (*JOINS, "StreamingSymmetricHashJoin")
        sides = ("left", "right") if two else None
        for index, child in enumerate(plan.children):
            for stream in self.walk(child, leaves):
                self.connect(stream, key, sides[index] if sides else None)
        return [_Stream(key)]

    def node_of(self, plan: PlanNode, leaves: dict[int, int | None]) -> Node | None:
        """The graph's node for a plan node, or None when it is chained."""
        if not plan.children:
            return self.leaf(plan, leaves.get(id(plan)))
        if plan.name in STATEFUL_OPERATORS:
            return self.stateful(plan)
        if plan.name == "EventTimeWatermark":
            return Node(
                self.key(WATERMARK), WATERMARK, "Watermark", plan.name, watermark_of(plan.text)
            )
        if plan.name == "Union":
            return Node(self.key(UNION), UNION, "Union", plan.name)
        if plan.name in JOINS:
            how = join_type(plan.text)
            label = f"Join ({how})" if how else "Join"
            return Node(self.key(JOIN), JOIN, label, plan.name, readable(join_keys(plan.text)))
        if len(plan.children) > 1:
            return Node(self.key(OPERATOR), OPERATOR, plan.name, plan.name, readable(plan.text))
        return None

    def leaf(self, plan: PlanNode, source: int | None) -> Node | None:
        if source is not None:
            description = self.sources[source]
            return Node(
                self.key(SOURCE),
                SOURCE,
                f"Source: {short_kind(description)}",
                plan.name,
                description,
                source=source,
            )
        if plan.name in ("MicroBatchScan", "ContinuousScan"):  # a source read twice
            kind = re.search(r"class (\S+)", plan.text)
            name = short_kind(kind.group(1).split("$", 1)[0]) if kind else plan.name
            return Node(self.key(SOURCE), SOURCE, f"Source: {name}", plan.name, name)
        if "<empty>" in plan.text:  # an empty relation (no initial state given): no input
            return None
        return Node(
            self.key(STATIC), STATIC, f"Static: {plan.name}", plan.name, readable(plan.text)
        )

    def stateful(self, plan: PlanNode) -> Node:
        label = STATEFUL_OPERATORS[plan.name]
        operator_id, partitions = state_info(plan)
        stores: tuple[str, ...] = ()
        variables: tuple[str, ...] = ()
        if operator_id is not None and operator_id in self.operators:
            _, _, stores, variables = self.operators[operator_id]
        if plan.name == "StreamingSymmetricHashJoin":
            how = join_type(plan.text)
            label = f"{label} ({how})" if how else label
        return Node(
            self.key(STATEFUL),
            STATEFUL,
            label,
            plan.name,
            stateful_description(plan),
            operator_id=operator_id,
            partitions=partitions,
            stores=stores,
            state_variables=variables,
        )

    def finish(self, streams: list[_Stream]) -> None:
        """The sink, which every stream leaving the plan's root flows into."""
        sink = self.progress.get("sink") if isinstance(self.progress.get("sink"), dict) else {}
        description = str(sink.get("description") or "")
        key = self.add(
            Node("sink", SINK, f"Sink: {short_kind(description) or 'unknown'}", "", description)
        )
        for stream in streams:
            self.connect(stream, key, None)

    def graph(self, stateful_order: list[str]) -> tuple[list[Node], list[Edge]]:
        order = {key: index for index, key in enumerate(stateful_order)}
        nodes = []
        for key, node in self.nodes.items():
            chain = tuple(self.before[key] + self.chains[key])
            nodes.append(dataclasses.replace(node, chain=chain, stateful=order.get(key)))
        return nodes, self.edges


def build(
    plan_text: str | None,
    progress: dict[str, Any],
    operators: list[OperatorMetadata] | None = None,
    recorded: int = 0,
) -> QueryGraph:
    """A query's graph from its explained plan (None: none to be had), its latest progress
    report and Spark's metadata of its stateful operators
    (:func:`flinkish_cli.state.metadata.read_operator`)."""
    known = {
        meta.operator_id: (
            meta.operator_id,
            meta.name,
            tuple(meta.stores),
            tuple(
                f"{v['stateName']} ({v.get('stateVariableType', '?')})"
                for v in meta.state_variables
            ),
        )
        for meta in operators or []
    }
    run_id = progress.get("runId")
    batch = progress.get("batchId")
    plan = parse_plan(plan_text) if plan_text else None
    builder = _Builder(progress, known)
    if plan is None:
        nodes, edges = _from_progress(builder)
        complete = False
    else:
        root = plan
        while root.name in SINK_WRITES and len(root.children) == 1:
            root = root.children[0]
        leaves = _match_sources(root, builder.sources)
        builder.finish(builder.walk(root, leaves))
        # nodes are met from the sink down, as Spark lists its stateOperators (a pre-order)
        nodes, edges = builder.graph([k for k, n in builder.nodes.items() if n.kind == STATEFUL])
        complete = True
    return QueryGraph(
        run_id=str(run_id) if run_id else None,
        batch=int(batch) if isinstance(batch, int) else None,
        recorded=recorded,
        complete=complete,
        nodes=nodes,
        edges=edges,
        plan=plan_text[:MAX_PLAN] if plan_text and plan is not None else None,
    )


def _from_progress(builder: _Builder) -> tuple[list[Node], list[Edge]]:
    """Sources, stateful operators in the order data meets them, and the sink, in a row."""
    reported = [op for op in builder.progress.get("stateOperators") or [] if isinstance(op, dict)]
    by_name: dict[str, list[int]] = {}
    for operator_id, name, _, _ in sorted(builder.operators.values()):
        by_name.setdefault(name, []).append(operator_id)
    sources = [
        builder.add(
            Node(
                builder.key(SOURCE),
                SOURCE,
                f"Source: {short_kind(description)}",
                "",
                description,
                source=index,
            )
        )
        for index, description in enumerate(builder.sources)
    ]
    previous = sources
    stateful_order = []
    for index in reversed(range(len(reported))):
        name = str(reported[index].get("operatorName") or "")
        ids = by_name.get(name) or []
        operator_id = ids.pop() if ids else None
        stores: tuple[str, ...] = ()
        variables: tuple[str, ...] = ()
        if operator_id is not None:
            _, _, stores, variables = builder.operators[operator_id]
        partitions = reported[index].get("numShufflePartitions")
        key = builder.add(
            Node(
                builder.key(STATEFUL),
                STATEFUL,
                _progress_label(name),
                "",
                name,
                operator_id=operator_id,
                partitions=partitions if isinstance(partitions, int) else None,
                stores=stores,
                state_variables=variables,
            )
        )
        stateful_order.append((index, key))
        for producer in previous:
            builder.edges.append(Edge(producer, key))
        previous = [key]
    builder.finish([_Stream(producer) for producer in previous])
    order = {key: index for index, key in stateful_order}
    nodes = [
        dataclasses.replace(node, stateful=order.get(key)) for key, node in builder.nodes.items()
    ]
    return nodes, builder.edges


def _progress_label(name: str) -> str:
    for operator, reported in PROGRESS_NAMES.items():
        if reported == name:
            return STATEFUL_OPERATORS[operator]
    return name or "Stateful operator"


def _match_sources(root: PlanNode, sources: list[str]) -> dict[int, int | None]:
    """Which leaf of the plan each reported source is: Spark lists its sources and the plan
    its leaves in the same order (left before right). A micro-batch scan is a streaming
    source; a v1 source (files) is a batch scan in the plan, of its source's files (or an
    empty relation when the batch has none), found by its path."""
    leaves = [node for node in root.preorder() if not node.children]
    matched: dict[int, int | None] = {}
    taken: set[int] = set()
    for index, description in enumerate(sources):
        chosen = None
        path = path_of(description)
        for position, leaf in enumerate(leaves):
            if position in taken:
                continue
            if leaf.name in ("MicroBatchScan", "ContinuousScan") and path is None:
                chosen = position
                break
            if path is not None and (path in leaf.text or "<empty>" in leaf.text):
                chosen = position
                break
        if chosen is None:  # a v1 source of another kind: the first leaf not yet matched
            chosen = next(
                (p for p, leaf in enumerate(leaves) if p not in taken and leaf.name != "PlanLater"),
                None,
            )
        if chosen is not None:
            taken.add(chosen)
            matched[id(leaves[chosen])] = index
    return matched
