"""The cluster's documents of Flink's REST API (v1): ``GET /overview`` over the jobs that
are not over, each on the cluster :class:`JobCluster` says (a job's Spark driver is its
JobManager, its executors its TaskManagers, with Spark's task slots), and ``GET /config``,
the dashboard's configuration. Plain data in, JSON-ready dicts out (as :mod:`.flink_json`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flinkish_cli.registry.jvm import JvmRecord
from flinkish_cli.registry.status import JobState, JobStatus


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
