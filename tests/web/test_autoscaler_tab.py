"""The dashboard's Autoscaler tab, opened in a real browser (headless Chromium at a laptop's
1366x768), over a registry as drivers write it: a running job with 20 minutes of batches in
its series (a Kafka-like source's backlog among them) and the rescale history its driver's
autoscaler wrote (a completed scale-up from 2 to 4, one to 6 rolled back, a metrics-only
decision whose reason is HTML, and the latest evaluation, held back by a guard); and a job
the autoscaler never evaluated.

What a user sees is what is checked: the tab is there only for the evaluated job, its chart
is drawn with the job's parallelism stepping from 2 to 4 (the rolled-back and metrics-only
decisions change nothing), the records are listed newest first with their outcomes, the
latest evaluation says why, and a reason from the registry is shown as text, never run.

(The documentation's picture of the tab comes from a real autoscaled job:
``scripts/screenshots.py --only autoscaler``.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from flinkish_cli.registry import series
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.browser import chromium, open_dashboard
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

SCALED, PLAIN = "c9" * 16, "d0" * 16
HOSTILE_REASON = '<img src=x onerror="window.pwned=1"> would scale down to 3.'
POINTS = 240  # 20 minutes of a batch every 5 s
BLOCKED = "stabilizing"


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".000Z"


def _progress(batch: int, at: float) -> Progress:
    busy = batch < 68  # behind until the scale-up (from batch 60, 40 s), then catching up
    return Progress(
        batch_id=batch,
        timestamp=_stamp(at),
        input_rows=500,
        input_rows_per_second=100.0 + (batch * 7) % 11,
        processed_rows_per_second=80.0 if busy else 150.0 + batch % 5,
        duration_ms=400,
        lag=float(batch * 40 if busy else max(0, 2720 - (batch - 68) * 60)),
    )


def _record(
    at: float, start: int, to: int, outcome: Outcome, reason: str, mode: str = "scaling"
) -> RescaleRecord:
    record = RescaleRecord.new(
        at, start, to, "up" if to > start else "down", reason, {}, mode == "scaling"
    )
    record.outcome = outcome
    record.end_time = record.time + 40_000 if outcome.final else None
    return record


def write_registry(root: Path) -> FlinkishEnv:
    """The registry the tab is shown over (see the module's docstring)."""
    now = time.time()
    env = FlinkishEnv.under(root)
    registry = JobRegistry.open(str(env.checkpoints))
    status = JobStatus(
        job_id=SCALED, name="orders-autoscaled", state=JobState.RUNNING, start_time=now - 1500,
        heartbeat=now + 3600, pid=4242, parallelism=4,
    )  # fmt: skip
    query = QueryStatus(name="orders", checkpoint=f"/cp/{SCALED}/orders", active=True)
    status.queries["orders"] = query
    kept = series.Series()
    first = now - 5 * POINTS
    for batch in range(POINTS):
        query.record(_progress(batch, first + 5 * batch))
        kept.merge(status)
    series.write(registry, SCALED, kept)
    registry.write(status)
    history = RescaleHistory()
    for record in (
        _record(first + 300, 2, 4, Outcome.COMPLETED, "Scale up from 2 to 4: orders 1.9x busy."),
        _record(first + 700, 4, 6, Outcome.ROLLED_BACK, "Scale up from 4 to 6: backlog 2400."),
        _record(first + 1000, 4, 3, Outcome.NOT_APPLIED, HOSTILE_REASON, "metrics-only"),
    ):
        history.append(record)
    history.record_evaluation({
        "time": int(now * 1000) - 5000, "current": 4, "target": 4, "direction": "none",
        "reason": "Keep 4: the job rescaled 3 minutes ago.", "blocked_by": BLOCKED,
        "figures": {"queries": {"orders": {"input_rate": 103.0, "processing_rate": 152.0}}},
    })  # fmt: skip
    history.write(registry, SCALED)
    plain = JobStatus(
        job_id=PLAIN, name="plain", state=JobState.FINISHED, start_time=now - 900,
        end_time=now - 600, pid=1,
    )  # fmt: skip
    registry.write(plain)
    return env


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    env = write_registry(tmp_path_factory.mktemp("autoscaler-tab"))
    with running_web(env, "-D", "web.refresh-interval=1 s") as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _wait(browser: Any, timeout: float = 30) -> WebDriverWait:
    return WebDriverWait(browser, timeout)


def test_the_tab_charts_the_parallelism_rates_and_backlog(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{SCALED}/overview")
    tab = _wait(browser).until(ec.visibility_of_element_located((By.ID, "tab-autoscaler")))
    tab.click()
    chart = "#autoscaler-tab #chart-autoscaler"
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, f"{chart} canvas")))
    canvas = browser.find_element(By.CSS_SELECTOR, f"{chart} canvas")
    assert canvas.size["width"] > 200 and canvas.size["height"] > 100, canvas.size
    legend = browser.find_element(By.CSS_SELECTOR, f"{chart} .u-legend").text
    for label in ("parallelism", "orders in", "orders backlog", "rescaled", "not rescaled"):
        assert label in legend, legend
    box = browser.find_element(By.CSS_SELECTOR, f"{chart} .chart-body")
    steps = json.loads(box.get_attribute("data-parallelism"))
    assert [p for _, p in steps] == [2, 4, 4], "2, then 4 at the scale-up's end; 6 rolled back"
    assert [t for t, _ in steps] == sorted(t for t, _ in steps)


def test_the_records_newest_first_and_the_latest_evaluation(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{SCALED}/autoscaler")
    rows = _wait(browser).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "#rescales tbody tr[data-outcome]")
    )
    outcomes = [row.get_attribute("data-outcome") for row in rows]
    assert outcomes == ["NOT_APPLIED", "ROLLED_BACK", "COMPLETED"]
    assert "4 → 3" in rows[0].text and "metrics-only" in rows[0].text
    assert "2 → 4" in rows[2].text and "COMPLETED" in rows[2].text and "40 s" in rows[2].text
    latest = browser.find_element(By.ID, "autoscaler-latest").text
    assert "Keep 4: the job rescaled 3 minutes ago." in latest and BLOCKED in latest


def test_a_reason_is_shown_as_text_never_run(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{SCALED}/autoscaler")
    _wait(browser).until(ec.text_to_be_present_in_element((By.ID, "rescales"), "<img src=x"))
    assert HOSTILE_REASON in browser.find_element(By.ID, "rescales").text
    assert browser.execute_script("return window.pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")


def test_the_tab_is_there_only_for_a_job_the_autoscaler_evaluated(
    web: WebServer, browser: Any
) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{PLAIN}/overview")
    time.sleep(1.5)  # a refresh or two
    assert not browser.find_element(By.ID, "tab-autoscaler").is_displayed()
    open_dashboard(browser, f"{web.url}/#/job/{PLAIN}/autoscaler")
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.ID, "chart-autoscaler"), "has not evaluated")
    )
    assert "No rescale decided yet" in browser.find_element(By.ID, "rescales").text
