"""``/metrics``: the registry's jobs as Prometheus metrics, read afresh at every scrape.

Flink's names where Flink has the metric, as its Prometheus reporter exposes them (a Grafana
dashboard made for Flink finds them), labelled ``job_id`` and ``job_name``, and ``query`` for
a query's (Flink's task scope):

- ``flink_jobmanager_job_uptime`` (ms, 0 unless RUNNING), ``..._downtime``,
  ``..._numRestarts``, ``..._lastCheckpointDuration`` (ms),
  ``..._lastCheckpointSize`` (bytes of the queries' state),
  ``..._numberOfCompletedCheckpoints``, ``..._numberOfFailedCheckpoints``,
  ``..._lastCheckpointRestoreTimestamp``;
- per query, Flink's task scope (labels ``task_id``, the REST API's vertex id, and
  ``task_name``, the query's name, beside ``query``):
  ``flink_taskmanager_job_task_numRecordsInPerSecond`` and ``..._numRecordsOutPerSecond``
  (Spark's input and processing rates), ``..._operator_currentInputWatermark`` (ms), and
  while the query runs ``..._busyTimeMsPerSecond``, ``..._backPressuredTimeMsPerSecond``
  and ``..._idleTimeMsPerSecond`` over its recent micro-batches and its trigger interval
  (:mod:`flinkish_cli.registry.task_time` says what each means in Spark's terms);
- per Kafka source, Flink's Kafka connector's names in its operator scope (labels
  ``operator_id``, the source's node id in the job graph, ``operator_name``, ``Source:``
  and Spark's description, and ``subtask_index`` 0: the source's figures are one
  subtask's): ``flink_taskmanager_job_task_operator_pendingRecords`` (records behind its
  topics' latest offsets, all partitions) and
  ``..._operator_KafkaSourceReader_KafkaConsumer_records_lag_max`` (the partition furthest
  behind), after the query's latest batch;
- per job that is not over, its JobManager as Flink's application mode has one per job
  (labels ``host`` and the job's): ``flink_jobmanager_numRunningJobs`` (1),
  ``..._numRegisteredTaskManagers``, ``..._taskSlotsTotal`` and ``..._taskSlotsAvailable``
  (:class:`~flinkish_cli.web.flink_cluster.JobCluster`, as ``/overview`` counts them), and from
  the job's record of its JVMs (:mod:`flinkish_cli.registry.jvm`) Flink's process gauges:
  ``flink_jobmanager_Status_JVM_*`` for the driver and ``flink_taskmanager_Status_JVM_*``
  (label ``tm_id``, Spark's executor id) for each executor that runs tasks:
  ``Memory_Heap_Used``/``_Committed``/``_Max``, ``Memory_NonHeap_*``, ``Threads_Count``,
  ``CPU_Load``, ``CPU_Time`` and ``GarbageCollector_<collector>_Count``/``_Time``/
  ``_TimeMsPerSecond``, the collector's name written as Flink's reporter writes it
  (``G1_Young_Generation``), and ``All`` for every collector together;
- Spark's progress figures otherwise: ``flinkish_query_batch_duration_ms``,
  ``flinkish_query_last_batch``, ``flinkish_query_state_rows``, ``flinkish_query_input_rows``,
  ``flinkish_query_records_lag_max`` (the records a query's sources are behind their
  latest offsets over all their partitions, where they report it, as Kafka's does),
  and ``flinkish_job_state`` (1 for the job's state, labelled ``state``);
- what each query's checkpoint takes on storage, as its driver last measured it:
  ``flinkish_query_checkpoint_bytes`` and ``flinkish_query_checkpoint_files``, labelled
  ``part`` (``offsets``, ``commits``, ``sources``, ``state``, ``metadata``, and
  ``sink_metadata`` for a file sink's log beside its output) and ``grows`` (``age`` for the
  parts that grow for as long as the query runs, ``state``, ``bounded``), and
  ``flinkish_query_checkpoint_measured_timestamp`` (ms). Alert on
  ``flinkish_query_checkpoint_bytes{grows="age"}``: ``flinkish info <JobID>`` says why and
  what to do.

- the autoscaler's, from each running job's rescale history
  (:mod:`flinkish_cli.registry.rescales`; Flink has no name for these):
  ``flinkish_autoscaler_parallelism`` (the job's now), ``..._target_parallelism`` (its
  latest evaluation's), ``..._rescales`` (records, labelled ``outcome``), and per query
  the figures it decided on: ``..._input_rate``, ``..._processing_rate`` (rows per busy
  second), ``..._busy_share`` (0 to 1), ``..._backlog`` (records, where the source tells)
  and ``..._utilisation`` (the busy share it needs for its input and backlog).

Nothing here keeps state between scrapes: a registry that cannot be read yields no samples
and ``flinkish_registry_up 0``.
"""

from __future__ import annotations

import collections
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.registry.batch_figures import BatchFigures
from flinkish_cli.registry.footprint import grows
from flinkish_cli.registry.graph import node_id
from flinkish_cli.registry.jvm import JvmRecord, Process
from flinkish_cli.registry.rescales import RescaleHistory
from flinkish_cli.registry.status import JobState, JobStatus, parse_timestamp
from flinkish_cli.registry.task_time import task_time
from flinkish_cli.rest import messages
from flinkish_cli.web.flink_cluster import JobCluster
from flinkish_cli.web.flink_json import vertex_id

log = logging.getLogger("flinkish.web")

JOB = ("job_id", "job_name")
QUERY = ("job_id", "job_name", "query")
#: Flink's task scope: the query is the task (``task_name``; ``task_id`` the REST API's vertex id)
TASK = (*QUERY, "task_id", "task_name")
PART = (*QUERY, "part", "grows")
#: Flink's operator scope (a source of the query: ``operator_id`` its node's id in the graph)
OPERATOR = (*TASK, "operator_id", "operator_name", "subtask_index")
#: Flink's JobManager and TaskManager scopes, with the job each belongs to
JM = ("host", *JOB)
TM = ("host", "tm_id", *JOB)


_J, _T = "flink_jobmanager_job_", "flink_taskmanager_job_task_"
_A = "flinkish_autoscaler_"
#: (key, name, help, labels) of every metric family.
METRICS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("uptime", _J + "uptime", "Time the job has been running (ms).", JOB),
    ("downtime", _J + "downtime", "Time the job has been failing or restarting (ms).", JOB),
    ("restarts", _J + "numRestarts", "Restarts of the job.", JOB),
    ("duration", _J + "lastCheckpointDuration", "Duration of the last micro-batch (ms).", JOB),
    ("size", _J + "lastCheckpointSize", "State bytes after the last micro-batch.", JOB),
    ("completed", _J + "numberOfCompletedCheckpoints", "Committed micro-batches.", JOB),
    ("failed", _J + "numberOfFailedCheckpoints", "Failed checkpoints.", JOB),
    ("restore", _J + "lastCheckpointRestoreTimestamp", "When the job restored (ms).", JOB),
    ("state", "flinkish_job_state", "1 for the job's current state.", (*JOB, "state")),
    ("in_rate", _T + "numRecordsInPerSecond", "Input rows per second.", TASK),
    ("out_rate", _T + "numRecordsOutPerSecond", "Rows processed per second.", TASK),
    ("watermark", _T + "operator_currentInputWatermark", "Event-time watermark (ms).", TASK),
    ("busy", _T + "busyTimeMsPerSecond", "Ms per second running micro-batches.", TASK),
    (
        "pressured",
        _T + "backPressuredTimeMsPerSecond",
        "Ms per second micro-batches overran the trigger interval.",
        TASK,
    ),
    ("idle", _T + "idleTimeMsPerSecond", "Ms per second waiting for the next trigger.", TASK),
    (
        "pending",
        _T + "operator_pendingRecords",
        "Records the Kafka source is behind its topics' latest offsets.",
        OPERATOR,
    ),
    (
        "lag_max",
        _T + "operator_KafkaSourceReader_KafkaConsumer_records_lag_max",
        "Records the Kafka source's partition furthest behind is behind its latest offset.",
        OPERATOR,
    ),
    ("running_jobs", "flink_jobmanager_numRunningJobs", "Jobs not over (1: this one).", JM),
    (
        "managers",
        "flink_jobmanager_numRegisteredTaskManagers",
        "Executors that run tasks (local mode: 1, the driver).",
        JM,
    ),
    ("slots", "flink_jobmanager_taskSlotsTotal", "Spark's task slots of the executors.", JM),
    ("free", "flink_jobmanager_taskSlotsAvailable", "Task slots running no task now.", JM),
    ("batch_ms", "flinkish_query_batch_duration_ms", "Last micro-batch's duration (ms).", QUERY),
    ("batch", "flinkish_query_last_batch", "The last committed micro-batch.", QUERY),
    ("state_rows", "flinkish_query_state_rows", "The query's state rows.", QUERY),
    ("input_rows", "flinkish_query_input_rows", "Input rows of the last micro-batch.", QUERY),
    ("lag", "flinkish_query_records_lag_max", "Records behind the sources' latest offsets.", QUERY),
    ("cp_bytes", "flinkish_query_checkpoint_bytes", "Bytes of a part of the checkpoint.", PART),
    ("cp_files", "flinkish_query_checkpoint_files", "Files of a part of the checkpoint.", PART),
    (
        "cp_time",
        "flinkish_query_checkpoint_measured_timestamp",
        "When the checkpoint was last measured (ms).",
        QUERY,
    ),
    ("as_p", _A + "parallelism", "The job's parallelism now.", JOB),
    ("as_target", _A + "target_parallelism", "The latest evaluation's parallelism.", JOB),
    ("as_rescales", _A + "rescales", "Rescale records by outcome.", (*JOB, "outcome")),
    ("as_in", _A + "input_rate", "Input rows per second over the window.", QUERY),
    ("as_rate", _A + "processing_rate", "Rows per busy second (true rate).", QUERY),
    ("as_busy", _A + "busy_share", "Busy share of wall time over the window.", QUERY),
    ("as_backlog", _A + "backlog", "Records behind the sources (where told).", QUERY),
    ("as_util", _A + "utilisation", "Busy share needed for input and backlog.", QUERY),
)


#: (name, help) of the one metric without labels: whether the registry could be read
REGISTRY_UP = ("flinkish_registry_up", "Whether the registry could be read.")


class RegistryCollector:
    """A Prometheus collector over the job client's registry."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(*REGISTRY_UP)
        try:
            jobs, _unreadable = self.client.list_jobs()
        except Exception as error:  # a scrape never fails: it says the registry is down
            log.warning("The registry could not be read for /metrics: %s", error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        try:
            jvms = self.client.jvm_records(jobs)
        except Exception as error:  # the jobs' figures still go out
            log.warning("The jobs' JVM figures could not be read for /metrics: %s", error)
            jvms = {}
        try:
            rescales = self.client.rescale_histories(jobs)
        except Exception as error:
            log.warning("The jobs' rescale histories could not be read for /metrics: %s", error)
            rescales = {}
        yield from job_metrics(jobs, time.time(), jvms, rescales)


def _gauge(name: str, documentation: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=list(labels))


def job_metrics(
    jobs: list[JobStatus],
    now: float,
    jvms: dict[str, JvmRecord] | None = None,
    rescales: dict[str, RescaleHistory] | None = None,
) -> Iterator[Metric]:
    """Every job's metrics (see the module's docstring); ``jvms``: the JVMs of the jobs
    that have a record (:meth:`~flinkish_cli.client.jobs.JobClient.jvm_records`);
    ``rescales``: the rescale histories of the jobs the autoscaler has evaluated."""
    g = {key: _gauge(name, doc, labels) for key, name, doc, labels in METRICS}
    processes = ProcessFamilies()
    for status in jobs:
        state = status.effective_state(now)
        labels = [status.job_id, status.name]
        if not state.is_terminal:  # its JobManager, as Flink's application mode has one a job
            record = (jvms or {}).get(status.job_id)
            jm = [record.jobmanager.host if record else status.host or "", *labels]
            g["running_jobs"].add_metric(jm, 1)
            cluster = JobCluster.of(status, record)
            g["managers"].add_metric(jm, cluster.taskmanagers)
            g["slots"].add_metric(jm, cluster.slots)
            g["free"].add_metric(jm, cluster.available)
            if record is not None:
                processes.add(JOBMANAGER, jm, record.jobmanager)
                for tm in record.taskmanagers:
                    processes.add(TASKMANAGER, [tm.host, tm.id, *labels], tm)
        running = state is JobState.RUNNING
        g["uptime"].add_metric(labels, (now - status.start_time) * 1000 if running else 0)
        troubled = state in (JobState.RESTARTING, JobState.FAILING)
        since = status.failure_times[-1] if status.failure_times else status.start_time
        g["downtime"].add_metric(labels, (now - since) * 1000 if troubled else 0)
        g["restarts"].add_metric(labels, status.restarts)
        g["state"].add_metric([*labels, state.value], 1)
        latest = status.latest_batches()
        newest = max(latest.values(), key=lambda p: parse_timestamp(p.timestamp), default=None)
        g["duration"].add_metric(labels, newest.duration_ms if newest else 0)
        g["size"].add_metric(labels, sum(p.state_bytes for p in latest.values()))
        g["completed"].add_metric(labels, status.completed_checkpoints())
        g["failed"].add_metric(labels, 0)
        g["restore"].add_metric(labels, status.start_time * 1000 if status.restored_from else -1)
        for name, last in latest.items():
            qlabels = [*labels, name]
            tlabels = [*qlabels, vertex_id(status.job_id, name), name]
            g["in_rate"].add_metric(tlabels, last.input_rows_per_second)
            g["out_rate"].add_metric(tlabels, last.processed_rows_per_second)
            if last.watermark:
                g["watermark"].add_metric(tlabels, parse_timestamp(last.watermark))
            g["batch_ms"].add_metric(qlabels, last.duration_ms)
            g["batch"].add_metric(qlabels, last.batch_id)
            g["state_rows"].add_metric(qlabels, last.state_rows)
            g["input_rows"].add_metric(qlabels, last.input_rows)
            if last.lag is not None:
                g["lag"].add_metric(qlabels, last.lag)
        for name, query in status.queries.items():
            _kafka_lag(g, status, name, query.figures)
        for name, query in status.queries.items():
            if query.active and not state.is_terminal:
                spent = task_time(query.recent, query.trigger_ms, query.idle)
                tlabels = [*labels, name, vertex_id(status.job_id, name), name]
                g["busy"].add_metric(tlabels, spent.busy)
                g["pressured"].add_metric(tlabels, spent.backpressured)
                g["idle"].add_metric(tlabels, spent.idle)
            if query.footprint is None:
                continue
            qlabels = [*labels, name]
            g["cp_time"].add_metric(qlabels, query.footprint.measured * 1000)
            for part, size in query.footprint.parts.items():
                plabels = [*qlabels, part, grows(part)]
                g["cp_bytes"].add_metric(plabels, size.bytes)
                g["cp_files"].add_metric(plabels, size.files)
        history = (rescales or {}).get(status.job_id)
        if history is not None and (history.latest or history.rescales):
            _autoscaler(g, labels, status, history)
    yield from g.values()
    yield from processes.families()


def _kafka_lag(g: dict, status: JobStatus, name: str, figures: BatchFigures | None) -> None:
    """Each Kafka source's lag after the query's latest batch, in Flink's Kafka source's
    names: ``pendingRecords`` (all its partitions) and ``records-lag-max`` (the most of one)."""
    if figures is None:
        return
    for index, source in enumerate(figures.sources):
        lag = source.kafka_lag()
        if lag is None:
            continue
        labels = [status.job_id, status.name, name, vertex_id(status.job_id, name), name]
        operator = node_id(status.job_id, name, f"source-{index}")
        olabels = [*labels, operator, f"Source: {source.description}", "0"]
        g["pending"].add_metric(olabels, lag.pending)
        g["lag_max"].add_metric(olabels, lag.most)


def _autoscaler(
    g: dict[str, GaugeMetricFamily], labels: list[str], status: JobStatus, history: Any
) -> None:
    """The autoscaler's gauges of one job (see the module's docstring)."""
    g["as_p"].add_metric(labels, int(status.parallelism or 1))
    outcomes = collections.Counter(r.outcome.value for r in history.rescales)
    for outcome, count in sorted(outcomes.items()):
        g["as_rescales"].add_metric([*labels, outcome], count)
    latest = history.latest or {}
    if isinstance(latest.get("target"), int):
        g["as_target"].add_metric(labels, latest["target"])
    figures: dict[str, Any] = _mapping(latest.get("figures"))
    queries, utilisation = _mapping(figures.get("queries")), _mapping(figures.get("utilisation"))
    for name, query in queries.items():
        if not isinstance(query, dict):
            continue
        qlabels = [*labels, str(name)]
        for key, field in (("as_in", "input_rate"), ("as_rate", "processing_rate"),
                           ("as_busy", "busy_share"), ("as_backlog", "backlog")):  # fmt: skip
            value = query.get(field)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                g[key].add_metric(qlabels, value)
        value = utilisation.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            g["as_util"].add_metric(qlabels, value)


JOBMANAGER, TASKMANAGER = "flink_jobmanager_Status_JVM_", "flink_taskmanager_Status_JVM_"
#: (attribute of a Process, Flink's name after Status.JVM., help): memory, threads and CPU
PROCESS_GAUGES = (
    ("heap_used", "Memory_Heap_Used", "Heap memory used (bytes)."),
    ("heap_committed", "Memory_Heap_Committed", "Heap memory committed (bytes)."),
    ("heap_max", "Memory_Heap_Max", "Heap memory the JVM may use (bytes)."),
    ("nonheap_used", "Memory_NonHeap_Used", "Non-heap memory used (bytes)."),
    ("nonheap_committed", "Memory_NonHeap_Committed", "Non-heap memory committed (bytes)."),
    ("nonheap_max", "Memory_NonHeap_Max", "Non-heap memory the JVM may use (bytes)."),
    ("threads", "Threads_Count", "Live threads."),
    ("cpu_load", "CPU_Load", "Recent CPU use of the JVM, 0 to 1 (-1: unknown)."),
    ("cpu_time", "CPU_Time", "CPU time used by the JVM (ns; -1: unknown)."),
)
#: (name after ``GarbageCollector_<collector>_``, help; ``{what}`` names the collector) of
#: each garbage collector's gauges; the last only where the JVM's record has its rate
GC_GAUGES = (
    ("Count", "Collections by {what}."),
    ("Time", "Time spent in {what} (ms)."),
    ("TimeMsPerSecond", "Ms per second in {what}."),
)
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


class ProcessFamilies:
    """The JobManagers' and TaskManagers' JVM gauges, one family per Flink name (a garbage
    collector's name is part of it: ``..._GarbageCollector_G1_Young_Generation_Count``)."""

    def __init__(self) -> None:
        self._families: dict[str, GaugeMetricFamily] = {}

    def _family(self, prefix: str, name: str, documentation: str) -> GaugeMetricFamily:
        full = prefix + name
        if full not in self._families:
            labels = JM if prefix == JOBMANAGER else TM
            self._families[full] = _gauge(full, documentation, labels)
        return self._families[full]

    def add(self, prefix: str, labels: list[str], process: Process) -> None:
        for attribute, name, documentation in PROCESS_GAUGES:
            value = getattr(process, attribute)
            if value is not None:
                self._family(prefix, name, documentation).add_metric(labels, value)
        collectors = dict(process.collectors)
        if process.all_collectors is not None:
            collectors["All"] = process.all_collectors
        for collector, figures in collectors.items():
            # as Flink's Prometheus reporter writes a name: anything else than [a-zA-Z0-9:_]
            # becomes "_" (G1 Young Generation: G1_Young_Generation)
            group = "GarbageCollector_" + _INVALID.sub("_", collector) + "_"
            what = f"collector {collector}"
            values = (figures.count, figures.time_ms, figures.time_ms_per_second)
            for (suffix, documentation), value in zip(GC_GAUGES, values, strict=True):
                if value is not None:
                    self._family(
                        prefix, group + suffix, documentation.format(what=what)
                    ).add_metric(labels, value)

    def families(self) -> Iterator[Metric]:
        return iter(self._families.values())


def metrics_route(client: Any) -> Route:
    """``GET /metrics`` in Prometheus' text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RegistryCollector(client))

    async def metrics(request: Request) -> Response:
        """Every job's metrics in Prometheus' text format, read afresh at each scrape."""
        body = await run_in_threadpool(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Route(messages.METRICS.path, metrics, methods=[messages.METRICS.method])


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}
