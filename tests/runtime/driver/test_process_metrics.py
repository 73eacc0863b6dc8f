"""The driver's measurement of its JVMs, at its seams (no Spark: the Spark test is
``tests/web/test_jvm_metrics.py``): an executor as Spark's status reports it, the watch that
records each measurement with its collection rates, and a session cluster without its UI."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry import jvm
from flinkish_cli.registry.jvm import JMX, SPARK, Collector, JvmRecord, Process
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver.process_metrics import (
    ConnectProbe,
    ProcessMetricsWatch,
    from_summary,
)

JOB = "ab" * 16

#: An executor of Spark's status REST API (/api/v1/applications/<app>/executors), trimmed.
EXECUTOR = {
    "id": "1",
    "hostPort": "10.0.0.7:40123",
    "isActive": True,
    "totalCores": 4,
    "maxTasks": 4,
    "activeTasks": 3,
    "peakMemoryMetrics": {
        "JVMHeapMemory": 71_000_000,
        "JVMOffHeapMemory": 64_000_000,
        "MinorGCCount": 7,
        "MinorGCTime": 180,
        "MajorGCCount": 1,
        "MajorGCTime": 70,
        "ConcurrentGCCount": 2,
        "TotalGCTime": 250,
    },
}


def test_an_executor_as_sparks_status_reports_it() -> None:
    process = from_summary(EXECUTOR, threads=31)
    assert (process.id, process.host, process.source) == ("1", "10.0.0.7", SPARK)
    assert (process.heap_used, process.nonheap_used) == (71_000_000, 64_000_000)
    assert process.heap_committed is None and process.heap_max is None  # Spark has none
    assert process.collectors == {}
    assert process.all_collectors == Collector(7 + 1 + 2, 250)
    assert (process.threads, process.slots, process.busy_slots) == (31, 4, 3)
    assert (process.cpu_load, process.cpu_time) == (-1, -1)  # as Flink says "unknown"
    # before its first heartbeat: its slots, nothing of its JVM yet
    fresh = from_summary({**EXECUTOR, "peakMemoryMetrics": None}, threads=None)
    assert fresh.heap_used is None and fresh.all_collectors is None and fresh.slots == 4


class Probe:
    """A probe that answers what the test gives it, in turn."""

    def __init__(self, *answers: JvmRecord | Exception | None) -> None:
        self.answers = list(answers)

    def measure(self, now: float, interval: float) -> JvmRecord | None:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _record(measured: float, gc_ms: int) -> JvmRecord:
    own = Process("driver", "h", JMX, collectors={"Copy": Collector(3, gc_ms)}, threads=40)
    return JvmRecord(measured, 5.0, own)


def test_the_watch_records_each_measurement_with_its_collection_rate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = JobRegistry.open(str(tmp_path))
    error = ConnectionError("Answer from Java side is empty")
    probe = Probe(None, _record(100.0, 50), error, error, _record(110.0, 150))
    watch = ProcessMetricsWatch(registry, JOB, probe, interval=5.0)
    assert watch.measure() is None and jvm.read(registry, JOB) is None  # no session yet
    watch.measure()
    assert jvm.read(registry, JOB).jobmanager.collectors["Copy"].time_ms_per_second is None
    with caplog.at_level(logging.WARNING, logger="flinkish.runtime"):
        watch.measure()
        watch.measure()
    [warning] = caplog.records  # a failing series is one line
    assert "Could not measure the job's JVMs" in warning.message
    assert jvm.read(registry, JOB).measured == 100.0  # the previous record stays
    watch.measure()
    assert jvm.read(registry, JOB).jobmanager.collectors["Copy"].time_ms_per_second == 10.0


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class Session:
    def __init__(self, **values: str) -> None:
        self.conf = Conf(values)


def test_a_session_cluster_without_its_ui_records_nothing_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = ConnectProbe(
        "sc://cluster.example:15002", lambda: Session(**{"spark.ui.enabled": "false"})
    )
    with caplog.at_level(logging.INFO, logger="flinkish.runtime"):
        assert probe.measure(1.0, 5.0) is None
        assert probe.measure(2.0, 5.0) is None
    [told] = caplog.records
    assert "--session-webui-port" in told.message
    assert ConnectProbe("sc://x:1", lambda: None).measure(1.0, 5.0) is None  # no session yet
    with_ui = ConnectProbe(
        "sc://cluster.example:15002", lambda: Session(**{"spark.ui.port": "4050"})
    )
    assert with_ui._api() == "http://cluster.example:4050/api/v1"
