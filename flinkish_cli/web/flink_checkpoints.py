"""A job's checkpoints and exceptions in the JSON of Flink's REST API (v1): a committed
micro-batch is a completed checkpoint (its id the batch id, its duration the batch's, its
size the bytes of the query's state, with the state rows and the sources' lag beside); the
history lists each query's recent batches, newest first; the job's failures are Flink's
exception history entries. Plain data in, JSON-ready dicts out (as :mod:`.flink_json`)."""

from __future__ import annotations

import statistics
from typing import Any

from flinkish_cli.registry.history import SavepointRecord
from flinkish_cli.registry.status import JobStatus, Progress, parse_timestamp
from flinkish_cli.web.flink_json import ms, vertex_id


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
