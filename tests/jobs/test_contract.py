"""Every example job follows flinkish's contract for scripts (no Spark session needed)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from common.args import resolve

from tests.jobs.conftest import JOBS_DIR

JOBS = {
    "orders": {"orders"},
    "transactions_windows": {"tumbling-per-account", "sliding-per-account"},
    "transactions_sessions": {"sessions-per-customer"},
    "transactions_dedup": {"dedup"},
    "transactions_enrich": {"enriched"},
    "counts_per_key": {"counts", "raw"},
    "orders_kafka": {"orders-kafka"},
    "orders_kafka_sql": {"orders-kafka-sql"},
}
#: The jobs that read Kafka rather than files: their options name topics, not directories.
KAFKA_JOBS = {"orders_kafka", "orders_kafka_sql"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def test_every_job_is_listed() -> None:
    assert {p.stem for p in JOBS_DIR.glob("*.py")} == set(JOBS)
    assert not (JOBS_DIR / "__init__.py").exists(), "jobs/ must stay the job's root directory"


@pytest.mark.parametrize("name", sorted(JOBS))
def test_job_source_follows_the_contract(name: str) -> None:
    source = (JOBS_DIR / f"{name}.py").read_text()
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree)
    assert docstring and "Arguments:" in docstring and "Output" in docstring
    assert "Flink" in docstring, "the docstring names the Flink equivalent"
    assert ".trigger(" not in source, "flinkish sets the trigger"
    assert "checkpointLocation" not in source, "flinkish sets the checkpoint location"
    assert ".master(" not in source, "flinkish sets the master"
    assert "getOrCreate()" in source and "awaitAnyTermination()" in source
    assert source.count(".queryName(") == source.count(".start("), "every query is named"

    module = importlib.import_module(name)
    names = {
        value
        for key, value in vars(module).items()
        if key.isupper() and isinstance(value, str) and value in JOBS[name]
    }
    assert names == JOBS[name]
    assert all(NAME.match(n) for n in names)


@pytest.mark.parametrize("name", sorted(JOBS))
def test_job_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(name)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    usage = capsys.readouterr().out
    options = ("--data", "--input", "--output", "--max-files-per-trigger")
    if name in KAFKA_JOBS:
        options = ("--bootstrap-servers", "--source-topic", "--sink-topic", "--starting-offsets")
    for option in options:
        assert option in usage


def test_resolve_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve(None, "data", "out", "orders") == str(tmp_path / "data" / "out" / "orders")
    assert resolve("in", "data", "orders") == str(tmp_path / "in")
    assert resolve("/abs/x", "data", "orders") == "/abs/x"
    assert resolve(None, "s3a://bucket/base", "orders") == "s3a://bucket/base/orders"
