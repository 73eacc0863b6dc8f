"""The benchmark's result model and log parsing, without Spark."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.harness import flink_conf_text, median, percentile, progress_events
from benchmarks.report import Results, Row, Section, markdown, validate

MACHINE = {
    "cpu": "cpu",
    "cores": "2 usable",
    "memory": "1 GiB",
    "os": "os",
    "python": "3",
    "java": "17",
    "spark": "4",
    "load_average_start": "0.1, 0.1, 0.1",
}


def _results(*rows: Row) -> Results:
    section = Section(key="cli", title="3. CLI latency", method="how", rows=list(rows))
    return Results("quick", "a", "b", 1.0, dict(MACHINE), {}, [section])


def test_a_complete_row_validates_and_renders() -> None:
    row = Row(
        "flinkish --help", 0.1, "s", "python -c pass", 0.02, [0.1], [0.02], "under 150 ms", True
    )
    results = _results(row)
    assert validate(results.to_dict()) == []
    assert math.isclose(results.to_dict()["sections"][0]["rows"][0]["ratio"], 5.0)
    text = markdown(results)
    assert "| flinkish --help | 100 ms | python -c pass | 20 ms | 5.00 (5.0× slower) |" in text


def test_missing_figures_and_failed_sections_are_problems() -> None:
    document = _results(Row("x", 0.0, "s", "ref", 1.0, [], [1.0], "goal", None)).to_dict()
    document["sections"].append({"key": "lifecycle", "error": "BenchError: boom"})
    document["machine"].pop("java")
    problems = validate(document)
    assert any("value 0.0" in p for p in problems)
    assert any("no samples" in p for p in problems)
    assert any("goal without a verdict" in p for p in problems)
    assert any("lifecycle failed" in p for p in problems)
    assert "machine.java is missing" in problems


def test_progress_reports_are_read_from_a_spark_log() -> None:
    log = (
        "26/11/22 00:14:34 INFO ProgressReporter: Streaming query made progress: {\n"
        '  "name" : "counts",\n  "batchId" : 0,\n'
        '  "durationMs" : {\n    "addBatch" : 5701,\n    "triggerExecution" : 7022\n  }\n}\n'
        "26/11/22 00:14:35 INFO Something else\n"
    )
    [event] = progress_events(log)
    assert event["name"] == "counts" and event["durationMs"]["triggerExecution"] == 7022


def test_statistics_and_configuration_overrides() -> None:
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 4]) == 2.5
    assert percentile([1, 2, 3, 4, 5], 0.95) == 4.8
    text = flink_conf_text({"parallelism.default": 8, "s3.endpoint": "http://x"})
    assert "\nparallelism.default: 8\n" in text and "parallelism.default: 2" not in text
    assert text.rstrip().endswith("s3.endpoint: http://x")


def test_a_benchmark_run_keeps_the_soaks_section_and_a_soak_replaces_only_its_own(
    tmp_path,
) -> None:
    from benchmarks.report import write_markdown
    from benchmarks.soak import write_docs

    page = tmp_path / "benchmarks.md"
    write_docs("first soak: 2 h, exactly once", page)  # a page with only the soak
    write_markdown(_results(Row("x", 0.1, "s", "ref", 0.1, [0.1], [0.1], "goal", True)), page)
    text = page.read_text()
    assert "first soak: 2 h" in text and "## 3. CLI latency" in text
    assert text.index("## 9. The soak") < text.index("## Parameters of this run")
    write_docs("second soak", page)
    text = page.read_text()
    assert "second soak" in text and "first soak" not in text
    assert text.count("## 9. The soak") == 1 and "## 3. CLI latency" in text


def test_the_page_is_what_the_generators_make_of_the_stored_results(tmp_path) -> None:
    """``docs/benchmarks.md`` is generated: rewriting it from ``benchmarks/results.json``
    (``python -m benchmarks.report``, keeping the soak's and the autoscaler's sections, each
    with its own run's line) changes nothing, so no hand-written note hides in it."""
    import shutil
    from pathlib import Path

    from benchmarks import autoscale, soak
    from benchmarks.report import main

    root = Path(__file__).resolve().parents[2]
    page = tmp_path / "benchmarks.md"
    shutil.copy(root / "docs" / "benchmarks.md", page)
    assert main(["--json", str(root / "benchmarks" / "results.json"), "--markdown", str(page)]) == 0
    assert page.read_text() == (root / "docs" / "benchmarks.md").read_text(), (
        "docs/benchmarks.md differs from its generator's output: run 'python -m benchmarks.report'"
    )
    text = page.read_text()
    for begin, end in (
        (soak.DOCS_BEGIN, soak.DOCS_END),
        (autoscale.DOCS_BEGIN, autoscale.DOCS_END),
    ):
        section = text.split(begin, 1)[1].split(end, 1)[0]
        assert "\n\nMeasured on " in section  # the run it comes from
    assert "/root/" not in text and "/tmp/" not in text and "/work/" not in text


def test_a_section_of_its_own_script_names_its_run() -> None:
    from benchmarks.machine import provenance

    line = provenance(
        {"started": "2026-01-02 03:04 UTC", "cores_usable": 2, "cpu": "cpu", "memory": "1 GiB",
         "flinkish": "0.1.0", "spark": "4.3.0", "commit": "abc1234"}
    )  # fmt: skip
    assert line == (
        "Measured on 2026-01-02 03:04 UTC, on 2 cores, cpu, 1 GiB "
        "(flinkish 0.1.0, Spark 4.3.0, commit abc1234)."
    )
    assert provenance({}) == "Measured."


def test_a_run_of_some_sections_keeps_the_others_of_the_earlier_run(tmp_path: Path) -> None:
    from benchmarks.main import _with_earlier
    from benchmarks.report import write_json

    row = Row("flinkish --help", 0.1, "s", "python -c pass", 0.02, [0.1], [0.02], None, None)
    earlier = _results(row)
    earlier.mode = "full"
    earlier.sections.append(Section(key="kafka", title="11. Kafka", method="old"))
    earlier.parameters = {"cli": {"runs": 9}, "kafka": {"orders": 1}}
    stored = tmp_path / "results.json"
    write_json(earlier, stored)
    now = Section(key="kafka", title="11. Kafka", method="new", measured="c")
    sections, parameters = _with_earlier(stored, False, [now], {"kafka": {"orders": 2}})
    assert [(s.key, s.method) for s in sections] == [("kafka", "new"), ("cli", "how")]
    assert sections[1].measured == "a"  # when the earlier run started
    assert parameters == {"cli": {"runs": 9}, "kafka": {"orders": 2}}
    # a quick run never fills a full run's page, and no earlier results leave this run's
    assert _with_earlier(stored, True, [now], {}) == ([now], {})
    assert _with_earlier(tmp_path / "none.json", False, [now], {}) == ([now], {})
