"""The job graph in the registry: its file (written when a query starts a run, read forgivingly),
the latest batch's figures per node as the status keeps them (small, whatever Spark reports),
and the document that joins the two with Flink's task time (what ``info <JobID> --output
json`` and the dashboard show). The progress report is one a real Spark 4.3 wrote."""

from __future__ import annotations

import json
from pathlib import Path

from flinkish_cli.registry import graph as graph_file
from flinkish_cli.registry.batch_figures import MAX_OFFSET, BatchFigures
from flinkish_cli.registry.graph import JobGraph, QueryGraph, node_id
from flinkish_cli.registry.graph_view import job_view
from flinkish_cli.registry.status import JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.registry.task_time import task_time
from flinkish_cli.runtime.explain.graph_builder import build
from flinkish_cli.state.metadata import parse_metadata

JOB = "ab" * 16
PLANS = Path(__file__).parents[1] / "fixtures" / "plans"


def _progress() -> dict:
    return json.loads((PLANS / "join.progress.json").read_text())


def _graph() -> QueryGraph:
    texts = json.loads((PLANS / "join.operators.json").read_text())
    operators = [parse_metadata(t) for t in texts.values()]
    return build((PLANS / "join.plan.txt").read_text(), _progress(), operators)


def _status() -> JobStatus:
    progress = _progress()
    query = QueryStatus(
        name="clicks", checkpoint="/cp/clicks", run_id=progress["runId"], trigger_ms=1000
    )
    for batch in range(3):
        query.record(
            Progress(batch, f"2026-11-25T03:48:2{batch}.000Z", 90, 9.7, 13.4, 600 + 300 * batch)
        )
    query.record(Progress.from_spark(progress))
    query.figures = BatchFigures.from_spark(progress)
    fresh = QueryStatus(name="fresh", checkpoint="/cp/fresh")
    return JobStatus(job_id=JOB, name="ads", queries={"clicks": query, "fresh": fresh})


def test_the_graph_file_round_trips_and_a_damaged_one_is_empty(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path))
    assert graph_file.read(registry, JOB) == JobGraph(), "no file: no graph"
    kept = JobGraph({"clicks": _graph()})
    graph_file.write(registry, JOB, kept)
    assert graph_file.read(registry, JOB) == kept
    path = tmp_path / JOB / "_flinkish" / graph_file.GRAPH_FILE
    document = json.loads(path.read_text())
    document["queries"]["other"] = {"nodes": [{"key": "a", "kind": "nonsense"}], "edges": []}
    document["queries"]["../escape"] = document["queries"]["clicks"]
    document["queries"]["dangling"] = {
        "nodes": [{"key": "a", "kind": "sink", "label": "x"}],
        "edges": [{"source": "a", "target": "b"}],
    }
    path.write_text(json.dumps(document))
    assert graph_file.read(registry, JOB) == kept, "damaged queries are left out"
    for text in ("{ not json", "[]", '{"version": 99, "queries": {}}'):
        path.write_text(text)
        assert graph_file.read(registry, JOB) == JobGraph()


def test_node_ids_are_flinks_form_and_stable() -> None:
    first = node_id(JOB, "clicks", "stateful-0")
    assert len(first) == 32 and int(first, 16) >= 0
    assert first == node_id(JOB, "clicks", "stateful-0")
    assert first != node_id(JOB, "other", "stateful-0") != node_id(JOB, "clicks", "sink")


def test_the_status_keeps_the_latest_figures_small() -> None:
    progress = _progress()
    progress["sources"][0]["endOffset"] = {"topic": {str(p): p * 1000 for p in range(500)}}
    figures = BatchFigures.from_spark(progress)
    (join,) = figures.operators
    assert (join.name, join.rows_total, join.rows_updated, join.rows_removed) == (
        "symmetricHashJoin",
        198,
        30,
        20,
    )
    assert (join.memory_bytes, join.partitions, join.store_instances) == (525668, 2, 8)
    assert (figures.sink, figures.sink_rows) == ("MemorySink", 15)
    long = figures.sources[0].end_offset
    assert isinstance(long, str) and len(long) == MAX_OFFSET and long.endswith("…")
    assert figures.sources[1].end_offset == 295, "a short offset stays as Spark wrote it"
    status = _status()
    status.queries["clicks"].figures = figures
    text = status.to_json()
    assert "rocksdb" not in text, "Spark's custom metrics are not kept"
    assert JobStatus.from_json(text).queries["clicks"].figures == figures
    damaged = json.loads(text)
    damaged["queries"]["clicks"]["figures"] = {"sources": 3}
    assert JobStatus.from_json(json.dumps(damaged)).queries["clicks"].figures is None


def test_the_document_joins_each_node_to_its_figures() -> None:
    status = _status()
    document = job_view(status, JobGraph({"clicks": _graph()}))
    assert (document["jid"], document["name"]) == (JOB, "ads")
    clicks = document["queries"]["clicks"]
    spent = task_time(status.queries["clicks"].recent, 1000)
    assert clicks["figures"]["busy-time-ms-per-second"] == round(spent.busy, 1)
    assert clicks["figures"]["backpressured-time-ms-per-second"] == round(spent.backpressured, 1)
    assert clicks["figures"]["watermark"] == "2026-11-25T03:47:51.142Z"
    assert clicks["figures"]["batch"] == 73 and clicks["complete"] is True
    nodes = {node["key"]: node for node in clicks["nodes"]}
    join = nodes["stateful-0"]
    assert join["id"] == node_id(JOB, "clicks", "stateful-0")
    assert (join["operator-id"], join["partitions"], len(join["stores"])) == (0, 2, 4)
    metrics = join["metrics"]
    assert (metrics["state-rows"], metrics["state-rows-updated"]) == (198, 30)
    assert (metrics["state-memory-bytes"], metrics["rows-dropped-by-watermark"]) == (525668, 0)
    assert metrics["busy-time-ms-per-second"] == clicks["figures"]["busy-time-ms-per-second"]
    assert metrics["watermark"] == "2026-11-25T03:47:51.142Z"
    source = nodes["source-1"]["metrics"]
    assert (source["input-rows"], source["input-rows-per-second"], source["end-offset"]) == (
        45,
        4.8,
        295,
    )
    assert nodes["sink"]["metrics"]["output-rows"] == 15
    ids = {node["id"] for node in clicks["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in clicks["edges"])
    hashed = [e for e in clicks["edges"] if e["ship-strategy"] == "HASH"]
    assert {(e["side"], tuple(e["keys"])) for e in hashed} == {
        ("left", ("adId",)),
        ("right", ("clickAdId",)),
    }
    fresh = document["queries"]["fresh"]
    assert fresh["nodes"] == [] and fresh["figures"]["batch"] is None


def test_figures_of_another_run_than_the_graphs_are_not_shown() -> None:
    status = _status()
    status.queries["clicks"].run_id = "a-newer-run"
    document = job_view(status, JobGraph({"clicks": _graph()}))
    nodes = {node["key"]: node for node in document["queries"]["clicks"]["nodes"]}
    assert nodes["stateful-0"]["metrics"]["state-rows"] is None
    assert nodes["stateful-0"]["metrics"]["watermark"] is not None, "the query's own stay"
