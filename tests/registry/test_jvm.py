"""A job's record of the JVMs it runs on (``_flinkish/jvm.json``): what the driver writes is
what ``/metrics`` reads, garbage collection per second comes from two measurements, and a
damaged or foreign file is no record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flinkish_cli.registry import jvm
from flinkish_cli.registry.jvm import JMX, SPARK, Collector, JvmRecord, Process, with_rates
from flinkish_cli.registry.store import JobRegistry

JOB = "ab" * 16


def driver(measured: float = 100.0, young: int = 40, old: int = 300) -> JvmRecord:
    """Local mode: the driver's JVM, which is also the one executor (2 slots, 1 busy)."""
    own = Process(
        "driver", "laptop", JMX, heap_used=5 << 20, heap_committed=8 << 20, heap_max=1 << 30,
        nonheap_used=3 << 20, nonheap_committed=4 << 20, nonheap_max=-1,
        collectors={
            "G1 Young Generation": Collector(4, young), "G1 Old Generation": Collector(1, old),
        },
        threads=57, cpu_load=0.25, cpu_time=9_000_000_000,
    )  # fmt: skip
    executor = Process(**{**own.__dict__, "slots": 2, "busy_slots": 1})
    return JvmRecord(measured, 10.0, own, [executor], "local-1")


def standalone(measured: float = 100.0, gc_ms: int = 500) -> JvmRecord:
    """A driver on its own and two executors as Spark's heartbeats report them."""
    executors = [
        Process(str(n), "10.0.0.7", SPARK, heap_used=70 << 20, nonheap_used=60 << 20,
                gc_total=Collector(4, gc_ms), threads=26, slots=4, busy_slots=n)
        for n in (1, 2)
    ]  # fmt: skip
    return JvmRecord(measured, 10.0, driver(measured).jobmanager, executors, "app-1")


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path))
    for record in (driver(), with_rates(standalone(110.0, 700), standalone(100.0, 500))):
        jvm.write(registry, JOB, record)
        assert jvm.read(registry, JOB) == record
    assert (tmp_path / JOB / "_flinkish" / "jvm.json").exists()
    assert jvm.read(registry, "cd" * 16) is None


@pytest.mark.parametrize(
    "text",
    [
        "{ not json",
        "[]",
        json.dumps({**json.loads(driver().to_json()), "version": 2}),  # a newer flinkish
        json.dumps({**json.loads(driver().to_json()), "measured": "soon"}),
        json.dumps({**json.loads(driver().to_json()), "taskmanagers": {"0": {}}}),
        json.dumps({**json.loads(driver().to_json()), "jobmanager": {"host": "x"}}),
        driver().to_json().replace('"collectors": {', '"collectors": {"x": [1], '),
    ],
)
def test_a_damaged_or_foreign_file_is_no_record(text: str) -> None:
    assert JvmRecord.from_json(text) is None


def test_collection_time_per_second_comes_from_two_measurements() -> None:
    first, later = driver(100.0, young=40, old=300), driver(110.0, young=140, old=300)
    rated = with_rates(later, first)
    young = rated.jobmanager.collectors["G1 Young Generation"]
    assert young.time_ms_per_second == pytest.approx(10.0)  # 100 ms in 10 s
    assert rated.jobmanager.collectors["G1 Old Generation"].time_ms_per_second == 0
    assert rated.jobmanager.all_collectors == Collector(5, 440, pytest.approx(10.0))
    assert rated.taskmanagers[0].collectors["G1 Young Generation"] == young
    # Spark's totals of an executor in its own JVM
    remote = with_rates(standalone(120.0, gc_ms=900), standalone(100.0, gc_ms=500))
    assert remote.taskmanagers[0].all_collectors == Collector(4, 900, pytest.approx(20.0))
    # a first measurement, and a JVM started again under the same id, have no rate yet
    assert with_rates(first, None).jobmanager.all_collectors.time_ms_per_second is None
    restarted = with_rates(driver(120.0, young=5, old=0), later).jobmanager
    assert restarted.collectors["G1 Young Generation"].time_ms_per_second is None


def test_slots_are_the_executors_and_the_free_ones_those_running_no_task() -> None:
    assert (driver().slots_total, driver().slots_available) == (2, 1)
    assert (standalone().slots_total, standalone().slots_available) == (8, 5)
    assert JvmRecord(1.0, 10.0, driver().jobmanager).slots_total == 0  # no session yet


def test_a_record_is_shown_for_three_intervals_and_at_least_30_s() -> None:
    record = driver(measured=1000.0)
    assert record.fresh(1030.0) and not record.fresh(1031.0)
    record.interval = 60.0
    assert record.fresh(1180.0) and not record.fresh(1181.0)
