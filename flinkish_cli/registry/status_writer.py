"""Every write of a job's status file (``status.json``), as the transition that makes it.

Several processes write one job's status, each only at its own moments, and each write
replaces the whole file (:meth:`JobRegistry.write <flinkish_cli.registry.store.JobRegistry.write>`,
which nothing else calls). Who writes, when, and why that is safe:

- the CLI that submits the job, before anything else knows it: :func:`record_created`
  (CREATED), and :func:`record_launch_failed` (FAILED, when ``spark-submit`` could not be
  started: no supervisor or driver ever will write it);
- the job's driver while it runs, often (every heartbeat and completed batch):
  :func:`publish_driver_status`, the snapshot its status keeper took under its lock;
- the job's supervisor, only while no driver runs (before a driver reported, between
  attempts, or once the last one ended): :func:`record_supervised` (the status as the
  supervisor read it, a restart or the YARN application accepted for the job recorded in it
  or not, with the supervisor's heartbeat) and :func:`record_supervised_end`
  (the job ended in place of a driver that cannot record it);
- ``flinkish upgrade``: :func:`link_upgrade`, on the replaced job only once it has ended.

Each function raises what the storage raises; the caller decides whether a status that
cannot be written may end it (the driver and the supervisor log it and go on).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry

if TYPE_CHECKING:
    from flinkish_cli.plan.job import JobPlan


def record_created(
    registry: JobRegistry, plan: JobPlan, upgraded_from: str | None, rolled_back: bool
) -> JobStatus:
    """Record a job just submitted as CREATED, before its supervisor starts; its status."""
    status = JobStatus(
        job_id=plan.job_id,
        name=plan.name,
        heartbeat_timeout=plan.heartbeat_timeout_s,
        log_path=plan.log_path,
        master=plan.master,
        mode=plan.runtime_mode,
        parallelism=plan.parallelism,
        restored_from=plan.restore.source if plan.restore else None,
        upgraded_from=upgraded_from,
        rolled_back=rolled_back,
    )
    registry.write(status)
    return status


def record_launch_failed(registry: JobRegistry, created: JobStatus, cause: str) -> None:
    """Record the job ``created`` by :func:`record_created` as FAILED with ``cause``: its
    supervisor could not be started, so nothing else will."""
    created.state = JobState.FAILED
    created.failure_cause = cause
    registry.write(created)


def publish_driver_status(registry: JobRegistry, snapshot: JobStatus) -> None:
    """Write the running driver's status: a snapshot its status keeper took (with a fresh
    heartbeat). The driver holds the whole status while it runs, so it replaces the file."""
    registry.write(snapshot)


def record_supervised(registry: JobRegistry, status: JobStatus, supervisor_pid: int) -> None:
    """Write ``status`` as the job's supervisor read (and maybe changed) it while no driver
    runs, with the supervisor's heartbeat: the job is not left looking dead meanwhile."""
    status.heartbeat = time.time()
    status.supervisor_pid = supervisor_pid
    registry.write(status)


def record_rescaling(registry: JobRegistry, status: JobStatus, supervisor_pid: int) -> None:
    """RESTARTING between the drivers of an in-place rescale (no failure: the restart
    strategy is not asked), as the supervisor records it."""
    status.state = JobState.RESTARTING
    record_supervised(registry, status, supervisor_pid)


def record_supervised_end(
    registry: JobRegistry,
    status: JobStatus,
    supervisor_pid: int,
    state: JobState,
    cause: str,
    at: float | None = None,
) -> None:
    """End the job in ``state`` (at ``at``, else now) with ``cause`` (none for FINISHED), as
    its supervisor records it when no driver can: ``status`` as the supervisor read it."""
    status.state = state
    status.failure_cause = cause if state is not JobState.FINISHED else None
    status.end_time = time.time() if at is None else at
    record_supervised(registry, status, supervisor_pid)


def link_upgrade(registry: JobRegistry, old: str, new: str) -> None:
    """Record on the job ``old`` that job ``new`` replaced it (``new`` names ``old`` itself,
    from :func:`record_created`); only on an ``old`` that has ended (its effective state),
    whose status no driver writes any more."""
    status = registry.find(old)
    if status is not None and status.effective_state().is_terminal:
        status.upgraded_to = new
        registry.write(status)
