"""The benchmark's quick version, end to end: it completes and its results are well formed
(every row has its measured figures, its reference and its ratio).

The gate (CI) runs the harness end to end on one section, the command line's start (no
Spark); the suite's long form (:mod:`tests.fixtures.long_form`) runs every section, Spark's
included (each section's own code is also tested in ``test_sections.py``).

Speed goals are reported by the benchmark, never asserted here: this machine's load decides
the figures, not the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.main import SECTIONS
from benchmarks.report import validate
from tests.fixtures.long_form import LONG_FORM

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


SHORT_FORM = ["cli"]


@pytest.mark.soak
@pytest.mark.timeout(1200)
def test_quick_benchmark_completes_and_writes_well_formed_results(tmp_path: Path) -> None:
    sections = list(SECTIONS) if LONG_FORM else SHORT_FORM
    markdown, results = tmp_path / "benchmarks.md", tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLINK", "PYSPARK", "BENCH_"))}
    env["BENCH_PYTHON"] = sys.executable
    done = subprocess.run(
        [
            str(REPO / "scripts" / "bench"),
            "--quick",
            "--markdown",
            str(markdown),
            "--json",
            str(results),
            "--workdir",
            str(tmp_path / "work"),
            "--only",
            ",".join(sections),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1150,
    )
    assert done.returncode == 0, done.stderr[-5000:]

    document = json.loads(results.read_text())
    assert validate(document) == []
    assert document["mode"] == "quick"
    order = [
        "backlog", "streaming", "cli", "lifecycle", "profiling", "session", "cds", "flink",
        "autoscale", "kafka", "object_store", "yarn",
    ]  # fmt: skip
    assert set(SECTIONS) == set(order)  # the report's order
    assert [s["key"] for s in document["sections"]] == [k for k in order if k in sections]
    for section in document["sections"]:
        assert section["error"] is None, section
        if section["skipped"]:
            optional = ("cds", "flink", "autoscale", "kafka", "object_store", "yarn")
            assert section["key"] in optional, "only the optional sections may be skipped"
            continue
        for row in section["rows"]:
            assert row["value"] > 0 and row["reference_value"] > 0 and row["ratio"] > 0, row
            assert row["samples"] and row["reference_samples"], row
    machine = document["machine"]
    for key in ("cpu", "cores", "memory", "os", "python", "java", "spark", "load_average_start"):
        assert machine[key], key

    text = markdown.read_text()
    assert "## Machine" in text and "Load average at start" in text
    for section in document["sections"]:
        assert f"## {section['title']}" in text
    assert "This section failed" not in text
