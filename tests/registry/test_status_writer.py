"""The transitions that write a job's status file, on a registry in a local directory: each
writes what its writer knows at that moment, and nothing it does not own."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flinkish_cli.plan.job import Entry, JobPlan, RestorePlan
from flinkish_cli.registry import status_writer
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry

OLD = "3f9c12ab45cd67ef89013f9c12ab45cd"
NEW = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    return JobRegistry.open(str(tmp_path / "cp"))


def _plan(registry: JobRegistry, restore: RestorePlan | None = None) -> JobPlan:
    return JobPlan(
        job_id=NEW,
        name="orders v2",
        entry=Entry(kind="file", target="/deploy/job.py"),
        checkpoint_root=registry.root,
        flink_conf={},
        master="local[2]",
        runtime_mode="BATCH",
        heartbeat_timeout_s=30.0,
        parallelism=2,
        log_path="/logs/orders.log",
        restore=restore,
    )


def test_a_submitted_job_is_recorded_created_with_its_plan(registry: JobRegistry) -> None:
    restore = RestorePlan(source="/sp/savepoint-3f9c12-0123456789ab")
    created = status_writer.record_created(registry, _plan(registry, restore), OLD, True)
    assert registry.get(NEW) == created
    assert created.state is JobState.CREATED
    assert (created.name, created.master, created.mode) == ("orders v2", "local[2]", "BATCH")
    assert (created.heartbeat_timeout, created.parallelism) == (30.0, 2)
    assert created.log_path == "/logs/orders.log"
    assert created.restored_from == restore.source
    assert (created.upgraded_from, created.rolled_back) == (OLD, True)


def test_a_job_without_a_restore_names_no_source(registry: JobRegistry) -> None:
    created = status_writer.record_created(registry, _plan(registry), None, False)
    assert created.restored_from is None and created.upgraded_from is None


def test_a_job_whose_supervisor_could_not_start_is_failed(registry: JobRegistry) -> None:
    created = status_writer.record_created(registry, _plan(registry), None, False)
    status_writer.record_launch_failed(registry, created, "spark-submit could not start: no")
    failed = registry.get(NEW)
    assert failed.state is JobState.FAILED
    assert failed.failure_cause == "spark-submit could not start: no"
    assert failed.start_time == created.start_time


def test_the_driver_publishes_its_whole_status(registry: JobRegistry) -> None:
    registry.write(JobStatus(job_id=OLD, name="orders", upgraded_from=NEW))
    snapshot = JobStatus(job_id=OLD, name="orders", state=JobState.RUNNING, pid=42)
    snapshot.queries["q"] = QueryStatus(name="q", checkpoint="/cp/q")
    status_writer.publish_driver_status(registry, snapshot)
    assert registry.get(OLD) == snapshot  # the driver's status replaces the file whole


def test_the_supervisor_keeps_the_heartbeat_of_what_it_read(registry: JobRegistry) -> None:
    status = JobStatus(job_id=OLD, name="orders", state=JobState.RESTARTING, restarts=1)
    status.heartbeat = 0.0
    before = time.time()
    status_writer.record_supervised(registry, status, 4242)
    written = registry.get(OLD)
    assert written.heartbeat >= before and written.supervisor_pid == 4242
    assert (written.state, written.restarts) == (JobState.RESTARTING, 1)


@pytest.mark.parametrize("state", [JobState.CANCELED, JobState.FAILED, JobState.FINISHED])
def test_the_supervisor_ends_a_job_in_place_of_its_driver(
    registry: JobRegistry, state: JobState
) -> None:
    status = JobStatus(job_id=OLD, name="orders", state=JobState.RESTARTING, pid=7)
    before = time.time()
    status_writer.record_supervised_end(registry, status, 4242, state, "why")
    ended = registry.get(OLD)
    assert ended.state is state and ended.supervisor_pid == 4242
    assert ended.failure_cause == ("why" if state is not JobState.FINISHED else None)
    assert ended.end_time is not None and ended.end_time >= before
    assert ended.heartbeat >= before and ended.pid == 7


def test_the_supervisor_ends_a_job_at_the_time_it_decided(registry: JobRegistry) -> None:
    status = JobStatus(job_id=OLD, name="orders", state=JobState.RUNNING)
    status_writer.record_supervised_end(registry, status, 1, JobState.FAILED, "gave up", at=12.5)
    assert registry.get(OLD).end_time == 12.5


def test_an_ended_job_is_linked_to_the_job_that_replaced_it(registry: JobRegistry) -> None:
    registry.write(JobStatus(job_id=OLD, name="orders", state=JobState.FINISHED))
    status_writer.link_upgrade(registry, OLD, NEW)
    assert registry.get(OLD).upgraded_to == NEW


def test_a_job_with_a_stale_heartbeat_counts_as_ended(registry: JobRegistry) -> None:
    stale = JobStatus(job_id=OLD, name="orders", state=JobState.RUNNING, pid=7)
    stale.heartbeat = time.time() - 3600
    registry.write(stale)
    status_writer.link_upgrade(registry, OLD, NEW)
    assert registry.get(OLD).upgraded_to == NEW


def test_a_live_job_is_not_linked(registry: JobRegistry) -> None:
    live = JobStatus(job_id=OLD, name="orders", state=JobState.RUNNING, pid=7)
    registry.write(live)
    status_writer.link_upgrade(registry, OLD, NEW)
    assert registry.get(OLD) == live  # its driver owns its status
    status_writer.link_upgrade(registry, NEW, OLD)  # no such job: nothing to link
    assert registry.find(NEW) is None
