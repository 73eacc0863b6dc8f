"""Flink's process metrics of a real running job, scraped by a real Prometheus: a dashboard
or an alert written for Flink finds every series it reads for the job.

One job (the counting job on local Spark, its JVMs measured every second) runs for the
module, one ``flinkish web`` serves its registry and one Prometheus (Debian's) scrapes it
every second (the suite's only Prometheus). Each metric name of issue 25's item 4 must be on
``/metrics`` with the job's labels, with figures a JVM can have, and Prometheus must answer
a query for each with a series of the job.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv, _kill_leftover_jobs, write_events
from tests.fixtures.prometheus import SCRAPE_JOB, Prometheus, running_prometheus
from tests.fixtures.web_server import WebServer, running_web

pytestmark = pytest.mark.spark

#: The tests' drivers run the serial collector (``TEST_JVM_OPTIONS``): its two collectors.
COLLECTORS = ("Copy", "MarkSweepCompact", "All")
JVM = (
    "Status_JVM_Memory_Heap_Used",
    "Status_JVM_Memory_NonHeap_Used",
    "Status_JVM_CPU_Load",
    "Status_JVM_CPU_Time",
    "Status_JVM_Threads_Count",
    *(f"Status_JVM_GarbageCollector_{c}_{f}" for c in COLLECTORS for f in ("Count", "Time")),
)
CLUSTER = (
    "flink_jobmanager_numRunningJobs",
    "flink_jobmanager_numRegisteredTaskManagers",
    "flink_jobmanager_taskSlotsTotal",
    "flink_jobmanager_taskSlotsAvailable",
)
TASK = tuple(
    f"flink_taskmanager_job_task_{name}TimeMsPerSecond"
    for name in ("busy", "backPressured", "idle")
)
#: Every metric name of item 4: the driver's JVM, the executor's, the cluster, the tasks.
ITEM_4 = (
    *(f"flink_jobmanager_{name}" for name in JVM),
    *(f"flink_taskmanager_{name}" for name in JVM),
    *CLUSTER,
    *TASK,
)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FlinkishEnv, str]]:
    env = FlinkishEnv.under(tmp_path_factory.mktemp("jvm-metrics"))
    env.write_conf({"flinkish.metrics.jvm.interval": "1 s"})
    inputs = env.root / "input"
    write_events(inputs, [{"key": f"k{n % 3}", "value": n, "seq": n} for n in range(20)])
    job_id = env.run_counts_detached(inputs, env.root / "output")
    try:
        env.wait_for_batches(job_id, "counts", 0)
        _wait_for_executors(env.checkpoints / job_id / "_flinkish" / "jvm.json")
        yield env, job_id
    finally:
        env.run("cancel", job_id)
        _kill_leftover_jobs(env)


def _wait_for_executors(record: Path, timeout: float = 60) -> None:
    """Until the driver has recorded its JVMs with the session's executors."""
    deadline = time.monotonic() + timeout
    while not (record.exists() and json.loads(record.read_text())["taskmanagers"]):
        assert time.monotonic() < deadline, f"no executors in {record}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def web(job: tuple[FlinkishEnv, str]) -> Iterator[WebServer]:
    with running_web(job[0]) as server:
        yield server


@pytest.fixture(scope="module")
def prometheus(web: WebServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    with running_prometheus(web.address, tmp_path_factory.mktemp("prometheus")) as server:
        yield server


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of ``name`` in Prometheus' text format: (labels, value)."""
    found = []
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
            found.append((labels, float(match.group(2))))
    return found


def test_every_name_is_on_metrics_with_the_jobs_labels(
    job: tuple[FlinkishEnv, str], web: WebServer
) -> None:
    _env, job_id = job
    text = web.get("/metrics").body.decode()
    mine = {}
    for name in ITEM_4:
        samples = [(labels, v) for labels, v in _samples(text, name) if labels["job_id"] == job_id]
        assert samples, f"{name} has no sample of job {job_id}"
        assert all(labels["job_name"] == "counts_job" for labels, _ in samples), samples
        mine[name] = samples

    def value(name: str) -> float:
        [(_labels, figure)] = mine[name]
        return figure

    # local[2]: the executor is the driver's JVM, with its 2 slots
    [(labels, _)] = mine["flink_taskmanager_Status_JVM_CPU_Time"]
    assert labels["tm_id"] == "driver" and labels["host"]
    assert value("flink_jobmanager_numRegisteredTaskManagers") == 1
    assert value("flink_jobmanager_taskSlotsTotal") == 2
    assert 0 <= value("flink_jobmanager_taskSlotsAvailable") <= 2
    assert value("flink_jobmanager_numRunningJobs") == 1
    assert value("flink_jobmanager_Status_JVM_Memory_Heap_Used") > 1 << 20
    assert value("flink_jobmanager_Status_JVM_Threads_Count") > 10
    assert value("flink_jobmanager_Status_JVM_CPU_Time") > 1e9  # a JVM that started Spark
    assert 0 <= value("flink_jobmanager_Status_JVM_CPU_Load") <= 1
    every = "flink_jobmanager_Status_JVM_GarbageCollector_"
    assert value(every + "All_Count") == value(every + "Copy_Count") + value(
        every + "MarkSweepCompact_Count"
    )
    for query in ("counts", "raw"):
        spent = [
            next(v for labels, v in mine[name] if labels["task_name"] == query) for name in TASK
        ]
        assert sum(spent) == pytest.approx(1000), (query, spent)


def test_a_real_prometheus_has_a_series_of_the_job_for_every_name(
    job: tuple[FlinkishEnv, str], prometheus: Prometheus
) -> None:
    _env, job_id = job
    [first] = prometheus.wait_for(f'flink_jobmanager_numRunningJobs{{job_id="{job_id}"}}')
    assert first["metric"]["job"] == SCRAPE_JOB and first["metric"]["job_name"] == "counts_job"
    missing = [name for name in ITEM_4 if not prometheus.query(f'{name}{{job_id="{job_id}"}}')]
    assert not missing, f"no series of job {job_id}: {missing}"
    # the alert on lost TaskManagers counts one per executor: local mode has one
    [count] = prometheus.query(f'count(flink_taskmanager_Status_JVM_CPU_Time{{job_id="{job_id}"}})')
    assert float(count["value"][1]) == 1
