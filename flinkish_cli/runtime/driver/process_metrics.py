"""The driver measures the JVMs its job runs on, every ``flinkish.metrics.jvm.interval``, and
records them in the registry (:mod:`flinkish_cli.registry.jvm`, ``_flinkish/jvm.json``), where
``flinkish web`` reads them for ``/metrics`` under Flink's JobManager and TaskManager names.

Who and how, per flavour of Spark (:mod:`~flinkish_cli.runtime.flavours.flavour`), on a
thread of its own so that a slow measurement never delays a heartbeat:

- ``classic`` (the driver owns Spark's JVM): the driver's JVM through py4j and Java's
  management beans, as Flink's reporter reads its own (heap and non-heap memory, each garbage
  collector by name, live threads, the process's CPU load and time): Flink's JobManager. The
  executors from Spark's status store (what the Spark UI's Executors tab shows, with the UI
  on or off): in local mode the one executor is the driver's JVM (``tm_id="driver"``, with
  ``local[N]``'s N task slots); an executor in a JVM of its own (standalone, YARN,
  Kubernetes) as Spark's heartbeats report it, and its live threads from a thread dump (one
  request to the executor per measurement).
- ``connect`` (a session cluster's client: no JVM of its own): the server's status REST API
  (``/api/v1/applications/<app>/executors`` on its Spark UI), so only when the session
  cluster runs its UI (``start-cluster.sh --session-webui-port``); the server's driver is the
  JobManager, as Spark's status reports it. Without the UI the job records no JVM figures,
  and its log says so once.

What Spark's status gives for a JVM it does not run in, and what not (peak memory, no CPU),
is in :mod:`flinkish_cli.registry.jvm`. A measurement that fails is one line in the job's log
(the first of a series), and the previous record stays until it is stale.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from flinkish_cli.registry import jvm
from flinkish_cli.registry.jvm import DRIVER, JMX, SPARK, UNKNOWN, Collector, JvmRecord, Process
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.flavours.flavour import Flavour

log = logging.getLogger("flinkish.runtime")

#: Spark's executor metrics (ExecutorMetricType) read for an executor in a JVM of its own.
PEAK_METRICS = (
    "JVMHeapMemory",
    "JVMOffHeapMemory",
    "MinorGCCount",
    "MinorGCTime",
    "MajorGCCount",
    "MajorGCTime",
    "ConcurrentGCCount",
    "TotalGCTime",
)
#: How long a request to the session cluster's status REST API may take.
REST_TIMEOUT_S = 10.0


class Probe(Protocol):
    """Measures the job's JVMs; None while there is nothing to measure yet."""

    def measure(self, now: float, interval: float) -> JvmRecord | None: ...


class ProcessMetricsWatch:
    """Measures the job's JVMs every ``interval`` seconds and records them, until ``done``."""

    def __init__(self, registry: JobRegistry, job_id: str, probe: Probe, interval: float) -> None:
        self.registry = registry
        self.job_id = job_id
        self.probe = probe
        self.interval = interval
        self._previous: JvmRecord | None = None
        self._failing = False

    def run(self, done: threading.Event) -> None:
        """Measure one interval after the start (not while the JVM is busiest starting
        Spark), then every interval."""
        while not done.wait(self.interval):
            self.measure()

    def measure(self) -> JvmRecord | None:
        """Measure once and record it; the record, or None (nothing yet, or a failure)."""
        try:
            record = self.probe.measure(time.time(), self.interval)
            if record is None:
                return None
            record = jvm.with_rates(record, self._previous)
            jvm.write(self.registry, self.job_id, record)
        except Exception as error:  # Spark busy or going, storage down: the job runs on
            if not self._failing:
                log.warning("Could not measure the job's JVMs for /metrics: %s", error)
            self._failing = True
            return None
        self._failing = False
        self._previous = record
        return record


def probe_for(flavour: Flavour, master: str, session: Callable[[], Any]) -> Probe:
    """The probe of ``flavour``: ``master`` is the job's Spark master (a session cluster's
    ``sc://`` address), ``session`` gives the program's SparkSession once it has one."""
    if flavour.remote:
        return ConnectProbe(master, session)
    return ClassicProbe()


# -- classic: py4j ---------------------------------------------------------------------------
class ClassicProbe:
    """The driver's JVM through py4j; the executors from Spark's status store."""

    def __init__(self) -> None:
        self.host = socket.gethostname()
        self._jmx: JmxReader | None = None

    def measure(self, now: float, interval: float) -> JvmRecord | None:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        if gateway is None:
            return None
        if self._jmx is None:
            self._jmx = JmxReader(gateway)
        own = self._jmx.read(DRIVER, self.host)
        context = SparkContext._active_spark_context
        if context is None or context._jsc is None:  # the program has no session yet
            return JvmRecord(now, interval, own)
        spark = context._jsc.sc()
        local = bool(spark.isLocal())
        managers: list[Process] = []
        for summary in _summaries(spark.statusStore().executorList(True)):
            if summary["id"] == DRIVER and local:
                managers.append(_with_slots(own, summary))
            elif summary["id"] != DRIVER and int(summary.get("maxTasks") or 0) > 0:
                managers.append(from_summary(summary, _thread_dump_size(spark, summary["id"])))
        return JvmRecord(now, interval, own, managers, str(spark.applicationId()))


class JmxReader:
    """Java's management beans of the JVM behind a py4j gateway (what Flink's reporter reads
    in its own JVM: ``MemoryMXBean``, the ``GarbageCollectorMXBean``s, ``ThreadMXBean``, and
    ``com.sun.management.OperatingSystemMXBean``'s process CPU load and time)."""

    def __init__(self, gateway: Any) -> None:
        java = gateway.jvm
        factory = java.java.lang.management.ManagementFactory
        self.memory = factory.getMemoryMXBean()
        self.threads = factory.getThreadMXBean()
        self.collectors = list(factory.getGarbageCollectorMXBeans())
        self.system = factory.getOperatingSystemMXBean()
        # The bean's class is internal to the JDK: its methods are reached through the
        # exported interface, by reflection (py4j cannot call them on the class itself).
        self._cpu: tuple[Any, Any, Any] | None = None
        try:
            interface = java.java.lang.Class.forName("com.sun.management.OperatingSystemMXBean")
            no_types = gateway.new_array(java.java.lang.Class, 0)
            self._cpu = (
                interface.getMethod("getProcessCpuLoad", no_types),
                interface.getMethod("getProcessCpuTime", no_types),
                gateway.new_array(java.java.lang.Object, 0),
            )
        except Exception:  # another JVM: the CPU figures are -1, as in Flink
            self._cpu = None

    def read(self, process_id: str, host: str) -> Process:
        heap = self.memory.getHeapMemoryUsage()
        other = self.memory.getNonHeapMemoryUsage()
        load, cpu_time = float(UNKNOWN), UNKNOWN
        if self._cpu is not None:
            get_load, get_time, no_args = self._cpu
            load = float(get_load.invoke(self.system, no_args))
            cpu_time = int(get_time.invoke(self.system, no_args))
        return Process(
            id=process_id,
            host=host,
            source=JMX,
            heap_used=int(heap.getUsed()),
            heap_committed=int(heap.getCommitted()),
            heap_max=int(heap.getMax()),
            nonheap_used=int(other.getUsed()),
            nonheap_committed=int(other.getCommitted()),
            nonheap_max=int(other.getMax()),
            collectors={
                str(bean.getName()): Collector(
                    int(bean.getCollectionCount()), int(bean.getCollectionTime())
                )
                for bean in self.collectors
            },
            threads=int(self.threads.getThreadCount()),
            cpu_load=load if load >= 0 else float(UNKNOWN),
            cpu_time=cpu_time,
        )


def _summaries(executors: Any) -> list[dict[str, Any]]:
    """Spark's ``ExecutorSummary`` objects (py4j) as the status REST API shows them."""
    found = []
    for index in range(executors.size()):
        summary = executors.apply(index)
        peak = summary.peakMemoryMetrics()
        metrics = None
        if peak.isDefined():
            values = peak.get()
            metrics = {name: int(values.getMetricValue(name)) for name in PEAK_METRICS}
        found.append(
            {
                "id": str(summary.id()),
                "hostPort": str(summary.hostPort()),
                "maxTasks": int(summary.maxTasks()),
                "activeTasks": int(summary.activeTasks()),
                "peakMemoryMetrics": metrics,
            }
        )
    return found


def _thread_dump_size(spark: Any, executor_id: str) -> int | None:
    dump = spark.getExecutorThreadDump(executor_id)
    return len(dump.get()) if dump.isDefined() else None


# -- connect: the session cluster's status REST API ------------------------------------------
class ConnectProbe:
    """A session cluster's driver and executors, from its status REST API."""

    def __init__(self, master: str, session: Callable[[], Any]) -> None:
        self.host = urllib.parse.urlsplit(master.replace("sc://", "http://", 1)).hostname
        self.session = session
        self._base: str | None = None
        self._local = False
        self._told = False

    def measure(self, now: float, interval: float) -> JvmRecord | None:
        base = self._api()
        if base is None:
            return None
        applications = _get(f"{base}/applications")
        if not applications:
            return None
        app_id = str(applications[0]["id"])
        executors = _get(f"{base}/applications/{app_id}/executors")
        own: Process | None = None
        managers: list[Process] = []
        for summary in executors:
            threads = self._threads(base, app_id, str(summary["id"]))
            process = from_summary(summary, threads)
            if summary["id"] == DRIVER:
                own = process
                if self._local:
                    managers.append(process)
            elif int(summary.get("maxTasks") or 0) > 0:
                managers.append(process)
        if own is None:
            return None
        return JvmRecord(now, interval, own, managers, app_id)

    def _threads(self, base: str, app_id: str, executor_id: str) -> int | None:
        try:
            dump = _get(f"{base}/applications/{app_id}/executors/{executor_id}/threads")
        except OSError:
            return None
        return len(dump) if isinstance(dump, list) else None

    def _api(self) -> str | None:
        """The server's status REST API, once the program has a session and if the server
        runs its UI (else None, said once in the job's log)."""
        if self._base is not None:
            return self._base
        spark = self.session()
        if spark is None:
            return None
        enabled = str(spark.conf.get("spark.ui.enabled", "true")).lower() == "true"
        port = str(spark.conf.get("spark.ui.port", "4040"))
        if not enabled or port == "0":
            if not self._told:
                log.info(
                    "The session cluster runs without its Spark UI, so this job records no "
                    "JVM figures for /metrics; start it with --session-webui-port to have them."
                )
                self._told = True
            return None
        self._local = str(spark.conf.get("spark.master", "")).startswith("local")
        self._base = f"http://{self.host}:{port}/api/v1"
        return self._base


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=REST_TIMEOUT_S) as answer:
        return json.load(answer)


# -- Spark's executor status -----------------------------------------------------------------
def from_summary(summary: dict[str, Any], threads: int | None) -> Process:
    """An executor (or a driver) as Spark's status reports it, in the status REST API's
    shape (``ExecutorSummary``): its task slots, its peak memory and its garbage collection
    as its heartbeats brought them; ``threads`` from a thread dump, when one was taken."""
    peak = summary.get("peakMemoryMetrics") or {}
    count = sum(int(peak.get(name) or 0) for name in _GC_COUNTS)
    total = Collector(count, int(peak.get("TotalGCTime") or 0)) if peak else None
    return Process(
        id=str(summary["id"]),
        host=str(summary.get("hostPort") or "").rsplit(":", 1)[0],
        source=SPARK,
        heap_used=_present(peak, "JVMHeapMemory"),
        nonheap_used=_present(peak, "JVMOffHeapMemory"),
        gc_total=total,
        threads=threads,
        slots=int(summary.get("maxTasks") or 0),
        busy_slots=int(summary.get("activeTasks") or 0),
    )


_GC_COUNTS = ("MinorGCCount", "MajorGCCount", "ConcurrentGCCount")


def _present(values: dict[str, Any], name: str) -> int | None:
    value = values.get(name)
    return None if value is None else int(value)


def _with_slots(process: Process, summary: dict[str, Any]) -> Process:
    """The driver's JVM as local mode's one executor: its figures, the executor's slots."""
    from dataclasses import replace

    return replace(
        process,
        slots=int(summary.get("maxTasks") or 0),
        busy_slots=int(summary.get("activeTasks") or 0),
    )
