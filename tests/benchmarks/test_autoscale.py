"""The autoscaler benchmark's figures and report from a synthetic result, without Spark
(``scripts/autoscale`` runs it for real; its goals are reported, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.autoscale import (
    AUTOSCALED,
    FIXED,
    AutoscaleParams,
    AutoscaleResult,
    RunResult,
    Sample,
    Service,
    figures,
    grows_throughout,
    report,
    section_of,
    slot_seconds,
    write_docs,
)
from benchmarks.report import Results, Section, markdown, validate, write_markdown
from tests.benchmarks.test_report import MACHINE

PARAMS = AutoscaleParams(rate=10, low=60, high=120, low_after=60, trigger=5)  # step 60 s to 180 s


def _record(at: float, to: int, direction: str, outcome: str = "COMPLETED") -> dict:
    return {
        "at": at, "ended": at + 20, "from": 1, "to": to, "direction": direction,
        "outcome": outcome, "reason": f"Scale {direction} | to {to}",
    }  # fmt: skip


def _result() -> AutoscaleResult:
    """Autoscaled: 1 until 90 s, 4 until 200 s, then 2; its backlog peaks at 2 000 rows and
    is down to 100 at 150 s. Fixed at 1: the backlog grows through the step."""
    auto, fixed = RunResult(AUTOSCALED, job="a" * 32), RunResult(FIXED, job="b" * 32)
    for at in range(0, 250, 10):
        parallelism = 1 if at < 90 else 4 if at < 200 else 2
        backlog = 2000 if 80 <= at < 120 else 100
        auto.samples.append(Sample(at, parallelism, 10 * at + backlog, 10 * at))
        grown = max(0, at - 60) * 40 if at <= 180 else 4800
        fixed.samples.append(Sample(at, 1, 10 * at + grown + 50, 10 * at))
    auto.rescales = [_record(75, 4, "up"), _record(195, 2, "down")]
    auto.exactly_once = "yes: 2600 rows, each once and enriched; 200 counts right"
    fixed.exactly_once = "yes: 2600 rows, each once and enriched; 200 counts right"
    return AutoscaleResult(PARAMS, {AUTOSCALED: auto, FIXED: fixed}, requests=5200, most_at_once=4)


def test_the_figures_of_a_run_that_caught_up() -> None:
    f = figures(_result())
    assert (f.first_rescale, f.worked_off, f.catch_up_seconds) == (75, 120, 45)
    assert not f.regrew and f.peak == 2000
    assert f.fixed_grew and f.fixed_peak == 4850
    assert (f.ups, f.downs, f.before, f.largest) == (1, 1, 0, 4)
    # 1 × 90 s + 4 × 110 s + 2 × 40 s over the 240 s schedule, against 4 × 240 s
    assert f.slot_seconds == pytest.approx(90 + 440 + 80)
    assert f.slot_share == pytest.approx(610 / 960)


def test_a_result_written_as_json_reports_the_same_again() -> None:
    import json

    result = _result()
    again = AutoscaleResult.from_json(json.loads(json.dumps(result.to_json())))
    assert report(again) == report(result)


def test_a_backlog_that_grows_in_steps_grows_and_one_that_levels_off_does_not() -> None:
    # the fixed job's backlog of the full run: it rises by a batch's worth, drops by 30 files
    # when the batch commits, and rises again; its last sample is not its largest
    steps = [24, 144, 240, 300, 480, 360, 540, 720, 576, 756, 936, 756, 984, 900, 1080]
    steps += [1260, 1080, 1260, 1440, 1260, 1392, 1572, 1392, 1572, 1752, 1466]
    sawtooth = [Sample(600 + 24 * i, 1, 5000 + b, 5000) for i, b in enumerate(steps)]
    assert grows_throughout(sawtooth, 600, 1200)
    level = [Sample(s.at, 1, 5000 + min(s.backlog, 900), 5000) for s in sawtooth]  # flat
    assert not grows_throughout(level, 600, 1200)
    assert not grows_throughout(sawtooth[:10], 600, 1200)  # no samples at the step's end


def test_slot_seconds_hold_each_samples_parallelism_until_the_next() -> None:
    samples = [Sample(0, 1, 0, 0), Sample(10, 3, 0, 0), Sample(25, 2, 0, 0)]
    assert slot_seconds(samples, 30) == 10 + 45 + 10
    assert slot_seconds(samples, 20) == 10 + 30


def test_the_report_gives_the_timeline_the_rescales_and_each_goal() -> None:
    text = report(_result())
    assert "| t | input rows/s | autoscaled: parallelism |" in text
    assert "| 60 s | 60 | 1 |" in text  # the step's rate from 60 s
    assert "| 75 s | 95 s | 1 → 4 | COMPLETED | Scale up \\| to 4 |" in text
    assert "From the step's first rescale to its backlog worked off: 45 s." in text
    goal_rows = [line for line in text.splitlines() if line.endswith("held** |")]
    assert len(goal_rows) == 5
    assert "| 1 up, 1 down; 0 in the first low phase | **held** |" in text
    assert "(0.64; fixed at 4) | **not held** |" in text  # above 0.6
    assert text.count("exactly once: yes") == 2


def test_a_run_without_a_rescale_or_rows_says_so() -> None:
    result = _result()
    result.runs[AUTOSCALED].rescales = [_record(30, 2, "up", "NOT_APPLIED")]
    result.runs[FIXED].exactly_once = "NO: 0 rows twice, 3 missing, 0 not enriched, 0 counts wrong"
    f = figures(result)
    assert f.first_rescale is None and f.catch_up_seconds is None and f.before == 1
    text = report(result)
    assert "| no scale-up during the step | **not held** |" in text
    assert "not worked off" in text


def test_as_a_section_of_the_benchmark_it_validates_and_renders() -> None:
    empty = Section(key="autoscale", title="10. The autoscaler", method="m")
    section = section_of(_result(), empty)
    results = Results("quick", "a", "b", 1.0, dict(MACHINE), {}, [section])
    assert validate(results.to_dict()) == []
    page = markdown(results)
    assert "| slot-seconds, autoscaled | 610 slot-s |" in page
    skipped = Section(key="autoscale", title="t", method="m", skipped="BENCH_AUTOSCALE=1")
    assert validate(Results("quick", "a", "b", 1.0, dict(MACHINE), {}, [skipped]).to_dict()) == []


def test_its_docs_section_is_kept_by_the_benchmark_and_the_soaks(tmp_path: Path) -> None:
    from benchmarks.soak import write_docs as write_soak
    from tests.benchmarks.test_report import _results

    page = tmp_path / "benchmarks.md"
    write_soak("soak: exactly once", page)
    write_docs("autoscale: first", page)
    write_docs("autoscale: second", page)  # replaces its own section only
    text = page.read_text()
    assert "autoscale: first" not in text and text.count("## 10. The autoscaler") == 1
    from benchmarks.report import Row

    results = _results(Row("x", 0.1, "s", "ref", 0.1, [0.1], [0.1]))
    # a full run skips the autoscaler's section (BENCH_AUTOSCALE unset): the kept one stands
    results.sections.append(
        Section(key="autoscale", title="10. The autoscaler", method="m", skipped="not run")
    )
    write_markdown(results, page)
    text = page.read_text()
    assert "soak: exactly once" in text and "autoscale: second" in text
    assert text.count("## 10. The autoscaler") == 1 and "not run" not in text
    assert text.index("## 9. The soak") < text.index("## 10. The autoscaler")
    assert text.index("## 10. The autoscaler") < text.index("## Parameters of this run")


def test_the_service_answers_after_its_latency_and_counts() -> None:
    import json
    import time
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with Service(0.05, bound=2) as service:
        began = time.monotonic()
        with opener.open(f"{service.url}/k001", timeout=10) as answer:
            body = json.loads(answer.read())
        assert time.monotonic() - began >= 0.05
    assert body["key"] == "k001" and body["region"].startswith("r")
    assert service.requests == 1 and service.most == 1
