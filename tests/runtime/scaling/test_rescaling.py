"""The driver's side of an in-place rescale (:class:`RescaleWatch`), without Spark: a job that
fails at the new parallelism gives the rescale up at once, for its supervisor to roll back;
a rollback that fails, or a driver that runs for no rescale, is left to the restart strategy;
a completed rescale has its restart measured onto its record, timed from before the old
driver stopped its queries."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from flinkish_cli.plan.job import Entry, JobPlan, RestorePlan
from flinkish_cli.registry.rescale_marker import RescaleMarker, write_marker
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver.job import JobRuntime
from flinkish_cli.runtime.driver.parts import RuntimeSettings, build_parts
from flinkish_cli.runtime.flavours.flavour import CLASSIC, by_name
from flinkish_cli.runtime.scaling.rescaling import RescaleWatch

JOB = "cd" * 16


class Watched:
    """A rescale driver's watch over a real registry on disk; records what it gave up."""

    def __init__(self, tmp_path: Path, rescale: str | None = "r1") -> None:
        self.registry = JobRegistry.open(str(tmp_path / "checkpoints"))
        self.status = JobStatus(job_id=JOB, name="job", state=JobState.RUNNING, parallelism=3)
        restore = RestorePlan(source="/sp/savepoint-x", rescale=rescale) if rescale else None
        plan = JobPlan(
            job_id=JOB, name="job", entry=Entry("file", "/x/job.py"),
            checkpoint_root=str(tmp_path / "checkpoints"), flink_conf={}, master="local[3]",
            parallelism=3, restore=restore,
        )  # fmt: skip
        self.plan = plan
        self.given_up: list[str] = []
        self.watch = RescaleWatch(
            plan, self.registry, lambda: self.status, dict, self.given_up.append,
            lambda marker, outcome: None,
        )  # fmt: skip

    def runtime(self) -> JobRuntime:
        """The job's real state machine, built as the driver builds it (no Spark started)."""
        parts = build_parts(self.plan, self.registry, by_name(CLASSIC))
        return JobRuntime(self.plan, RuntimeSettings(), parts)

    def mark(self, stage: str) -> None:
        write_marker(self.registry, JOB, RescaleMarker("r1", 2, 3, "/sp/savepoint-x", stage))


def test_a_failure_at_the_new_parallelism_gives_the_rescale_up_once(tmp_path: Path) -> None:
    watched = Watched(tmp_path)
    watched.mark("RESTARTED")
    assert watched.watch.failed("StreamingQueryException: boom")
    [cause] = watched.given_up
    assert "failed at parallelism 3" in cause and "boom" in cause and "back to 2" in cause
    assert not watched.watch.failed("again"), "given up already"
    assert len(watched.given_up) == 1


@pytest.mark.parametrize("stage", ["ROLLING_BACK", None])
def test_a_failed_rollback_or_an_ended_rescale_is_left_to_the_restart_strategy(
    tmp_path: Path, stage: str | None
) -> None:
    watched = Watched(tmp_path)
    if stage:
        watched.mark(stage)
    assert not watched.watch.failed("boom")
    assert watched.given_up == []


def test_a_driver_without_a_rescale_is_left_to_the_restart_strategy(tmp_path: Path) -> None:
    watched = Watched(tmp_path, rescale=None)
    watched.mark("RESTARTED")  # another driver's: not this one's
    assert not watched.watch.failed("boom")
    assert watched.given_up == []


def _in_progress(registry: JobRegistry, record_id: str) -> None:
    record = dataclasses.replace(
        RescaleRecord.new(1000.0, 2, 3, "up", "Up.", {}, True), id=record_id
    )
    history = RescaleHistory()
    history.append(record)
    history.update_outcome(record_id, Outcome.IN_PROGRESS, None)
    history.write(registry, JOB)


@pytest.mark.parametrize(
    ("stage", "outcome"), [("RESTARTED", "COMPLETED"), ("ROLLING_BACK", "ROLLED_BACK")]
)
def test_a_completed_rescale_has_its_restart_measured_onto_its_record(
    tmp_path: Path, stage: str, outcome: str
) -> None:
    """From the marker's time (the old driver began stopping) to when the new driver has
    every query's first batch behind it; a rollback measures nothing."""
    watched = Watched(tmp_path)
    watched.watch.ended = watched.runtime()._rescale_ended
    _in_progress(watched.registry, "r1")
    stopped = time.time() - 42.0
    marker = RescaleMarker("r1", 2, 3, "/sp/savepoint-x", stage, time=int(stopped * 1000))
    write_marker(watched.registry, JOB, marker)
    watched.status.queries_started = True  # and no query restored that still waits
    watched.watch.watch()
    [record] = RescaleHistory.read(watched.registry, JOB).rescales
    assert record.outcome is Outcome(outcome)
    if outcome == "COMPLETED":
        assert record.restart_duration is not None
        assert 42_000 <= record.restart_duration < 42_000 + 5_000
    else:
        assert record.restart_duration is None


def test_the_restart_is_timed_from_before_the_queries_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watched = Watched(tmp_path, rescale=None)
    registry = watched.registry
    runtime = watched.runtime()
    runtime.keeper.set_state(JobState.RUNNING)
    stops: list[tuple[RescaleMarker, float]] = []
    monkeypatch.setattr(  # the queries' stop and savepoint, which need Spark
        runtime, "rescale", lambda marker, directory: stops.append((marker, time.time())) or "/sp/x"
    )
    before = int(time.time() * 1000)
    assert runtime.request_rescale(2, "By hand.") == "/sp/x"
    [(marker, stopping)] = stops
    assert before <= marker.time <= stopping * 1000, "stamped before the queries stop"
    [record] = RescaleHistory.read(registry, JOB).rescales
    assert (record.id, record.outcome) == (marker.id, Outcome.IN_PROGRESS)
