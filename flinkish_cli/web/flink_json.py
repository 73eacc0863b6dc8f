"""flinkish's jobs in the JSON of Flink's REST API (v1): field names, states and shapes as
Flink's own server writes them, so that Flink's CLI, its Web UI's clients and scripts read
them unchanged.

How flinkish maps onto Flink's model:

- a job is a job (same JobID, name and states); each of its streaming queries is a *vertex*
  (a task of parallelism ``parallelism.default``), with a stable id derived from the JobID and
  the query's name;
- the job's *plan* is its graph: a node per operator of each query (sources, watermarks,
  stateful operators, joins, the sink), the exchanges between them its inputs' ship
  strategies (:func:`plan`); a node names its query's vertex (``job_vertex_id``);
- a committed micro-batch is a completed *checkpoint* (its id the batch id, its duration the
  batch's, its size the bytes of the query's state, with the state rows and the sources' lag
  beside); the history lists each query's recent batches, newest first;
- the job's failures (its exception history) are Flink's exception history entries;
- a job's Spark driver is its JobManager (as in Flink's application mode) and the executors
  that run its tasks are its TaskManagers, with Spark's task slots (:class:`JobCluster`).

Every function takes plain data and returns plain JSON-ready dicts: nothing here reads the
registry or knows HTTP.
"""

from __future__ import annotations

import hashlib
import html
import statistics
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.registry.graph import JobGraph, node_id
from flinkish_cli.registry.history import SavepointRecord
from flinkish_cli.registry.jvm import JvmRecord
from flinkish_cli.registry.status import JobState, JobStatus, Progress, parse_timestamp

#: Flink's job states (JobStatus), in the order Flink's ``timestamps`` lists them.
FLINK_JOB_STATES = (
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
)
#: Flink's task states (ExecutionState).
EXECUTION_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
)


def ms(seconds: float | None) -> int:
    """Epoch seconds as Flink's epoch milliseconds (-1 for none)."""
    return int(seconds * 1000) if seconds else -1


def vertex_id(job_id: str, query: str) -> str:
    """A stable 32-hex id for a query of a job (Flink's JobVertexID form)."""
    return hashlib.md5(f"{job_id}/{query}".encode(), usedforsecurity=False).hexdigest()


def _duration(status: JobStatus, now: float) -> int:
    end = status.end_time if status.state.is_terminal and status.end_time else now
    return max(0, int((end - status.start_time) * 1000))


def _task_state(status: JobStatus, state: JobState, active: bool) -> str:
    """A query's task state, from its activity and the job's state."""
    if active:
        return "RUNNING"
    if state is JobState.CREATED:
        return "SCHEDULED"
    if state in (JobState.FAILED, JobState.FAILING):
        return "FAILED"
    if state in (JobState.CANCELED, JobState.CANCELLING):
        return "CANCELED"
    if state is JobState.RESTARTING:
        return "SCHEDULED"
    return "FINISHED"


def _task_counts(status: JobStatus, state: JobState) -> dict[str, int]:
    counts = dict.fromkeys(EXECUTION_STATES, 0)
    for query in status.queries.values():
        counts[_task_state(status, state, query.active)] += 1
    return counts


def job_overview(status: JobStatus, now: float | None = None) -> dict[str, Any]:
    """One job of ``GET /jobs/overview`` (Flink's JobDetails)."""
    now = time.time() if now is None else now
    state = status.effective_state(now)
    counts = _task_counts(status, state)
    tasks = {name.lower(): count for name, count in counts.items()}
    tasks["total"] = len(status.queries)
    return {
        "jid": status.job_id,
        "name": status.name,
        "start-time": ms(status.start_time),
        "end-time": ms(status.end_time) if state.is_terminal else -1,
        "duration": _duration(status, now),
        "state": state.value,
        "last-modification": ms(status.end_time or status.heartbeat),
        "tasks": tasks,
        "pending-operators": 0,
    }


def job_details(
    status: JobStatus,
    now: float | None = None,
    last_savepoint: SavepointRecord | None = None,
    graph: JobGraph | None = None,
) -> dict[str, Any]:
    """``GET /jobs/:jobid`` (Flink's JobDetailsInfo): one vertex per query, the job's
    :func:`plan`; with flinkish's own fields beside, ``last-savepoint`` (the history's newest
    completed) among them."""
    now = time.time() if now is None else now
    state = status.effective_state(now)
    parallelism = int(status.parallelism or 1)
    timestamps = dict.fromkeys(FLINK_JOB_STATES, 0)
    timestamps["CREATED"] = timestamps["INITIALIZING"] = ms(status.start_time)
    if state is not JobState.CREATED:
        timestamps["RUNNING"] = ms(status.start_time)
    if state.is_terminal:
        timestamps[state.value] = ms(status.end_time or status.heartbeat)
    vertices = []
    for name, query in status.queries.items():
        task_state = _task_state(status, state, query.active)
        tasks = dict.fromkeys(EXECUTION_STATES, 0)
        tasks[task_state] = 1
        rows = sum(p.input_rows for p in query.recent)
        vertices.append(
            {
                "id": vertex_id(status.job_id, name),
                "slotSharingGroupId": vertex_id(status.job_id, ""),
                "name": name,
                "maxParallelism": parallelism,
                "parallelism": parallelism,
                "status": task_state,
                "start-time": ms(status.start_time),
                "end-time": ms(status.end_time) if state.is_terminal else -1,
                "duration": _duration(status, now),
                "tasks": tasks,
                "metrics": {
                    "read-bytes": 0,
                    "read-bytes-complete": True,
                    "write-bytes": 0,
                    "write-bytes-complete": True,
                    "read-records": rows,
                    "read-records-complete": True,
                    "write-records": 0,
                    "write-records-complete": True,
                    "accumulated-backpressured-time": 0,
                    "accumulated-idle-time": 0,
                    "accumulated-busy-time": 0,
                },
            }
        )
    return {
        "jid": status.job_id,
        "name": status.name,
        "isStoppable": state is JobState.RUNNING,
        "state": state.value,
        "job-type": "BATCH" if status.mode == "BATCH" else "STREAMING",
        "start-time": ms(status.start_time),
        "end-time": ms(status.end_time) if state.is_terminal else -1,
        "duration": _duration(status, now),
        "maxParallelism": parallelism,
        "now": ms(now),
        "timestamps": timestamps,
        "vertices": vertices,
        "status-counts": _task_counts(status, state),
        "plan": plan(status, graph),
        "pending-operators": 0,
        # flinkish's own, which Flink's clients ignore
        "restored-from": status.restored_from,
        "restarts": status.restarts,
        "upgraded_from": status.upgraded_from,
        "upgraded_to": status.upgraded_to,
        "last-savepoint": last_savepoint.summary() if last_savepoint else None,
        "failure-cause": status.effective_failure_cause(now),
    }


def plan(status: JobStatus, graph: JobGraph | None = None) -> dict[str, Any]:
    """Flink's JSON plan (``GET /jobs/:jobid/plan``, and ``plan`` in ``GET /jobs/:jobid``):
    a node per operator of each query's graph (:mod:`flinkish_cli.registry.graph`), its
    inputs the edges into it with their ship strategy (``HASH`` for Spark's hash exchange,
    ``FORWARD`` without one...). Its ``parallelism`` is a stateful operator's state partitions,
    or the job's parallelism; ``operator`` is what a user calls it, ``operator_strategy``
    Spark's physical operator, ``description`` (HTML, as Flink's) both with its details.
    Beside Flink's fields, each node names its query's vertex (``job_vertex_id``, as Flink 2's
    stream graph does). A query whose graph is not recorded yet is one node, its vertex."""
    parallelism = int(status.parallelism or 1)
    graphs = graph.queries if graph else {}
    nodes: list[dict[str, Any]] = []
    for name in status.queries:
        vertex = vertex_id(status.job_id, name)
        query = graphs.get(name)
        if query is None or not query.nodes:
            nodes.append(_plan_node(vertex, parallelism, name, "", html.escape(name), [], vertex))
            continue
        ids = {node.key: node_id(status.job_id, name, node.key) for node in query.nodes}
        for node in query.nodes:
            inputs = [
                {
                    "num": number,
                    "id": ids[edge.source],
                    "ship_strategy": edge.ship_strategy,
                    "exchange": "pipelined_bounded",
                }
                for number, edge in enumerate(e for e in query.edges if e.target == node.key)
            ]
            described = f"{name}: {node.label}"
            if node.description:
                described += f"\n{node.description}"
            nodes.append(
                _plan_node(
                    ids[node.key],
                    node.partitions or parallelism,
                    node.label,
                    node.operator,
                    html.escape(described).replace("\n", "<br/>"),
                    inputs,
                    vertex,
                )
            )
    return {
        "jid": status.job_id,
        "name": status.name,
        "type": "BATCH" if status.mode == "BATCH" else "STREAMING",
        "nodes": nodes,
    }


def _plan_node(
    node: str,
    parallelism: int,
    operator: str,
    strategy: str,
    description: str,
    inputs: list[dict[str, Any]],
    vertex: str,
) -> dict[str, Any]:
    return {
        "id": node,
        "parallelism": parallelism,
        "operator": operator,
        "operator_strategy": strategy,
        "description": description,
        "inputs": inputs,
        "optimizer_properties": "{}",
        "job_vertex_id": vertex,
    }


def job_ids(statuses: list[JobStatus], now: float | None = None) -> dict[str, Any]:
    """``GET /jobs``."""
    return {"jobs": [{"id": s.job_id, "status": s.effective_state(now).value} for s in statuses]}


@dataclass(frozen=True)
class JobCluster:
    """What one job that is not over runs on, in Flink's cluster terms: its TaskManagers
    (Spark's executors that run tasks; local mode's one is the driver), their task slots and
    the slots running no task now. Without a record of its JVMs (``flinkish.metrics.jvm
    .interval`` 0, a session cluster without its UI) the job's driver counts as one
    TaskManager with one slot per query, none free."""

    taskmanagers: int
    slots: int
    available: int

    @classmethod
    def of(cls, status: JobStatus, record: JvmRecord | None) -> JobCluster:
        if record is None:
            return cls(1, len(status.queries), 0)
        return cls(len(record.taskmanagers), record.slots_total, record.slots_available)


def cluster_overview(
    statuses: list[JobStatus], version: str, jvms: dict[str, JvmRecord] | None = None
) -> dict[str, Any]:
    """``GET /overview`` (Flink's ClusterOverview): the jobs that are not over, each on the
    cluster :class:`JobCluster` says (``jvms``: the jobs' records of their JVMs)."""
    now = time.time()
    states = [s.effective_state(now) for s in statuses]
    running = [s for s, state in zip(statuses, states, strict=True) if not state.is_terminal]
    clusters = [JobCluster.of(s, (jvms or {}).get(s.job_id)) for s in running]
    return {
        "taskmanagers": sum(c.taskmanagers for c in clusters),
        "slots-total": sum(c.slots for c in clusters),
        "slots-available": sum(c.available for c in clusters),
        "jobs-running": len(running),
        "jobs-finished": states.count(JobState.FINISHED),
        "jobs-cancelled": states.count(JobState.CANCELED),
        "jobs-failed": states.count(JobState.FAILED),
        "flink-version": version,
        "flink-commit": "flinkish",
    }


def dashboard_config(
    version: str, refresh_ms: int, cancel: bool, rescale: bool = False
) -> dict[str, Any]:
    """``GET /config`` (Flink's DashboardConfiguration)."""
    local = datetime.now().astimezone()
    offset = local.utcoffset()
    return {
        "refresh-interval": refresh_ms,
        "timezone-name": local.tzname() or "UTC",
        "timezone-offset": int(offset.total_seconds() * 1000) if offset else 0,
        "flink-version": version,
        "flink-revision": "flinkish",
        "features": {
            "web-submit": False,
            "web-cancel": cancel,
            "web-rescale": rescale,
            "web-history": False,
        },
    }


def job_config(status: JobStatus, conf: dict[str, str]) -> dict[str, Any]:
    """``GET /jobs/:jobid/config`` (Flink's JobConfigInfo); a secret key's value (there
    should be none: the kept configuration leaves them out) is shown redacted."""
    conf = {key: REDACTED if is_secret(key) else value for key, value in conf.items()}
    return {
        "jid": status.job_id,
        "name": status.name,
        "execution-config": {
            "execution-mode": "PIPELINED",
            "restart-strategy": conf.get("restart-strategy.type", "default"),
            "job-parallelism": int(status.parallelism or 1),
            "object-reuse-mode": False,
            "user-config": dict(sorted(conf.items())),
        },
    }


def _checkpoint(job_id: str, query: str, progress: Progress, path: str) -> dict[str, Any]:
    trigger = parse_timestamp(progress.timestamp)
    return {
        "@class": "completed",
        "id": progress.batch_id,
        "status": "COMPLETED",
        "is_savepoint": False,
        "savepointFormat": None,
        "trigger_timestamp": trigger,
        "latest_ack_timestamp": trigger + progress.duration_ms,
        "checkpointed_size": progress.state_bytes,
        "state_size": progress.state_bytes,
        "end_to_end_duration": progress.duration_ms,
        "alignment_buffered": 0,
        "processed_data": progress.input_rows,
        "persisted_data": 0,
        "num_subtasks": 1,
        "num_acknowledged_subtasks": 1,
        "checkpoint_type": "CHECKPOINT",
        "tasks": {},
        "external_path": path,
        "discarded": False,
        # flinkish's own: which query's micro-batch this is, and its figures
        "query": query,
        "vertex": vertex_id(job_id, query),
        "input_rows_per_second": progress.input_rows_per_second,
        "processed_rows_per_second": progress.processed_rows_per_second,
        "watermark": progress.watermark,
        "state_rows": progress.state_rows,
        "lag": progress.lag,
    }


def stats_summary(values: list[int]) -> dict[str, Any]:
    """Flink's ``StatsSummaryDto`` of ``values`` (all zero when there are none)."""
    if not values:
        zero = {"min": 0, "max": 0, "avg": 0}
        return {**zero, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0}
    ordered = sorted(values)

    def quantile(q: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])

    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": int(statistics.fmean(ordered)),
        "p50": quantile(0.5),
        "p90": quantile(0.9),
        "p95": quantile(0.95),
        "p99": quantile(0.99),
        "p999": quantile(0.999),
    }


def checkpoint_history(status: JobStatus, size: int) -> list[dict[str, Any]]:
    """The job's recent micro-batches as completed checkpoints, newest first, at most
    ``size`` (``web.checkpoints.history``)."""
    entries = [
        _checkpoint(status.job_id, name, progress, query.checkpoint)
        for name, query in status.queries.items()
        for progress in query.recent
        if progress.input_rows or progress.duration_ms
    ]
    entries.sort(key=lambda e: (e["trigger_timestamp"], e["id"]), reverse=True)
    return entries[:size]


def batch_source_offsets(status: JobStatus, query: str, batch_id: int) -> list[Any] | None:
    """Each source's end offsets after batch ``batch_id`` of ``query`` (Spark's form: for a
    Kafka source ``{topic: {partition: next offset}}``), where the query's figures are that
    batch's; None otherwise."""
    entry = status.queries.get(query)
    figures = entry.figures if entry else None
    if figures is None or figures.batch_id != batch_id:
        return None
    return [s.end_offset for s in figures.sources]


def checkpoints(
    status: JobStatus,
    size: int,
    last_savepoint: SavepointRecord | None = None,
    savepoint_offsets: dict[str, dict[str, list[Any]]] | None = None,
) -> dict[str, Any]:
    """``GET /jobs/:jobid/checkpoints`` (Flink's CheckpointingStatistics): ``counts`` are
    the job's committed micro-batches (:meth:`JobStatus.completed_checkpoints`), ``latest``
    its newest batch and ``last_savepoint``, the newest completed savepoint of its history
    (:meth:`~flinkish_cli.registry.history.SavepointHistory.last_completed`).

    flinkish's own ``source_offsets``: in ``latest.completed``, each source's end offsets
    after that batch; in ``latest.savepoint`` and ``latest.restored``, each query's sources'
    offsets as the savepoint holds them (``savepoint_offsets``: path → query → offsets, as
    ``savepoint info`` shows them), where they could be read."""
    history = checkpoint_history(status, size)
    completed = status.completed_checkpoints()
    held = savepoint_offsets or {}
    latest = dict(history[0]) if history else None
    if latest is not None:
        offsets = batch_source_offsets(status, latest["query"], latest["id"])
        if offsets is not None:
            latest["source_offsets"] = offsets
    savepoint = None
    if last_savepoint is not None:
        taken = int(last_savepoint.time * 1000)
        savepoint = {
            "@class": "completed",
            "id": 0,
            "status": "COMPLETED",
            "is_savepoint": True,
            "savepointFormat": "CANONICAL",
            "trigger_timestamp": taken,
            "latest_ack_timestamp": taken,
            "checkpointed_size": 0,
            "state_size": 0,
            "end_to_end_duration": 0,
            "alignment_buffered": 0,
            "processed_data": 0,
            "persisted_data": 0,
            "num_subtasks": len(status.queries),
            "num_acknowledged_subtasks": len(status.queries),
            "checkpoint_type": "SAVEPOINT",
            "tasks": {},
            "external_path": last_savepoint.path,
            "discarded": False,
        }
        if last_savepoint.path in held:
            savepoint["source_offsets"] = held[last_savepoint.path]
    restored = None
    if status.restored_from:
        restored = {
            "id": 0,
            "restore_timestamp": ms(status.start_time),
            "is_savepoint": "savepoint-" in status.restored_from,
            "external_path": status.restored_from,
        }
        if status.restored_from in held:
            restored["source_offsets"] = held[status.restored_from]
    return {
        "counts": {
            "restored": 1 if status.restored_from else 0,
            "total": completed,
            "in_progress": 0,
            "completed": completed,
            "failed": 0,
        },
        "summary": {
            "checkpointed_size": stats_summary([e["checkpointed_size"] for e in history]),
            "state_size": stats_summary([e["state_size"] for e in history]),
            "end_to_end_duration": stats_summary([e["end_to_end_duration"] for e in history]),
            "alignment_buffered": stats_summary([]),
            "processed_data": stats_summary([e["processed_data"] for e in history]),
            "persisted_data": stats_summary([]),
        },
        "latest": {
            "completed": latest,
            "savepoint": savepoint,
            "failed": None,
            "restored": restored,
        },
        "history": history,
    }


def exceptions(status: JobStatus, limit: int) -> dict[str, Any]:
    """``GET /jobs/:jobid/exceptions`` (Flink's JobExceptionsInfoWithHistory), newest
    first; with Flink 1.x's top-level fields too, for older clients."""
    entries = []
    for failure in reversed(status.exceptions[-limit:] if limit > 0 else []):
        cause = str(failure.get("cause") or "")
        first = cause.splitlines()[0] if cause else ""
        name = first.split(":", 1)[0] if ":" in first else "Exception"
        entry: dict[str, Any] = {
            "exceptionName": name,
            "stacktrace": cause,
            "timestamp": int(failure.get("timestamp") or 0),
            "failureLabels": {"attempt": str(failure.get("attempt", 0))},
            "concurrentExceptions": [],
        }
        if failure.get("query"):
            entry["taskName"] = failure["query"]
        entries.append(entry)
    newest = entries[0] if entries else None
    return {
        "root-exception": newest["stacktrace"] if newest else None,
        "timestamp": newest["timestamp"] if newest else None,
        "all-exceptions": [],
        "truncated": len(status.exceptions) > limit,
        "exceptionHistory": {"entries": entries, "truncated": len(status.exceptions) > limit},
    }
