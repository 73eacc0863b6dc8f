"""``/metrics``: the registry's jobs as Prometheus metrics, read afresh at every scrape.

Flink's names where Flink has the metric, as its Prometheus reporter exposes them (a Grafana
dashboard made for Flink finds them), labelled ``job_id`` and ``job_name``, and ``query`` for
a query's (Flink's task scope):

- ``flink_jobmanager_job_uptime`` (ms, 0 unless RUNNING), ``..._downtime``,
  ``..._numRestarts``, ``..._lastCheckpointDuration`` (ms),
  ``..._lastCheckpointSize`` (bytes of the queries' state),
  ``..._numberOfCompletedCheckpoints``, ``..._numberOfFailedCheckpoints``,
  ``..._lastCheckpointRestoreTimestamp``;
- ``flink_taskmanager_job_task_numRecordsInPerSecond`` and
  ``flink_taskmanager_job_task_numRecordsOutPerSecond`` per query (Spark's input and
  processing rates), ``flink_taskmanager_job_task_operator_currentInputWatermark`` (ms);
- Spark's progress figures otherwise: ``flinkish_query_batch_duration_ms``,
  ``flinkish_query_last_batch``, ``flinkish_query_state_rows``, ``flinkish_query_input_rows``,
  ``flinkish_query_records_lag_max`` (where the source reports it, as Kafka's does),
  and ``flinkish_job_state`` (1 for the job's state, labelled ``state``);
- what each query's checkpoint takes on storage, as its driver last measured it:
  ``flinkish_query_checkpoint_bytes`` and ``flinkish_query_checkpoint_files``, labelled
  ``part`` (``offsets``, ``commits``, ``sources``, ``state``, ``metadata``, and
  ``sink_metadata`` for a file sink's log beside its output) and ``grows`` (``age`` for the
  parts that grow for as long as the query runs, ``state``, ``bounded``), and
  ``flinkish_query_checkpoint_measured_timestamp`` (ms). Alert on
  ``flinkish_query_checkpoint_bytes{grows="age"}``: ``flinkish info <JobID>`` says why and
  what to do.

Nothing here keeps state between scrapes: a registry that cannot be read yields no samples
and ``flinkish_registry_up 0``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.registry.footprint import grows
from flinkish_cli.registry.status import JobState, JobStatus, parse_timestamp

log = logging.getLogger("flinkish.web")

JOB = ("job_id", "job_name")
QUERY = ("job_id", "job_name", "query")
PART = (*QUERY, "part", "grows")


_J, _T = "flink_jobmanager_job_", "flink_taskmanager_job_task_"
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
    ("in_rate", _T + "numRecordsInPerSecond", "Input rows per second.", QUERY),
    ("out_rate", _T + "numRecordsOutPerSecond", "Rows processed per second.", QUERY),
    ("watermark", _T + "operator_currentInputWatermark", "Event-time watermark (ms).", QUERY),
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
)


class RegistryCollector:
    """A Prometheus collector over the job client's registry."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("flinkish_registry_up", "Whether the registry could be read.")
        try:
            jobs, _unreadable = self.client.list_jobs()
        except Exception as error:  # a scrape never fails: it says the registry is down
            log.warning("The registry could not be read for /metrics: %s", error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from job_metrics(jobs, time.time())


def _gauge(name: str, documentation: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=list(labels))


def job_metrics(jobs: list[JobStatus], now: float) -> Iterator[Metric]:
    """Every job's metrics (see the module's docstring)."""
    g = {key: _gauge(name, doc, labels) for key, name, doc, labels in METRICS}
    for status in jobs:
        state = status.effective_state(now)
        labels = [status.job_id, status.name]
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
            g["in_rate"].add_metric(qlabels, last.input_rows_per_second)
            g["out_rate"].add_metric(qlabels, last.processed_rows_per_second)
            if last.watermark:
                g["watermark"].add_metric(qlabels, parse_timestamp(last.watermark))
            g["batch_ms"].add_metric(qlabels, last.duration_ms)
            g["batch"].add_metric(qlabels, last.batch_id)
            g["state_rows"].add_metric(qlabels, last.state_rows)
            g["input_rows"].add_metric(qlabels, last.input_rows)
            if last.lag is not None:
                g["lag"].add_metric(qlabels, last.lag)
        for name, query in status.queries.items():
            if query.footprint is None:
                continue
            qlabels = [*labels, name]
            g["cp_time"].add_metric(qlabels, query.footprint.measured * 1000)
            for part, size in query.footprint.parts.items():
                plabels = [*qlabels, part, grows(part)]
                g["cp_bytes"].add_metric(plabels, size.bytes)
                g["cp_files"].add_metric(plabels, size.files)
    yield from g.values()


def metrics_route(client: Any) -> Route:
    """``GET /metrics`` in Prometheus' text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RegistryCollector(client))

    async def metrics(request: Request) -> Response:
        body = await run_in_threadpool(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])
