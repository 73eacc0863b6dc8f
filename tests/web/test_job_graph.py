"""The job graph of a real job, from the user's side: one program with two queries in the
idioms of Spark's guide (a stream-stream join of impressions and clicks with watermarks and a
time-range condition, and a count per word in sliding windows), run on local Spark, read
through Flink's ``GET /jobs/:jobid/plan``, flinkish's ``/flinkish/jobs/:jobid/plan``,
``flinkish info <JobID> --output json``, and drawn by the dashboard in headless Chromium.

One job serves every assertion (it starts once, for the module); the graph's structure is
built at its seam by tests/runtime/explain/test_graph_builder.py, on plans a real Spark explained.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.browser import chromium, open_dashboard
from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, _kill_leftover_jobs, job_id_of
from tests.fixtures.web_server import WebServer, running_web

pytestmark = pytest.mark.spark

JOB = str(JOBS / "clicks_and_windows.py")
JOIN_STORES = [
    "left-keyToNumValues",
    "left-keyWithIndexToValue",
    "right-keyToNumValues",
    "right-keyWithIndexToValue",
]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlinkishEnv]:
    env = FlinkishEnv.under(tmp_path_factory.mktemp("graph"))
    try:
        yield env
    finally:
        _kill_leftover_jobs(env)


@pytest.fixture(scope="module")
def web(env: FlinkishEnv) -> Iterator[WebServer]:
    with running_web(env) as server:
        yield server


@pytest.fixture(scope="module")
def job(env: FlinkishEnv, web: WebServer) -> Iterator[str]:
    """The running job, once both queries' graphs are recorded and their figures have a
    watermark (some batches in)."""
    job_id = job_id_of(env.run("run", "-d", JOB, str(env.root / "out"), check=True).stdout)
    deadline = time.monotonic() + 240
    while True:
        reply = web.get(f"/flinkish/jobs/{job_id}/plan")
        document = reply.json() if reply.status == 200 else {}
        queries = document.get("queries") or {}
        if len(queries) == 2 and all(_ready(q) for q in queries.values()):
            break
        state = env.job(job_id)["state"]
        assert state in ("CREATED", "RUNNING"), env.job(job_id)
        assert time.monotonic() < deadline, json.dumps(document)[:3000]
        time.sleep(0.5)
    yield job_id
    env.run("cancel", job_id, check=True)


def _ready(query: dict[str, Any]) -> bool:
    stateful = [n for n in query["nodes"] if n["kind"] == "stateful"]
    return (
        query["complete"]
        and bool(stateful)
        and stateful[0]["metrics"]["state-rows"] is not None
        and query["figures"]["watermark"] is not None
    )


def _nodes(query: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [node for node in query["nodes"] if node["kind"] == kind]


def test_flinks_plan_has_each_operator_and_the_exchanges(web: WebServer, job: str) -> None:
    reply = web.get(f"/jobs/{job}/plan")
    assert reply.status == 200
    plan = reply.json()["plan"]
    assert (plan["jid"], plan["name"], plan["type"]) == (job, "clicks_and_windows", "STREAMING")
    nodes = {node["id"]: node for node in plan["nodes"]}
    operators = sorted(node["operator"] for node in plan["nodes"])
    assert operators == sorted(
        ["Source: RateStreamV2"] * 3
        + ["Watermark"] * 3
        + ["Stream-stream join (Inner)", "Aggregation", "Sink: FileSink", "Sink: ConsoleTable"]
    )
    (join,) = [n for n in plan["nodes"] if n["operator_strategy"] == "StreamingSymmetricHashJoin"]
    assert [i["ship_strategy"] for i in join["inputs"]] == ["HASH", "HASH"]
    assert {nodes[i["id"]]["operator"] for i in join["inputs"]} == {"Watermark"}
    assert join["parallelism"] == 2, "its state partitions"
    (aggregation,) = [n for n in plan["nodes"] if n["operator"] == "Aggregation"]
    assert [i["ship_strategy"] for i in aggregation["inputs"]] == ["HASH"]
    (sink,) = [n for n in plan["nodes"] if n["operator"] == "Sink: FileSink"]
    assert [(nodes[i["id"]]["operator"], i["ship_strategy"]) for i in sink["inputs"]] == [
        ("Stream-stream join (Inner)", "FORWARD")
    ]
    vertices = {v["name"]: v["id"] for v in web.get(f"/jobs/{job}").json()["vertices"]}
    assert join["job_vertex_id"] == vertices["clicks"]
    assert aggregation["job_vertex_id"] == vertices["window_counts"]
    assert web.get(f"/v1/jobs/{job}/plan").json()["plan"]["nodes"] == plan["nodes"]
    assert web.get(f"/jobs/{job}").json()["plan"]["nodes"] == plan["nodes"]
    missing = web.get(f"/jobs/{'0' * 32}/plan")
    assert missing.status == 404 and missing.json()["errors"]


def test_each_operator_has_its_figures(web: WebServer, job: str) -> None:
    document = web.get(f"/flinkish/jobs/{job}/plan").json()
    clicks, counts = document["queries"]["clicks"], document["queries"]["window_counts"]
    (join,) = _nodes(clicks, "stateful")
    assert (join["label"], join["operator-id"], join["partitions"]) == (
        "Stream-stream join (Inner)",
        0,
        2,
    )
    assert join["stores"] == JOIN_STORES
    assert join["description"].startswith("adId = clickAdId; condition ")
    metrics = join["metrics"]
    assert metrics["state-rows"] > 0 and metrics["state-memory-bytes"] > 0
    assert metrics["rows-dropped-by-watermark"] >= 0 and metrics["watermark"]
    spent = [metrics[f"{k}-time-ms-per-second"] for k in ("busy", "backpressured", "idle")]
    assert abs(sum(spent) - 1000) < 1 and 0 < spent[0] <= 1000
    assert 0 < clicks["figures"]["busy-share"] <= 1
    assert clicks["figures"]["trigger-ms"] == 500, "the test configuration's interval"
    sources = _nodes(clicks, "source")
    assert len(sources) == 2
    assert all(s["metrics"]["input-rows-per-second"] is not None for s in sources)
    assert all(isinstance(s["metrics"]["end-offset"], int) for s in sources), "rate's offsets"
    assert {w["description"] for w in _nodes(clicks, "watermark")} == {
        "impressionTime, delay 10 seconds",
        "clickTime, delay 20 seconds",
    }
    hashed = {(e["side"], tuple(e["keys"]), e["partitions"]) for e in clicks["edges"]}
    assert {("left", ("adId",), 2), ("right", ("clickAdId",), 2)} <= hashed
    (aggregation,) = _nodes(counts, "stateful")
    assert aggregation["description"] == "by window, word (Update mode)"
    assert (aggregation["stores"], aggregation["partitions"]) == (["default"], 2)
    assert aggregation["metrics"]["state-rows"] > 0
    assert "Exchange hashpartitioning" in counts["plan"], "Spark's own plan beside"


def test_info_as_json_has_the_same_graph(env: FlinkishEnv, web: WebServer, job: str) -> None:
    shown = json.loads(env.run("info", job, "--output", "json", check=True).stdout)
    served = web.get(f"/flinkish/jobs/{job}/plan").json()
    for name in ("clicks", "window_counts"):
        graph = shown["queries"][name]["graph"]
        same = served["queries"][name]
        assert graph["nodes"] and graph["run-id"] == same["run-id"]
        assert [(n["id"], n["label"]) for n in graph["nodes"]] == [
            (n["id"], n["label"]) for n in same["nodes"]
        ]
        assert graph["edges"] == same["edges"]
        assert shown["queries"][name]["checkpoint"].endswith(f"/{job}/{name}")


def test_the_dashboard_draws_the_graph(web: WebServer, job: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    served = web.get(f"/flinkish/jobs/{job}/plan").json()["queries"]
    with chromium() as driver:
        open_dashboard(driver, f"{web.url}/#/job/{job}/graph")
        for name, query in served.items():
            section = f"section[data-query='{name}']"
            WebDriverWait(driver, 30).until(
                lambda d, s=section, q=query: (
                    len(d.find_elements(By.CSS_SELECTOR, f"{s} g.graph-node")) == len(q["nodes"])
                )
            )
            edges = driver.find_elements(By.CSS_SELECTOR, f"{section} g.graph-edge path")
            assert len(edges) == len(query["edges"])
            assert all(e.get_attribute("d").startswith("M ") for e in edges), "laid out"
            boxes = driver.find_elements(By.CSS_SELECTOR, f"{section} g.graph-node rect.box")
            assert all(float(b.get_attribute("width")) > 100 for b in boxes)
        (join,) = driver.find_elements(
            By.CSS_SELECTOR, "section[data-query='clicks'] g.graph-node[data-kind='stateful']"
        )
        text = join.text
        assert "Stream-stream join (Inner)" in text and "operator 0 · 2 partitions" in text
        assert "state " in text and " rows · " in text and "memory " in text
        hashes = driver.find_elements(
            By.CSS_SELECTOR, "section[data-query='clicks'] g.graph-edge.ship-hash text"
        )
        assert sorted(h.text.split(":")[0] for h in hashes) == ["left", "right"]
        assert driver.execute_script("return window.pwned") is None
        problem = driver.find_element(By.ID, "problem")
        assert not problem.is_displayed(), problem.text
