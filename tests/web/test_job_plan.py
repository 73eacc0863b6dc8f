"""Flink's JSON plan of a job (``GET /jobs/:jobid/plan`` and ``plan`` in ``GET /jobs/:jobid``)
from the job graph, without Spark: Flink's fields and types (as flink-runtime's JobPlanInfo
reads them), a node per operator with its inputs' ship strategies, descriptions as HTML-safe
as Flink's own, and a query whose graph is not recorded yet as one node, its vertex."""

from __future__ import annotations

import json
from pathlib import Path

from flinkish_cli.registry.graph import JobGraph, node_id
from flinkish_cli.registry.status import JobStatus, QueryStatus
from flinkish_cli.runtime.explain.graph_builder import build
from flinkish_cli.state.metadata import parse_metadata
from flinkish_cli.web import flink_json

JOB = "ab" * 16
PLANS = Path(__file__).parents[1] / "fixtures" / "plans"
NODE_FIELDS = {
    "id",
    "parallelism",
    "operator",
    "operator_strategy",
    "description",
    "inputs",
    "optimizer_properties",
    "job_vertex_id",
}


def _graph(name: str) -> JobGraph:
    operators = json.loads((PLANS / f"{name}.operators.json").read_text())
    progress = json.loads((PLANS / f"{name}.progress.json").read_text())
    query = build(
        (PLANS / f"{name}.plan.txt").read_text(),
        progress,
        [parse_metadata(t) for t in operators.values()],
    )
    return JobGraph({"<b>clicks</b>": query})


def _status() -> JobStatus:
    queries = {
        name: QueryStatus(name=name, checkpoint=f"/cp/{name}") for name in ("<b>clicks</b>", "late")
    }
    return JobStatus(job_id=JOB, name="ads", queries=queries, parallelism=3)


def test_a_node_per_operator_with_its_inputs() -> None:
    plan = flink_json.plan(_status(), _graph("join"))
    assert (plan["jid"], plan["name"], plan["type"]) == (JOB, "ads", "STREAMING")
    nodes = {node["id"]: node for node in plan["nodes"]}
    assert all(set(node) == NODE_FIELDS for node in plan["nodes"])
    assert all(isinstance(node["optimizer_properties"], str) for node in plan["nodes"])
    join = nodes[node_id(JOB, "<b>clicks</b>", "stateful-0")]
    assert (join["operator"], join["operator_strategy"], join["parallelism"]) == (
        "Stream-stream join (Inner)",
        "StreamingSymmetricHashJoin",
        2,
    )
    assert [(i["num"], i["ship_strategy"], i["exchange"]) for i in join["inputs"]] == [
        (0, "HASH", "pipelined_bounded"),
        (1, "HASH", "pipelined_bounded"),
    ]
    assert all(nodes[i["id"]]["operator"] == "Watermark" for i in join["inputs"])
    source = nodes[node_id(JOB, "<b>clicks</b>", "source-0")]
    assert (source["inputs"], source["parallelism"]) == ([], 3), "the job's parallelism"
    assert join["description"].startswith(
        "&lt;b&gt;clicks&lt;/b&gt;: Stream-stream join (Inner)<br/>adId = clickAdId; condition "
        "((clickTime &gt;= impressionTime)"
    ), "HTML-escaped, lines as <br/>, as Flink's"
    vertex = flink_json.vertex_id(JOB, "<b>clicks</b>")
    assert {node["job_vertex_id"] for node in plan["nodes"]} == {
        vertex,
        flink_json.vertex_id(JOB, "late"),
    }
    (late,) = [n for n in plan["nodes"] if n["job_vertex_id"] != vertex]
    assert late["id"] == flink_json.vertex_id(JOB, "late"), "no graph yet: its vertex"
    assert (late["description"], late["inputs"]) == ("late", [])


def test_the_job_s_details_carry_the_same_plan() -> None:
    status, graph = _status(), _graph("windowed")
    details = flink_json.job_details(status, graph=graph)
    assert details["plan"] == flink_json.plan(status, graph)
    assert [v["id"] for v in details["vertices"]] == [
        flink_json.vertex_id(JOB, name) for name in status.queries
    ], "a query is still one vertex (one task)"
    no_graph = flink_json.job_details(status)["plan"]["nodes"]
    assert [n["id"] for n in no_graph] == [v["id"] for v in details["vertices"]]
