"""A query's graph, built from what a real Spark 4.3 gave (``tests/fixtures/plans/``, written
by its ``capture.py``): the physical plan as Spark explains it, the query's progress report
and Spark's metadata of its stateful operators. No Spark here: the builder is pure.

One plan per kind of operator the graph knows, each checked for what a Flink user reads in a
job graph: the sources (matched to Spark's reported sources), the stateful operators with
their operator id, state partitions and store names, the exchanges on the edges, the sink.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flinkish_cli.registry.graph import QueryGraph
from flinkish_cli.runtime.explain.graph_builder import build
from flinkish_cli.runtime.explain.spark_plan import parse_plan
from flinkish_cli.state.metadata import parse_metadata

PLANS = Path(__file__).parents[2] / "fixtures" / "plans"
JOIN_STORES = (
    "left-keyToNumValues",
    "left-keyWithIndexToValue",
    "right-keyToNumValues",
    "right-keyWithIndexToValue",
)


def _captured(name: str, plan: bool = True) -> QueryGraph:
    operators = PLANS / f"{name}.operators.json"
    return build(
        (PLANS / f"{name}.plan.txt").read_text() if plan else None,
        json.loads((PLANS / f"{name}.progress.json").read_text()),
        [parse_metadata(t) for t in json.loads(operators.read_text()).values()]
        if operators.exists()
        else [],
    )


def _by_key(graph: QueryGraph) -> dict:
    return {node.key: node for node in graph.nodes}


def _edges(graph: QueryGraph) -> set[tuple]:
    return {
        (e.source, e.target, e.ship_strategy, e.keys, e.partitions, e.side) for e in graph.edges
    }


def test_a_stream_stream_join_has_two_sources_with_watermarks_exchanged_by_key() -> None:
    graph = _captured("join")
    nodes = _by_key(graph)
    assert graph.complete and graph.run_id and graph.batch is not None
    assert sorted(nodes) == [
        "sink",
        "source-0",
        "source-1",
        "stateful-0",
        "watermark-0",
        "watermark-1",
    ]
    join = nodes["stateful-0"]
    assert join.label == "Stream-stream join (Inner)"
    assert (join.operator_id, join.partitions, join.stores) == (0, 2, JOIN_STORES)
    assert join.description.startswith("adId = clickAdId; condition ((clickTime >= impressionTime)")
    assert join.stateful == 0, "the join's figures are Spark's first stateOperators entry"
    assert nodes["watermark-0"].description == "impressionTime, delay 10 seconds"
    assert nodes["watermark-1"].description == "clickTime, delay 20 seconds"
    assert (nodes["source-0"].source, nodes["source-1"].source) == (0, 1)
    assert nodes["source-0"].label == "Source: RateStreamV2"
    assert nodes["source-0"].chain[0] == "MicroBatchScan"
    assert nodes["sink"].label == "Sink: MemorySink"
    assert _edges(graph) == {
        ("source-0", "watermark-0", "FORWARD", (), None, None),
        ("source-1", "watermark-1", "FORWARD", (), None, None),
        ("watermark-0", "stateful-0", "HASH", ("adId",), 2, "left"),
        ("watermark-1", "stateful-0", "HASH", ("clickAdId",), 2, "right"),
        ("stateful-0", "sink", "FORWARD", (), None, None),
    }


def test_a_windowed_aggregation_chains_its_partial_and_restore_steps() -> None:
    graph = _captured("windowed")
    nodes = _by_key(graph)
    aggregation = nodes["stateful-0"]
    assert aggregation.label == "Aggregation"
    assert aggregation.description == "by window, word (Update mode)"
    assert (aggregation.operator_id, aggregation.partitions, aggregation.stores) == (
        0,
        2,
        ("default",),
    )
    # after the exchange, the restore half and the merge are the aggregation's; before it,
    # the partial count is chained into what feeds it (as Flink chains operators)
    assert aggregation.chain == (
        "HashAggregate",
        "StateStoreRestore",
        "HashAggregate",
        "StateStoreSave",
        "HashAggregate",
    )
    assert nodes["watermark-0"].chain[-1] == "HashAggregate"
    assert ("watermark-0", "stateful-0", "HASH", ("window", "word"), 2, None) in _edges(graph)


def test_two_stateful_operators_in_a_row_get_spark_s_figures_in_spark_s_order() -> None:
    graph = _captured("join_then_count")
    nodes = _by_key(graph)
    count, join = nodes["stateful-0"], nodes["stateful-1"]
    assert (count.label, count.operator_id, count.stateful) == ("Aggregation", 0, 0)
    assert (join.label, join.operator_id, join.stateful) == ("Stream-stream join (Inner)", 1, 1)
    assert join.stores == JOIN_STORES and count.stores == ("default",)
    progress = json.loads((PLANS / "join_then_count.progress.json").read_text())
    names = [op["operatorName"] for op in progress["stateOperators"]]
    assert names == ["stateStoreSave", "symmetricHashJoin"], "the fixture's order"
    assert ("stateful-1", "stateful-0", "HASH", ("window",), 2, None) in _edges(graph)
    assert ("stateful-0", "sink", "FORWARD", (), None, None) in _edges(graph)


@pytest.mark.parametrize(
    ("name", "label", "description", "variables"),
    [
        ("dedupe", "Deduplication", "by k, timestamp", ()),
        (
            "session",
            "Session window aggregation",
            "by _groupingexpression; session window session_window (Append mode)",
            (),
        ),
        ("pandas_state", "applyInPandasWithState", "count_in_pandas by k (Update mode)", ()),
        (
            "tws",
            "transformWithState",
            "transformWithStateUDF by k (Update mode)",
            ("count (ValueState)",),
        ),
    ],
)
def test_each_kind_of_stateful_operator(
    name: str, label: str, description: str, variables: tuple[str, ...]
) -> None:
    graph = _captured(name)
    (stateful,) = [n for n in graph.nodes if n.kind == "stateful"]
    assert (stateful.label, stateful.description) == (label, description)
    assert (stateful.operator_id, stateful.partitions, stateful.stores) == (0, 2, ("default",))
    assert stateful.state_variables == variables
    (exchange,) = [e for e in graph.edges if e.target == stateful.key]
    assert (exchange.ship_strategy, exchange.partitions) == ("HASH", 2)
    kinds = sorted(n.kind for n in graph.nodes)
    assert "static" not in kinds, "transformWithState's empty initial state is no input"


def test_a_file_source_joined_with_a_static_table() -> None:
    graph = _captured("file_static")
    nodes = _by_key(graph)
    assert nodes["source-0"].label == "Source: FileStreamSource"
    assert nodes["source-0"].chain[0] == "FileScan", "the batch's scan is the file source's"
    assert nodes["static-0"].label == "Static: Scan" and nodes["static-0"].source is None
    assert nodes["join-0"].label == "Join (Inner)"
    assert nodes["sink"].label == "Sink: ForeachBatchSink", "a v1 sink, from the progress"
    edges = _edges(graph)
    assert ("source-0", "join-0", "BROADCAST", (), None, "left") in edges
    assert ("static-0", "join-0", "FORWARD", (), None, "right") in edges
    assert ("join-0", "stateful-0", "HASH", ("label",), 2, None) in edges


def test_a_union_of_two_sources_into_a_file_sink() -> None:
    graph = _captured("union_file")
    assert sorted(n.key for n in graph.nodes) == ["sink", "source-0", "source-1", "union-0"]
    assert _by_key(graph)["sink"].label == "Sink: FileSink"
    assert {(e.source, e.target) for e in graph.edges} == {
        ("source-0", "union-0"),
        ("source-1", "union-0"),
        ("union-0", "sink"),
    }


def test_a_scan_spark_reports_no_source_for_is_still_a_source() -> None:
    """A source read twice (``df.union(df)``) is one reported source and two scans."""
    progress = json.loads((PLANS / "union_file.progress.json").read_text())
    progress["sources"] = progress["sources"][:1]
    graph = build((PLANS / "union_file.plan.txt").read_text(), progress)
    nodes = _by_key(graph)
    assert (nodes["source-0"].label, nodes["source-0"].source) == ("Source: RateStreamV2", 0)
    assert (nodes["source-1"].label, nodes["source-1"].source) == ("Source: RateStreamTable", None)


def test_without_a_plan_the_progress_report_gives_an_incomplete_graph() -> None:
    graph = _captured("join_then_count", plan=False)
    assert not graph.complete and graph.plan is None
    nodes = _by_key(graph)
    # data meets the join first: Spark lists its operators from the sink down
    assert (nodes["stateful-0"].label, nodes["stateful-0"].stateful) == (
        "Stream-stream join",
        1,
    )
    assert (nodes["stateful-0"].operator_id, nodes["stateful-0"].stores) == (1, JOIN_STORES)
    assert (nodes["stateful-1"].label, nodes["stateful-1"].operator_id) == ("Aggregation", 0)
    assert {(e.source, e.target) for e in graph.edges} == {
        ("source-0", "stateful-0"),
        ("source-1", "stateful-0"),
        ("stateful-0", "stateful-1"),
        ("stateful-1", "sink"),
    }


@pytest.mark.parametrize("name", ["join", "windowed"])
def test_spark_connect_explains_the_same_plan(name: str) -> None:
    """A session cluster's query, explained over gRPC: the same graph as a classic driver's."""
    classic = _captured(name)
    operators = json.loads((PLANS / f"{name}.operators.json").read_text())
    connect = build(
        (PLANS / f"{name}.connect.plan.txt").read_text(),
        json.loads((PLANS / f"{name}.progress.json").read_text()),
        [parse_metadata(t) for t in operators.values()],
    )
    assert (connect.nodes, connect.edges) == (classic.nodes, classic.edges)


def test_the_graph_survives_its_file() -> None:
    graph = _captured("join")
    assert QueryGraph.from_dict(json.loads(json.dumps(graph.to_dict()))) == graph


@pytest.mark.parametrize(
    "text",
    ["", "No physical plan. Waiting for data.", "   +- Project [a]\n", "== Physical Plan =="],
)
def test_text_that_is_no_plan_gives_none(text: str) -> None:
    assert parse_plan(text) is None


def test_spark_s_operator_metadata() -> None:
    texts = json.loads((PLANS / "tws.operators.json").read_text())
    found = parse_metadata(texts["0"])
    assert found is not None
    assert (found.operator_id, found.name, found.stores, found.variable_labels) == (
        0,
        "transformWithStateInPySparkExec",
        ["default"],
        ("count (ValueState)",),
    )
    assert parse_metadata("v1\n{not json") is None
    assert parse_metadata('v1\n{"operatorInfo": {}}') is None
