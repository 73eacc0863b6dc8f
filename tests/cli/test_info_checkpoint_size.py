"""``flinkish info <JobID>``: each query's graph with its latest figures and what its
checkpoint takes on storage, as the driver recorded them in the registry (the graph from a
plan a real Spark explained); text for people, ``--output json`` (before or after the JobID)
for scripts, and a JobID with anything else after it is a usage error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from flinkish_cli.registry import graph
from flinkish_cli.registry.batch_figures import BatchFigures
from flinkish_cli.registry.footprint import Footprint, PartSize
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.explain.graph_builder import build
from flinkish_cli.state.metadata import parse_metadata
from tests.fixtures.flinkish_env import FlinkishEnv

JOB = "12" * 16
PLANS = Path(__file__).parents[1] / "fixtures" / "plans"


def _record(env: FlinkishEnv) -> None:
    measured = Footprint(
        time.time(),
        {"offsets": PartSize(20, 13000), "sources": PartSize(3, 3 << 20)},
    )
    progress = json.loads((PLANS / "windowed.progress.json").read_text())
    raw = QueryStatus(name="raw", checkpoint="/cp/raw", footprint=measured, trigger_ms=1000)
    raw.record(Progress.from_spark(progress))
    raw.figures = BatchFigures.from_spark(progress)
    status = JobStatus(
        job_id=JOB,
        name="orders",
        state=JobState.RUNNING,
        heartbeat=time.time() + 600,
        queries={"raw": raw, "late": QueryStatus(name="late", checkpoint="/cp/late")},
    )
    registry = JobRegistry.open(str(env.checkpoints))
    registry.write(status)
    operators = json.loads((PLANS / "windowed.operators.json").read_text())
    plan = (PLANS / "windowed.plan.txt").read_text()
    recorded = build(plan, progress, [parse_metadata(t) for t in operators.values()])
    graph.write(registry, JOB, graph.JobGraph({"raw": recorded}))


def test_info_of_a_job_shows_each_part_and_what_grows(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    text = flinkish_env.run("info", JOB, check=True).stdout
    assert f"Job {JOB} (orders, RUNNING)." in text
    assert "== Query 'raw' (/cp/raw): 3.0 MiB" in text
    assert re.search(r"^sources +3 +3\.0 MiB +with age$", text, re.MULTILINE), text
    assert re.search(r"^offsets +20 +12\.7 KiB +bounded$", text, re.MULTILINE), text
    assert "-- sources grows for as long as the query runs" in text
    assert "What to do: a lower flinkish.file-source.log.cleanup-delay" in text
    assert "== Query 'late' (/cp/late): not measured yet ==" in text


def test_info_of_a_job_shows_its_graph(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    text = flinkish_env.run("info", JOB, check=True).stdout
    assert "== Query 'raw': graph of batch 73, figures of batch 73, busy " in text
    lines = text.splitlines()
    aggregation = next(line for line in lines if line.startswith("Aggregation "))
    assert "by window, word (Update mode); operator 0, 2 partitions; stores default" in (
        aggregation
    )
    assert "Watermark (HASH window, word into 2)" in aggregation
    assert re.search(r"\d+ state rows, \d+ updated, 0 dropped by watermark", aggregation)
    assert "watermark 20" in aggregation
    assert any(line.startswith("Source: RateStreamV2 ") for line in lines)
    assert any(line.startswith("Sink: MemorySink ") for line in lines)
    assert "== Query 'late': no graph yet (it has completed no batch) ==" in text


def test_info_of_a_job_as_json_before_or_after_the_jobid(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    for args in (("info", JOB, "--output", "json"), ("info", "-o", "json", JOB)):
        document = json.loads(flinkish_env.run(*args, check=True).stdout)
        raw = document["queries"]["raw"]["footprint"]
        assert raw["parts"]["sources"] == {"bytes": 3 << 20, "files": 3, "grows": "age"}
        assert raw["growing"][0]["part"] == "sources"
        assert document["queries"]["late"]["footprint"] is None
        graph_of = document["queries"]["raw"]["graph"]
        kinds = sorted(node["kind"] for node in graph_of["nodes"])
        assert kinds == ["sink", "source", "stateful", "watermark"]
        (stateful,) = [n for n in graph_of["nodes"] if n["kind"] == "stateful"]
        assert stateful["metrics"]["state-rows"] is not None
        assert graph_of["figures"]["trigger-ms"] == 1000
        assert document["queries"]["late"]["graph"]["nodes"] == []


def test_info_of_an_unknown_job_or_with_extra_words_is_one_line(
    flinkish_env: FlinkishEnv,
) -> None:
    _record(flinkish_env)
    unknown = flinkish_env.run("info", "ab" * 16, check=False)
    assert unknown.returncode == 1 and f"No job with JobID {'ab' * 16}" in unknown.stderr
    extra = flinkish_env.run("info", JOB, "--input", "x", check=False)
    assert extra.returncode == 1
    assert "'--input' after a JobID: 'flinkish info <JobID>' takes only -o/--output." in (
        extra.stderr
    )


def test_info_of_a_job_starts_no_spark(flinkish_env: FlinkishEnv) -> None:
    _record(flinkish_env)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flinkish_cli", "info", JOB, "-o", "json"],
        env=flinkish_env.environ(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines()}
    assert not imported & {"pyspark", "py4j", "grpc", "pandas", "starlette"}
