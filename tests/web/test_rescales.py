"""Rescales over REST, as Flink 2.3's adaptive scheduler serves them, over real HTTP.

The registry holds a running job whose rescale history its driver wrote (with the
registry's own API): a completed scale-up, a rolled-back one, a metrics-only decision and
one under way. ``flinkish web`` answers Flink's rescale history, overview, summary and
details from it, and Flink's ``/resource-requirements``; a ``PUT`` of new requirements
reaches the job's control channel (the FakeDriver) as a rescale to the largest upper bound,
answered at once with a trigger that is polled.
Bad requests get Flink's ``{"errors": [...]}`` and reach nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.web.flink_json import vertex_id
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

JOB = "e5" * 16
NOW = time.time()


def _record(minutes_ago: float, to: int, outcome: Outcome, mode: str = "scaling") -> RescaleRecord:
    record = RescaleRecord.new(
        NOW - minutes_ago * 60, 2, to, "up", f"Scale up from 2 to {to}.", {"input": 1.0}, True
    )
    record.outcome, record.mode = outcome, mode
    record.end_time = None if not outcome.final else record.time + 30_000
    return record


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    return FlinkishEnv.under(tmp_path_factory.mktemp("rescales"))


@pytest.fixture(scope="module")
def job(env: FlinkishEnv) -> Iterator[FakeDriver]:
    registry = JobRegistry.open(str(env.checkpoints))
    driver = FakeDriver(registry, JOB)
    driver.status.parallelism = 2
    registry.write(driver.status)
    history = RescaleHistory()
    for record in (
        _record(50, 4, Outcome.COMPLETED),
        _record(40, 6, Outcome.ROLLED_BACK),
        _record(30, 3, Outcome.NOT_APPLIED, "metrics-only"),
        _record(1, 4, Outcome.IN_PROGRESS),
    ):
        history.append(record)
    figures = {
        "queries": {"counts": {"input_rate": 120.0, "processing_rate": 80.0, "busy_share": 0.9,
                               "backlog": 5000.0}},
        "utilisation": {"counts": 1.4},
    }  # fmt: skip
    history.record_evaluation({"time": int(NOW * 1000), "target": 4, "figures": figures})
    history.write(registry, JOB)
    yield driver
    driver.close()


@pytest.fixture(scope="module")
def web(env: FlinkishEnv, job: FakeDriver) -> Iterator[WebServer]:
    with running_web(env) as server:
        yield server


def test_the_history_is_flinks_newest_first_with_each_end_in_flinks_terms(web: WebServer) -> None:
    reply = web.get(f"/jobs/{JOB}/rescales/history")
    assert reply.status == 200
    history = reply.json()
    assert [r["terminalState"] for r in history] == [None, "IGNORED", "FAILED", "COMPLETED"]
    assert all(r["triggerCause"] == "UPDATE_REQUIREMENT" for r in history)
    done = history[-1]
    assert done["endTimestampInMillis"] - done["startTimestampInMillis"] == 30_000
    assert done["flinkish"]["from"] == 2 and done["flinkish"]["to"] == 4
    assert web.get(f"/v1/jobs/{JOB}/rescales/history").json() == history


def test_overview_summary_and_details(web: WebServer) -> None:
    overview = web.get(f"/jobs/{JOB}/rescales/overview").json()
    counts = {"ignored": 1, "inProgress": 1, "completed": 1, "failed": 1}
    assert overview["rescalesCounts"] == counts
    assert overview["latest"]["completed"]["flinkish"]["to"] == 4
    summary = web.get(f"/jobs/{JOB}/rescales/summary").json()
    assert summary["rescalesCounts"] == counts
    assert summary["completedRescalesDurationStatsInMillis"]["max"] == 30_000
    uuid = overview["latest"]["failed"]["rescaleUuid"]
    details = web.get(f"/jobs/{JOB}/rescales/details/{uuid}").json()
    vertices = details["vertices"]
    assert set(vertices) == {vertex_id(JOB, q) for q in ("counts", "raw")}
    assert {v["postRescaleParallelism"] for v in vertices.values()} == {2}  # rolled back
    missing = web.get(f"/jobs/{JOB}/rescales/details/{'0' * 32}")
    assert missing.status == 404 and len(missing.json()["errors"]) == 1


def test_resource_requirements_read_and_set(web: WebServer, job: FakeDriver) -> None:
    requirements = web.get(f"/jobs/{JOB}/resource-requirements").json()
    assert {v["parallelism"]["upperBound"] for v in requirements.values()} == {2}
    asked = {vertex: {"parallelism": {"lowerBound": 1, "upperBound": 5}} for vertex in requirements}
    reply = web.request("PUT", f"/jobs/{JOB}/resource-requirements", body=asked)
    assert reply.status == 200, reply  # at once, with the rescale's trigger
    trigger = reply.json()["request-id"]
    deadline, polled = time.monotonic() + 20, None
    while time.monotonic() < deadline:
        polled = web.get(f"/jobs/{JOB}/resource-requirements/{trigger}").json()
        if polled["status"]["id"] == "COMPLETED":
            break
        time.sleep(0.05)
    assert polled is not None and polled["status"]["id"] == "COMPLETED", polled
    assert job.rescaled_to == 5
    unknown = web.get(f"/jobs/{JOB}/resource-requirements/{'0' * 32}")
    assert unknown.status == 404 and len(unknown.json()["errors"]) == 1
    missing = web.request("PUT", f"/jobs/{'0' * 32}/resource-requirements", body=asked)
    assert missing.status == 404 and len(missing.json()["errors"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"v": {"parallelism": {"lowerBound": 1, "upperBound": 0}}},
        {"v": {"parallelism": {"upperBound": "4"}}},
        {"v": 3},
        {},
        [1, 2],
    ],
)
def test_bad_requirements_are_refused_and_reach_nothing(
    web: WebServer, job: FakeDriver, body: object
) -> None:
    before = len(job.requests)
    reply = web.request("PUT", f"/jobs/{JOB}/resource-requirements", body=body)
    assert reply.status == 400 and len(reply.json()["errors"]) == 1
    assert "Traceback" not in reply.body.decode()
    assert len(job.requests) == before


def test_prometheus_has_the_autoscalers_figures(web: WebServer) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    samples = {
        (sample.name, sample.labels.get("query") or sample.labels.get("outcome")): sample.value
        for family in text_string_to_metric_families(web.get("/metrics").body.decode())
        for sample in family.samples
        if sample.labels.get("job_id") == JOB
    }
    assert samples[("flinkish_autoscaler_parallelism", None)] == 2
    assert samples[("flinkish_autoscaler_target_parallelism", None)] == 4
    assert samples[("flinkish_autoscaler_rescales", "ROLLED_BACK")] == 1
    assert samples[("flinkish_autoscaler_input_rate", "counts")] == 120.0
    assert samples[("flinkish_autoscaler_backlog", "counts")] == 5000.0
    assert samples[("flinkish_autoscaler_utilisation", "counts")] == 1.4


def test_list_json_shows_the_autoscaler_the_same_from_storage_and_through_the_endpoint(
    env: FlinkishEnv, web: WebServer
) -> None:
    import json

    stored = env.run("list", "--output", "json", check=True)
    through = env.run("list", "-m", web.address, "--output", "json", check=True)
    [job] = [j for j in json.loads(stored.stdout)["jobs"] if j["jid"] == JOB]
    [same] = [j for j in json.loads(through.stdout)["jobs"] if j["jid"] == JOB]
    assert job["autoscaler"] == same["autoscaler"]
    autoscaler = job["autoscaler"]
    assert autoscaler["parallelism"] == 2 and autoscaler["latest"]["target"] == 4
    outcomes = [r["outcome"] for r in autoscaler["rescales"]]
    assert outcomes == ["IN_PROGRESS", "NOT_APPLIED", "ROLLED_BACK", "COMPLETED"]
