"""``flinkish info``: each query's plan, without running the job."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, write_events

pytestmark = pytest.mark.spark


def test_info_explains_every_query_and_runs_nothing(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, [{"key": "a", "value": 1, "seq": 1}])
    output = flinkish_env.root / "out"
    args = [str(JOBS / "counts" / "counts_job.py"), "--input", str(inputs), "--output", str(output)]
    result = flinkish_env.run("info", "--output", "json", *args, check=True)
    document = json.loads(result.stdout)
    names = [q["name"] for q in document["queries"]]
    assert names == ["counts", "raw"]
    counts_plan = document["queries"][0]["plan"]
    assert "Physical Plan" in counts_plan and "Aggregate" in counts_plan
    assert not output.exists()
    assert not flinkish_env.checkpoints.exists()
    text = flinkish_env.run("info", *args, check=True).stdout
    assert "== Query 'counts' ==" in text and "== Query 'raw' ==" in text


def test_info_says_which_queries_have_generated_identities(flinkish_env: FlinkishEnv) -> None:
    inputs, output = flinkish_env.root / "in", flinkish_env.root / "out"
    write_events(inputs, [{"key": "a", "value": 1, "seq": 1}])
    args = [str(JOBS / "unnamed_pair.py"), str(inputs), str(output)]
    document = json.loads(flinkish_env.run("info", "-o", "json", *args, check=True).stdout)
    assert [(q["name"], q["generated"]) for q in document["queries"]] == [
        ("unnamed-1", True),
        ("unnamed-2", True),
    ]
    text = flinkish_env.run("info", *args, check=True).stdout
    assert "== Query 'unnamed-1' ==" in text
    assert "has no name" in text and ".queryName('...')" in text
    assert not output.exists()
