"""The JVMs a job runs on, as its driver last measured them: Flink's JobManager and
TaskManager process figures, in Spark's terms::

    <root>/<JobID>/_flinkish/jvm.json
    {"version": 1, "measured": <epoch s>, "interval": <s>, "app_id": "local-...",
     "jobmanager": <process>, "taskmanagers": [<process>, ...]}

A process is one JVM: ``id`` (Spark's executor id, ``driver`` for the driver), ``host``,
``source`` (how it was measured, below), heap and non-heap memory used, committed and max
(bytes), per garbage collector its count, time (ms) and time per second since the previous
measurement, live threads, CPU load (0 to 1) and CPU time (ns), and the task slots it
offers and how many run a task now.

Flink's JobManager is the job's Spark driver, its TaskManagers are Spark's executors (one
per executor id, ``tm_id``). In local mode (``local[N]``) the executor is the driver's own
JVM, so the one TaskManager, ``driver``, shows the driver's figures with the N slots.
Sources:

- :data:`JMX`: read from the JVM itself (the driver's, through py4j and Java's management
  beans): every figure, each collector by its name, as Flink's own reporter reads them.
- :data:`SPARK`: Spark's status of an executor in a JVM of its own (a standalone, YARN or
  Kubernetes executor; a session cluster's driver and executors), which its heartbeats bring
  to the driver every ``spark.executor.heartbeatInterval`` (10 s): heap and non-heap memory
  as Spark keeps them (the **peak** since the executor started: Spark keeps no current
  value), garbage collection as Spark counts it (all collectors together, no names), live
  threads from a thread dump; no committed or max memory (left out), and no CPU figures
  (-1, as Flink itself reports a CPU figure it cannot read).

The driver writes the file every ``flinkish.metrics.jvm.interval``
(:mod:`flinkish_cli.runtime.driver.process_metrics`); ``/metrics`` and ``/overview`` read it
for each job that is not over. A record older than
:data:`STALE_INTERVALS` intervals (a driver gone, a JVM that stopped answering) is not
shown. Reading is forgiving: a missing, damaged or foreign file is no record.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from flinkish_cli.errors import StorageError
from flinkish_cli.registry.store import JobRegistry

JVM_FILE = "jvm.json"
VERSION = 1
#: How a process was measured (see the module's docstring).
JMX, SPARK = "jmx", "spark"
#: Spark's executor id of the driver (and of local mode's one executor).
DRIVER = "driver"
#: Flink's value for a CPU figure it cannot read.
UNKNOWN = -1
#: A record older than this many intervals (and at least :data:`STALE_MIN_S`) is not shown.
STALE_INTERVALS = 3
STALE_MIN_S = 30.0


@dataclass(frozen=True)
class Collector:
    """One garbage collector (or all together): collections, their total time (ms), and the
    milliseconds per second it spent collecting since the previous measurement (None for a
    first measurement)."""

    count: int
    time_ms: int
    time_ms_per_second: float | None = None

    def to_list(self) -> list[Any]:
        return [self.count, self.time_ms, self.time_ms_per_second]

    @classmethod
    def from_list(cls, data: Any) -> Collector:
        count, time_ms, rate = data
        return cls(int(count), int(time_ms), None if rate is None else _number(rate))


@dataclass
class Process:
    """One JVM: the driver (Flink's JobManager) or an executor (a TaskManager)."""

    id: str
    host: str
    source: str
    heap_used: int | None = None
    heap_committed: int | None = None
    heap_max: int | None = None
    nonheap_used: int | None = None
    nonheap_committed: int | None = None
    nonheap_max: int | None = None
    #: Each collector by the JVM's name for it (G1 Young Generation, Copy, ...); empty when
    #: only the total is known (:data:`SPARK`).
    collectors: dict[str, Collector] = field(default_factory=dict)
    #: Every collector together, when the collectors are not known one by one.
    gc_total: Collector | None = None
    threads: int | None = None
    cpu_load: float = UNKNOWN
    cpu_time: int = UNKNOWN
    #: Task slots (Spark's task slots: cores / spark.task.cpus) and tasks running now.
    slots: int = 0
    busy_slots: int = 0

    @property
    def all_collectors(self) -> Collector | None:
        """Flink's ``All``: every collector together."""
        if not self.collectors:
            return self.gc_total
        rates = [c.time_ms_per_second for c in self.collectors.values()]
        return Collector(
            sum(c.count for c in self.collectors.values()),
            sum(c.time_ms for c in self.collectors.values()),
            None if any(r is None for r in rates) else sum(r for r in rates if r is not None),
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("collectors", "gc_total")
        }
        data["collectors"] = {name: c.to_list() for name, c in self.collectors.items()}
        data["gc_total"] = self.gc_total.to_list() if self.gc_total else None
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Process:
        if not isinstance(data, dict):
            raise ValueError("a process is not an object")
        fields = {
            key: data.get(key)
            for key in (
                "heap_used", "heap_committed", "heap_max",
                "nonheap_used", "nonheap_committed", "nonheap_max", "threads",
            )
        }  # fmt: skip
        collectors = data.get("collectors") or {}
        if not isinstance(collectors, dict):
            raise ValueError("its collectors are not an object")
        total = data.get("gc_total")
        return cls(
            id=str(data["id"]),
            host=str(data.get("host") or ""),
            source=str(data.get("source") or SPARK),
            **{key: None if value is None else int(value) for key, value in fields.items()},
            collectors={str(n): Collector.from_list(c) for n, c in collectors.items()},
            gc_total=None if total is None else Collector.from_list(total),
            cpu_load=_number(data.get("cpu_load", UNKNOWN)),
            cpu_time=int(data.get("cpu_time", UNKNOWN)),
            slots=int(data.get("slots") or 0),
            busy_slots=int(data.get("busy_slots") or 0),
        )


@dataclass
class JvmRecord:
    """A job's JVMs as measured at ``measured`` (epoch seconds), every ``interval`` seconds."""

    measured: float
    interval: float
    jobmanager: Process
    taskmanagers: list[Process] = field(default_factory=list)
    app_id: str | None = None

    @property
    def slots_total(self) -> int:
        """Flink's ``taskSlotsTotal``: the executors' task slots (``local[N]``: N)."""
        return sum(tm.slots for tm in self.taskmanagers)

    @property
    def slots_available(self) -> int:
        """Flink's ``taskSlotsAvailable``: the slots running no task now."""
        return sum(max(0, tm.slots - tm.busy_slots) for tm in self.taskmanagers)

    def fresh(self, now: float) -> bool:
        """Recent enough to show: a driver that stopped measuring is not shown for long."""
        return now - self.measured <= max(STALE_INTERVALS * self.interval, STALE_MIN_S)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": VERSION,
                "measured": self.measured,
                "interval": self.interval,
                "app_id": self.app_id,
                "jobmanager": self.jobmanager.to_dict(),
                "taskmanagers": [tm.to_dict() for tm in self.taskmanagers],
            },
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, text: str) -> JvmRecord | None:
        """The record in ``text``; None when it is not one (damaged, foreign, newer)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("version") != VERSION:
                return None
            managers = data.get("taskmanagers") or []
            if not isinstance(managers, list):
                return None
            app_id = data.get("app_id")
            return cls(
                measured=_number(data["measured"]),
                interval=_number(data["interval"]),
                jobmanager=Process.from_dict(data["jobmanager"]),
                taskmanagers=[Process.from_dict(tm) for tm in managers],
                app_id=None if app_id is None else str(app_id),
            )
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return None


def with_rates(record: JvmRecord, previous: JvmRecord | None) -> JvmRecord:
    """``record`` with each collector's milliseconds per second since ``previous`` (Flink's
    ``TimeMsPerSecond``), for the processes and collectors both measured."""
    if previous is None or record.measured <= previous.measured:
        return record
    elapsed = record.measured - previous.measured
    before = {p.id: p for p in (previous.jobmanager, *previous.taskmanagers)}

    def rate(now: Collector, then: Collector | None) -> Collector:
        if then is None or now.time_ms < then.time_ms:  # a new JVM under the same id
            return now
        return replace(now, time_ms_per_second=(now.time_ms - then.time_ms) / elapsed)

    def process(now: Process) -> Process:
        then = before.get(now.id)
        if then is None:
            return now
        total = now.gc_total
        return replace(
            now,
            collectors={n: rate(c, then.collectors.get(n)) for n, c in now.collectors.items()},
            gc_total=rate(total, then.gc_total) if total is not None else None,
        )

    return replace(
        record,
        jobmanager=process(record.jobmanager),
        taskmanagers=[process(tm) for tm in record.taskmanagers],
    )


def _number(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _path(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), JVM_FILE)


def read(registry: JobRegistry, job_id: str) -> JvmRecord | None:
    """The job's record; None when it has none or the file cannot be read."""
    try:
        return JvmRecord.from_json(registry.storage.read_text(_path(registry, job_id)))
    except (OSError, ValueError, StorageError):  # missing, not text, storage down: none
        return None


def write(registry: JobRegistry, job_id: str, record: JvmRecord) -> None:
    """Replace the job's record."""
    registry.storage.write_text(_path(registry, job_id), record.to_json())
