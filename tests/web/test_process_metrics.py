"""Flink's process and cluster metrics as ``/metrics`` renders them from the registry (no
Spark: the records are written here as drivers write them; the real job and a real
Prometheus are ``test_jvm_metrics.py``):

- a job's driver under ``flink_jobmanager_Status_JVM_*`` and each executor under
  ``flink_taskmanager_Status_JVM_*`` with its ``tm_id``, each garbage collector by the name
  Flink's reporter gives it, and ``All``;
- an executor in its own JVM as Spark's status reports it: no per-collector figures, CPU -1;
- the cluster gauges per job, the same figures as ``/overview``;
- each running query's busy, back-pressured and idle time, as ``registry.task_time`` has it;
- nothing of a job that is over, or of a record its driver stopped writing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.config import load_configuration
from flinkish_cli.registry import jvm
from flinkish_cli.registry.jvm import JMX, SPARK, Collector, JvmRecord, Process
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.task_time import task_time
from flinkish_cli.web import flink_cluster, flink_json, metrics

LOCAL, CLUSTER, DONE, BARE = "a1" * 16, "b2" * 16, "c3" * 16, "d4" * 16
NOW = 1_800_000_000.0


def _query(name: str, active: bool = True) -> QueryStatus:
    query = QueryStatus(name=name, checkpoint=f"/cp/{name}", active=active, trigger_ms=1000)
    for batch, duration in enumerate((400, 1500, 600)):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(NOW - 10 + batch))
        query.record(Progress(batch_id=batch, timestamp=f"{stamp}.000Z", duration_ms=duration))
    return query


def _job(job_id: str, state: JobState = JobState.RUNNING, **queries: QueryStatus) -> JobStatus:
    return JobStatus(
        job_id=job_id, name=f"job-{job_id[:2]}", state=state, start_time=NOW - 60,
        heartbeat=NOW, host="driver-host", pid=1, queries=queries,
    )  # fmt: skip


def _driver(slots: int = 0, busy: int = 0) -> Process:
    return Process(
        "driver", "driver-host", JMX, heap_used=100, heap_committed=200, heap_max=400,
        nonheap_used=50, nonheap_committed=60, nonheap_max=-1,
        collectors={"G1 Young Generation": Collector(6, 120, 2.5),
                    "G1 Concurrent GC": Collector(2, 30, 0.5)},
        threads=57, cpu_load=0.25, cpu_time=9_000_000_000, slots=slots, busy_slots=busy,
    )  # fmt: skip


def _executor(number: int) -> Process:
    return Process(
        str(number), "worker-7", SPARK, heap_used=70, nonheap_used=60,
        gc_total=Collector(4, 300, None), threads=26, slots=4, busy_slots=number,
    )  # fmt: skip


RECORDS = {
    LOCAL: JvmRecord(NOW - 1, 10.0, _driver(), [_driver(slots=2, busy=1)], "local-1"),
    CLUSTER: JvmRecord(NOW - 1, 10.0, _driver(), [_executor(1), _executor(2)], "app-1"),
}
JOBS = [
    _job(LOCAL, counts=_query("counts"), raw=_query("raw", active=False)),
    _job(CLUSTER, counts=_query("counts")),
    _job(DONE, JobState.FINISHED, counts=_query("counts")),
    _job(BARE, JobState.RESTARTING, a=_query("a"), b=_query("b")),  # no record of its JVMs
]


def _samples(name: str) -> dict[tuple[str, ...], float]:
    families = {family.name: family for family in metrics.job_metrics(JOBS, NOW, RECORDS)}
    return {
        tuple(v for k, v in sorted(s.labels.items()) if k not in ("job_name", "host")): s.value
        for s in families[name].samples
    }


def test_the_driver_is_the_jobmanager_and_each_executor_a_taskmanager() -> None:
    assert _samples("flink_jobmanager_Status_JVM_Memory_Heap_Used") == {
        (LOCAL,): 100,
        (CLUSTER,): 100,
    }
    heap = _samples("flink_taskmanager_Status_JVM_Memory_Heap_Used")
    assert heap == {(LOCAL, "driver"): 100, (CLUSTER, "1"): 70, (CLUSTER, "2"): 70}
    assert _samples("flink_taskmanager_Status_JVM_Memory_Heap_Max") == {(LOCAL, "driver"): 400}
    assert _samples("flink_jobmanager_Status_JVM_Memory_NonHeap_Used")[(LOCAL,)] == 50
    assert _samples("flink_taskmanager_Status_JVM_Threads_Count")[(CLUSTER, "2")] == 26
    cpu = _samples("flink_taskmanager_Status_JVM_CPU_Time")
    assert cpu == {(LOCAL, "driver"): 9e9, (CLUSTER, "1"): -1, (CLUSTER, "2"): -1}
    assert _samples("flink_jobmanager_Status_JVM_CPU_Load") == {(LOCAL,): 0.25, (CLUSTER,): 0.25}


def test_each_collector_by_flinks_name_and_all_of_them() -> None:
    young = "flink_jobmanager_Status_JVM_GarbageCollector_G1_Young_Generation_"
    assert _samples(young + "Count")[(LOCAL,)] == 6
    assert _samples(young + "Time")[(LOCAL,)] == 120
    assert _samples(young + "TimeMsPerSecond")[(LOCAL,)] == 2.5
    assert _samples("flink_jobmanager_Status_JVM_GarbageCollector_G1_Concurrent_GC_Count")
    every = "flink_taskmanager_Status_JVM_GarbageCollector_All_"
    assert _samples(every + "Count") == {(LOCAL, "driver"): 8, (CLUSTER, "1"): 4, (CLUSTER, "2"): 4}
    assert _samples(every + "Time")[(LOCAL, "driver")] == 150
    assert _samples(every + "TimeMsPerSecond") == {(LOCAL, "driver"): 3.0}  # a rate needs two
    tm_young = "flink_taskmanager_Status_JVM_GarbageCollector_G1_Young_Generation_Count"
    assert set(_samples(tm_young)) == {(LOCAL, "driver")}  # Spark names no collector


def test_the_cluster_gauges_are_each_jobs_as_overview_counts_them() -> None:
    assert _samples("flink_jobmanager_numRunningJobs") == {(LOCAL,): 1, (CLUSTER,): 1, (BARE,): 1}
    assert _samples("flink_jobmanager_numRegisteredTaskManagers") == {
        (LOCAL,): 1, (CLUSTER,): 2, (BARE,): 1,
    }  # fmt: skip
    assert _samples("flink_jobmanager_taskSlotsTotal") == {(LOCAL,): 2, (CLUSTER,): 8, (BARE,): 2}
    free = _samples("flink_jobmanager_taskSlotsAvailable")
    assert free == {(LOCAL,): 1, (CLUSTER,): 5, (BARE,): 0}
    overview = flink_cluster.cluster_overview(JOBS, "1", RECORDS)
    assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"]) == (
        1 + 2 + 1,
        2 + 8 + 2,
        1 + 5 + 0,
    )
    assert overview["jobs-running"] == 3


def test_each_running_querys_task_time_is_the_registrys() -> None:
    expected = task_time(JOBS[0].queries["counts"].recent, 1000)
    assert 0 < expected.backpressured < expected.busy  # the 1500 ms batch overran its second
    for name, figure in (
        ("busyTimeMsPerSecond", expected.busy),
        ("backPressuredTimeMsPerSecond", expected.backpressured),
        ("idleTimeMsPerSecond", expected.idle),
    ):
        samples = _samples(f"flink_taskmanager_job_task_{name}")
        task = flink_json.vertex_id(LOCAL, "counts")
        assert samples[(LOCAL, "counts", task, "counts")] == pytest.approx(figure)
        assert {labels[0] for labels in samples} == {LOCAL, CLUSTER, BARE}  # DONE is over
        assert not any(labels[1] == "raw" for labels in samples)  # raw has stopped


def test_the_client_reads_records_of_live_jobs_only_while_fresh(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(f"execution.checkpointing.dir: {tmp_path / 'cp'}\n")
    client = JobClient(load_configuration(conf_dir=str(conf)))
    now = time.time()
    live, stale, over = _job(LOCAL), _job(CLUSTER), _job(DONE, JobState.FINISHED)
    for status in (live, stale, over):
        status.heartbeat = now
        client.registry.write(status)
    jvm.write(client.registry, LOCAL, JvmRecord(now - 5, 10.0, _driver()))
    jvm.write(client.registry, CLUSTER, JvmRecord(now - 120, 10.0, _driver()))  # driver gone
    jvm.write(client.registry, DONE, JvmRecord(now - 5, 10.0, _driver()))
    jobs, _ = client.list_jobs()
    assert set(client.jvm_records(jobs)) == {LOCAL}
