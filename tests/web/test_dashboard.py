"""The dashboard of ``flinkish web``, opened in a real browser (headless Chromium at a laptop's
1366x768), over a registry as drivers write it: a running job upgraded from an older one,
with an hour of batches in its series, savepoints, an exception and its configuration; a
finished job; a job whose name is HTML; a damaged status file.

What a user does is what is checked: the job list shows every job and its figures, a job's
page charts its series and lists its checkpoints, savepoints, exceptions and configuration,
the cancel button reaches the job, a token-protected endpoint asks for the token, nothing is
fetched from outside the endpoint, and job text is never run as HTML.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from flinkish_cli.registry import graph, program, series
from flinkish_cli.registry.control import ControlChannel, ControlRequest, ControlResponse
from flinkish_cli.registry.footprint import Footprint, PartSize
from flinkish_cli.registry.history import SavepointHistory, SavepointRecord, SavepointState, Trigger
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.browser import chromium, open_dashboard
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

RUNNING, OLD, HOSTILE = "e5" * 16, "f6" * 16, "a7" * 16
DAMAGED = "b8" * 16
NOW = time.time()  # set again when the registry is written (the tests' "now")
HOSTILE_NAME = '<img src=x onerror="window.pwned=1">'
HOSTILE_GRAPH = '<img src=x onerror="window.pwned=4">'
SERIES_POINTS = 240  # 20 minutes of a batch every 5 s, older than the status's recent ones
#: the running job's newest savepoint, disposed of: its last savepoint is the one before
DISPOSED_PATH = "/sp/savepoint-e5e5e5-000000000003"


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".000Z"


def _progress(batch: int, at: float, name: str) -> Progress:
    return Progress(
        batch_id=batch,
        timestamp=_stamp(at),
        input_rows=50,
        input_rows_per_second=10.0 + batch % 7,
        processed_rows_per_second=40.0 + batch % 5,
        duration_ms=200 + 10 * (batch % 9),
        state_rows=1000 + batch if name == "counts" else 0,
        state_bytes=(1000 + batch) * 64 if name == "counts" else 0,
        lag=float(batch % 11) if name == "counts" else None,
    )


@pytest.fixture(scope="module")
def registry_env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    global NOW
    NOW = time.time()  # not at import: the module may be collected minutes before it runs
    root = tmp_path_factory.mktemp("dashboard")
    env = FlinkishEnv.under(root)
    registry = JobRegistry.open(str(env.checkpoints))
    kept = series.Series()
    running = JobStatus(
        job_id=RUNNING, name="orders-pipeline", state=JobState.RUNNING, start_time=NOW - 1500,
        heartbeat=NOW + 3600, pid=4242, parallelism=2, restarts=1, upgraded_from=OLD,
        restored_from="/sp/savepoint-f6f6f6-000000000001",
    )  # fmt: skip
    for name in ("counts", "raw"):
        query = QueryStatus(name=name, checkpoint=f"/cp/{RUNNING}/{name}", active=True)
        first = NOW - 1300
        for batch in range(SERIES_POINTS):  # what earlier writes of the driver kept
            query.record(_progress(batch, first + 5 * batch, name))
            kept.merge(JobStatus(job_id=RUNNING, name="x", queries={name: query}))
        running.queries[name] = query
    running.queries["raw"].footprint = Footprint(
        NOW - 30, {"offsets": PartSize(20, 13000), "sources": PartSize(3, 5 << 20)}
    )
    series.write(registry, RUNNING, kept)
    for batch in range(SERIES_POINTS, SERIES_POINTS + 3):  # newer than the series file
        for name, query in running.queries.items():
            query.record(_progress(batch, NOW - 20 + batch - SERIES_POINTS, name))
    running.remember_failure("ValueError: bad row 17\n  at job.py:3", NOW - 600, 1, "counts")
    old = JobStatus(
        job_id=OLD, name="orders-pipeline", state=JobState.FINISHED, start_time=NOW - 7200,
        end_time=NOW - 1500, pid=1, upgraded_to=RUNNING,
    )  # fmt: skip
    hostile = JobStatus(
        job_id=HOSTILE, name=HOSTILE_NAME, state=JobState.FAILED, start_time=NOW - 300,
        end_time=NOW - 200, pid=2, failure_cause="<script>window.pwned=2</script>",
    )  # fmt: skip
    hostile.remember_failure("<b>RuntimeError</b>: <script>window.pwned=3</script>", NOW - 250, 0)
    hostile.queries["q"] = QueryStatus(name="q", checkpoint=f"/cp/{HOSTILE}/q")
    for status in (running, old, hostile):
        registry.write(status)
    graph.write(registry, HOSTILE, graph.JobGraph({"q": _hostile_graph()}))
    history = SavepointHistory(registry)
    completed, disposed = SavepointState.COMPLETED, SavepointState.DISPOSED
    for job_id, path, trigger, state, age in (
        (OLD, "/sp/savepoint-f6f6f6-000000000001", Trigger.UPGRADE, completed, 1500),
        (RUNNING, "/sp/savepoint-e5e5e5-000000000002", Trigger.PERIODIC, completed, 60),
        (RUNNING, DISPOSED_PATH, Trigger.MANUAL, disposed, 0),
    ):
        history.record(SavepointRecord(job_id, trigger, state, path, NOW - age, 4096))
        time.sleep(0.001)  # record ids sort by the time they were made
    record = program.ProgramRecord(
        kind="file", target="orders.py", conf={"parallelism.default": "2", "pipeline.name": "x"}
    )
    program.keep(registry, RUNNING, record, [])
    damaged = env.checkpoints / DAMAGED / "_flinkish" / "status.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text("{ not json")
    return env


def _hostile_graph() -> graph.QueryGraph:
    """A graph whose texts (a source's description, a plan) are HTML."""
    nodes = [
        graph.Node("source-0", "source", "Source: <b>x</b>", "MicroBatchScan", HOSTILE_GRAPH),
        graph.Node("sink", "sink", "Sink: <i>y</i>", "", "<script>window.pwned=5</script>"),
    ]
    edges = [graph.Edge("source-0", "sink")]
    return graph.QueryGraph(
        "run", 0, 0, True, nodes, edges, f"== Physical Plan ==\n{HOSTILE_GRAPH}"
    )


@pytest.fixture(scope="module")
def web(registry_env: FlinkishEnv) -> Iterator[WebServer]:
    with running_web(registry_env, "-D", "web.refresh-interval=1 s") as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _wait(browser: Any, timeout: float = 30) -> WebDriverWait:
    return WebDriverWait(browser, timeout)


def _live(browser: Any) -> WebDriverWait:
    """The dashboard re-renders on its refresh timer: an element found just before may be
    replaced before it is read or clicked (stale); it is then found again in the new page."""
    return WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))


def _text(browser: Any, css: str) -> str:
    return _live(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, css).text or " ")


def _click(browser: Any, by: str, value: str) -> None:
    _live(browser).until(lambda b: b.find_element(by, value).click() or True)


def test_the_job_list_shows_every_job_and_its_figures(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, web.url + "/")
    row = _text(browser, f"tr[data-jid='{RUNNING}']")
    assert "orders-pipeline" in row and "RUNNING" in row
    assert "25m" in row, "uptime: started 25 minutes ago"
    assert "28/s" in row, "the input rate of its two queries' latest batches, 14/s each"
    finished = _text(browser, f"tr[data-jid='{OLD}']")
    assert "FINISHED" in finished
    tables = browser.find_elements(By.CSS_SELECTOR, "main table")
    assert len(tables) == 2 and RUNNING in tables[0].text and OLD in tables[1].text
    assert "1 job(s) in the registry could not be read" in _text(browser, "main")
    counts = _text(browser, "#counts")
    assert "Running 1" in counts and "Finished 1" in counts and "Failed 1" in counts
    _click(browser, By.LINK_TEXT, "orders-pipeline")
    _wait(browser).until(ec.url_contains(f"#/job/{RUNNING}/overview"))


def test_the_job_list_shows_the_last_completed_savepoint(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, web.url + "/")
    row = _text(browser, f"tr[data-jid='{RUNNING}']")
    assert "/sp/savepoint-e5e5e5-000000000002" in row
    assert DISPOSED_PATH not in row, "a disposed savepoint is never the last one"


def test_a_jobs_page_charts_its_series(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/overview")
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#chart-lag .uplot")))
    header = _text(browser, "main")
    assert "orders-pipeline" in header and "Restarts\n1" in header and OLD in header
    legend = _text(browser, "#chart-rates .u-legend")
    for label in ("counts in", "counts processed", "raw in", "raw processed"):
        assert label in legend
    for chart in ("duration", "state", "state-rows", "lag"):
        assert browser.find_elements(By.CSS_SELECTOR, f"#chart-{chart} canvas"), chart
    assert "counts" in _text(browser, "#chart-lag .u-legend")
    # the charts draw the kept series and the status's newest batches: the whole hour
    drawn = json.loads(web.get(f"/flinkish/jobs/{RUNNING}/series").body)
    assert [len(points) for points in drawn["queries"].values()] == [SERIES_POINTS + 3] * 2
    assert "Queries" in header and "counts" in _text(browser, "main table")


def test_a_jobs_checkpoints_savepoints_exceptions_and_configuration(
    web: WebServer, browser: Any
) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/checkpoints")
    _wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "History"))
    rows = browser.find_elements(By.CSS_SELECTOR, "main table tbody tr:not([data-part])")
    assert len(rows) == 10, "web.checkpoints.history rows"
    size = _text(browser, "#checkpoint-size")
    assert "raw sources 3 5.0 MiB with age" in size and "raw offsets 20 12.7 KiB bounded" in size
    assert "grows for as long as the query runs" in size
    assert "flinkish.file-source.log.cleanup-delay" in size, "what to do"
    assert rows[0].text.startswith(str(SERIES_POINTS + 2))
    _click(browser, By.ID, "tab-savepoints")
    _wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "PERIODIC"))
    table = _text(browser, "main table")
    assert "/sp/savepoint-e5e5e5-000000000002" in table and "this job" in table
    assert "UPGRADE" in table and OLD in table, "the savepoint of the job it was upgraded from"
    _click(browser, By.ID, "tab-exceptions")
    _wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "bad row 17"))
    assert "counts" in _text(browser, ".exception")
    _click(browser, By.ID, "tab-configuration")
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "parallelism.default")
    )


def test_the_page_updates_by_itself(
    web: WebServer, browser: Any, registry_env: FlinkishEnv
) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/checkpoints")
    _wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "History"))
    registry = JobRegistry.open(str(registry_env.checkpoints))
    status = registry.get(RUNNING)
    newest = SERIES_POINTS + 3
    status.queries["counts"].record(_progress(newest, NOW, "counts"))
    registry.write(status)
    first_row = (By.CSS_SELECTOR, "main table tbody tr:not([data-part])")
    _wait(browser).until(ec.text_to_be_present_in_element(first_row, f"{newest} counts"))


def test_cancel_from_the_page_reaches_the_job(
    web: WebServer, browser: Any, registry_env: FlinkishEnv
) -> None:
    """The button sends Flink's cancel; here the test answers as the job's driver would
    (through the registry's control channel), since the job has no driver."""
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/overview")
    _wait(browser).until(ec.element_to_be_clickable((By.ID, "cancel-job"))).click()
    _wait(browser).until(ec.alert_is_present()).accept()
    channel = ControlChannel(JobRegistry.open(str(registry_env.checkpoints)), RUNNING)
    asked: list[ControlRequest] = []
    _wait(browser).until(lambda _: asked.extend(channel.pending()) or asked)
    assert [request.action for request in asked] == ["cancel"]
    channel.respond(ControlResponse(asked[0].request_id, ok=True))
    _wait(browser).until(lambda b: b.find_element(By.ID, "action-result").text)
    assert f"Cancellation of job {RUNNING} requested." in _text(browser, "#action-result")


def test_stop_with_a_savepoint_from_the_page_shows_where_it_is(
    web: WebServer, browser: Any, registry_env: FlinkishEnv, tmp_path: Path
) -> None:
    """Flink's stop (POST /jobs/:jobid/stop) with the directory typed in, then its trigger
    polled until the savepoint's path is there; the test answers as the driver."""
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/overview")
    target = str(tmp_path / "from-the-page")
    _wait(browser).until(ec.element_to_be_clickable((By.ID, "savepoint-dir"))).send_keys(target)
    browser.find_element(By.ID, "stop-job").click()
    _wait(browser).until(ec.alert_is_present()).accept()
    channel = ControlChannel(JobRegistry.open(str(registry_env.checkpoints)), RUNNING)
    asked: list[ControlRequest] = []
    _wait(browser).until(lambda _: asked.extend(channel.pending()) or asked)
    assert [(r.action, r.args["target"]) for r in asked] == [("stop", target)], asked
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.ID, "action-result"), "with a savepoint (trigger")
    )
    path = f"{target}/savepoint-e5e5e5-0123456789ab"
    channel.respond(ControlResponse(asked[0].request_id, ok=True, result={"path": path}))
    _wait(browser).until(
        ec.text_to_be_present_in_element((By.ID, "action-result"), "Savepoint completed")
    )
    assert path in _text(browser, "#action-result")


def test_job_text_is_shown_never_run(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, web.url + "/#/overview")
    assert HOSTILE_NAME in _text(browser, f"tr[data-jid='{HOSTILE}']")
    open_dashboard(browser, f"{web.url}/#/job/{HOSTILE}/exceptions")
    _wait(browser).until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "<b>Runtime"))
    assert "<script>window.pwned=2</script>" in _text(browser, "main")
    assert browser.execute_script("return window.pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
    open_dashboard(browser, f"{web.url}/#/job/{HOSTILE}/graph")
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "g.graph-node")))
    drawn = _text(browser, "section[data-query='q'] svg.graph")
    assert "Source: <b>x</b>" in drawn and "Sink: <i>y</i>" in drawn
    browser.find_element(By.CSS_SELECTOR, "section[data-query='q'] details:not([class])").click()
    assert HOSTILE_GRAPH in _text(browser, "section[data-query='q'] pre")
    assert browser.execute_script("return window.pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script, svg foreignObject")


def test_offline_and_on_a_laptop_screen(web: WebServer, browser: Any) -> None:
    open_dashboard(browser, f"{web.url}/#/job/{RUNNING}/overview")
    _wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#chart-rates .uplot")))
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert fetched and all(url.startswith(web.url + "/") for url in fetched), fetched
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    ), "no sideways scrolling at 1366x768"
    page = web.get("/")
    assert page.status == 200 and b"http" not in page.body
    licence = web.get("/assets/vendor/uPlot.LICENSE")
    assert licence.status == 200 and b"MIT License" in licence.body
    licence = web.get("/assets/vendor/dagre.LICENSE")
    assert licence.status == 200 and b"Permission is hereby granted" in licence.body
    assert web.get("/assets/../app.py").status == 404


def test_a_token_protected_endpoint_asks_for_the_token(
    registry_env: FlinkishEnv, browser: Any
) -> None:
    token = "dashboard-t0ken"
    options = ("-D", "flinkish.web.auth-token=${env:WEB_TOKEN}")
    with running_web(registry_env, *options, environ={"WEB_TOKEN": token}) as web:
        assert web.get("/").status == 200, "the page holds no data: served to anyone"
        assert web.get("/flinkish/jobs").status == 401
        browser.get(web.url + "/")
        browser.execute_script("sessionStorage.clear()")
        browser.get(web.url + "/#/overview")
        field = _wait(browser).until(ec.visibility_of_element_located((By.ID, "login-token")))
        field.send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
        _wait(browser).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, f"tr[data-jid='{RUNNING}']"))
        )
        assert token not in browser.page_source
