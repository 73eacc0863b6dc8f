"""The driver's recording of the job graph, at its seam (no Spark): Spark's listener notes a
query's batch, the watcher records its graph from what the flavour explains and what the
query's checkpoint holds of Spark's operator metadata, once per run of the query; a query
that has not planned yet gets its progress report's graph, then its plan's; an explain that
fails is one line in the log and is tried again, never the job's end."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry import graph as graph_file
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.explain.graphs import GraphRecorder
from flinkish_cli.storage import open_storage

JOB = "cd" * 16
PLANS = Path(__file__).parents[2] / "fixtures" / "plans"


class Explaining:
    """The flavour's seam: what ``explain`` answers, and how often it was asked."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.asked = 0

    def explain(self, query: Any) -> str | None:
        self.asked += 1
        answer = self.answers[min(self.asked, len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


def _checkpoint(tmp_path: Path) -> Path:
    """A query's checkpoint with Spark's metadata of its join (operator 0)."""
    checkpoint = tmp_path / "checkpoints" / JOB / "clicks"
    metadata = checkpoint / "state" / "0" / "_metadata"
    metadata.mkdir(parents=True)
    texts = json.loads((PLANS / "join.operators.json").read_text())
    (metadata / "metadata").write_text(texts["0"])
    (checkpoint / "state" / "0" / "0").mkdir()
    return checkpoint


def _recorder(tmp_path: Path, flavour: Explaining) -> tuple[GraphRecorder, JobRegistry]:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    checkpoint = _checkpoint(tmp_path)
    storage = open_storage(str(checkpoint))
    recorder = GraphRecorder(
        registry,
        JOB,
        flavour,  # type: ignore[arg-type]
        lambda name: (storage, str(checkpoint)) if name == "clicks" else None,
    )
    return recorder, registry


def _progress(batch: int, run: str = "run-1") -> dict[str, Any]:
    progress = json.loads((PLANS / "join.progress.json").read_text())
    return {**progress, "batchId": batch, "runId": run}


def test_a_query_s_graph_is_recorded_once_per_run(tmp_path: Path) -> None:
    plan = (PLANS / "join.plan.txt").read_text()
    flavour = Explaining([plan])
    recorder, registry = _recorder(tmp_path, flavour)
    recorder.record_pending({"clicks": object()})
    assert flavour.asked == 0 and graph_file.read(registry, JOB).queries == {}, "nothing noted"
    recorder.progressed("clicks", _progress(0))
    recorder.record_pending({"clicks": object()})
    kept = graph_file.read(registry, JOB).queries["clicks"]
    assert (kept.run_id, kept.batch, kept.complete) == ("run-1", 0, True)
    join = next(node for node in kept.nodes if node.kind == "stateful")
    assert join.stores[0] == "left-keyToNumValues", "the stores are Spark's own record"
    for batch in (1, 2, 3):  # the same run: nothing to do
        recorder.progressed("clicks", _progress(batch))
        recorder.record_pending({"clicks": object()})
    assert flavour.asked == 1
    recorder.progressed("clicks", _progress(9, "run-2"))  # restarted: a new run
    recorder.record_pending({"clicks": object()})
    assert flavour.asked == 2
    assert graph_file.read(registry, JOB).queries["clicks"].run_id == "run-2"
    again = GraphRecorder(registry, JOB, flavour, lambda name: None)  # type: ignore[arg-type]
    again.progressed("clicks", _progress(10, "run-2"))
    again.record_pending({"clicks": object()})
    assert flavour.asked == 2, "a restarted driver goes on from the registry's graph"


def test_before_its_first_plan_a_query_gets_its_progress_report_s_graph(tmp_path: Path) -> None:
    plan = (PLANS / "join.plan.txt").read_text()
    flavour = Explaining([None, None, plan])
    recorder, registry = _recorder(tmp_path, flavour)
    recorder.progressed("clicks", _progress(0))
    recorder.record_pending({"clicks": object()})
    first = graph_file.read(registry, JOB).queries["clicks"]
    assert not first.complete and [n.kind for n in first.nodes].count("source") == 2
    path = tmp_path / "checkpoints" / JOB / "_flinkish" / graph_file.GRAPH_FILE
    written = path.stat().st_mtime_ns
    recorder.progressed("clicks", _progress(1))
    recorder.record_pending({"clicks": object()})
    assert path.stat().st_mtime_ns == written, "the same graph is not written again"
    recorder.progressed("clicks", _progress(2))
    recorder.record_pending({"clicks": object()})
    assert graph_file.read(registry, JOB).queries["clicks"].complete
    assert flavour.asked == 3


def test_an_explain_that_fails_is_told_once_and_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan = (PLANS / "join.plan.txt").read_text()
    flavour = Explaining([RuntimeError("gRPC went away"), RuntimeError("again"), plan])
    recorder, registry = _recorder(tmp_path, flavour)
    caplog.set_level(logging.WARNING, "flinkish.runtime")
    for batch in range(3):
        recorder.progressed("clicks", _progress(batch))
        recorder.record_pending({"clicks": object()})
    told = [r.getMessage() for r in caplog.records]
    assert told == ["Could not record the graph of query 'clicks': gRPC went away"]
    assert graph_file.read(registry, JOB).queries["clicks"].complete


def test_a_checkpoint_without_metadata_gives_a_graph_without_stores(tmp_path: Path) -> None:
    flavour = Explaining([(PLANS / "join.plan.txt").read_text()])
    recorder, registry = _recorder(tmp_path, flavour)
    shutil.rmtree(tmp_path / "checkpoints" / JOB / "clicks" / "state")
    recorder.progressed("clicks", _progress(0))
    recorder.record_pending({"clicks": object()})
    join = next(
        n for n in graph_file.read(registry, JOB).queries["clicks"].nodes if n.operator_id == 0
    )
    assert (join.operator_id, join.partitions, join.stores) == (0, 2, ())
