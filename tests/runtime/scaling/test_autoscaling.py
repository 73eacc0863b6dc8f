"""The autoscaler inside a driver, at its seam (no Spark): it reads the job's series from a
real registry, decides, records in the rescale history and hands a decision to apply to the
job, or records it NOT_APPLIED (metrics-only, or a job that cannot be rescaled in place).
The figures are a synthetic query's (``tests/autoscaler/load.py``) that needs more slots
than it has."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from flinkish_cli.registry import series as series_file
from flinkish_cli.registry.batch_figures import BatchFigures, SourceFigures
from flinkish_cli.registry.rescale_marker import RescaleMarker, write_marker
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.scaling.autoscaling import Autoscaler, kafka_partitions
from tests.autoscaler.load import batches, settings

JOB = "cd" * 16
NOW = 2_000_000_000.0
#: Two slots, every 10 s a batch of 1000 rows that takes 9.5 s: 95 % busy, it wants more.
BUSY = batches(NOW - 1200, NOW, 10.0, 1000, 9.5)
SHORT = settings(
    enabled=True, metrics_window=600.0, stabilization_interval=60.0, utilization_max=0.8
)


class Job:
    """What the autoscaler asks of the job's runtime: its status, whether it can be
    rescaled in place, and the rescale to start."""

    def __init__(self, tmp_path: Path, refusal: str | None = None) -> None:
        self.registry = JobRegistry.open(str(tmp_path))
        query = QueryStatus(name="q", checkpoint=f"{tmp_path}/{JOB}/q", active=True)
        query.trigger_ms = 10_000
        self.status = JobStatus(job_id=JOB, name="j", state=JobState.RUNNING, parallelism=2)
        self.status.queries = {"q": query}
        self.registry.write(self.status)
        series_file.write(self.registry, JOB, series_file.Series(queries={"q": BUSY}))
        self.refusal = refusal
        self.applied: list[RescaleRecord] = []

    def autoscaler(self, **changes: object) -> Autoscaler:
        return Autoscaler(
            dataclasses.replace(SHORT, **changes),  # type: ignore[arg-type]
            self.registry, JOB, 2, lambda: self.status, lambda n: self.refusal,
            self.applied.append, run_start=NOW - 1200,
        )  # fmt: skip

    def history(self) -> RescaleHistory:
        return RescaleHistory.read(self.registry, JOB)


def test_a_busy_job_is_handed_a_scale_up_once(tmp_path: Path) -> None:
    job = Job(tmp_path)
    scaler = job.autoscaler()
    decision = scaler.evaluate(NOW)
    assert decision is not None and decision.direction == "up" and decision.target > 2
    [record] = job.applied
    assert record.outcome is Outcome.PENDING and record.mode == "scaling"
    history = job.history()
    assert history.latest is not None and history.latest["target"] == decision.target
    assert [r.id for r in history.rescales] == [record.id]
    assert scaler.evaluate(NOW + 10) is None, "nothing more while the rescale is handed over"
    scaler.not_applied()
    assert scaler.evaluate(NOW + 20) is not None, "a rescale that did not start frees it"


def test_metrics_only_records_the_decision_and_applies_nothing(tmp_path: Path) -> None:
    job = Job(tmp_path)
    decision = job.autoscaler(scaling_enabled=False).evaluate(NOW)
    assert decision is not None and decision.changes
    [record] = job.history().rescales
    assert (record.mode, record.outcome) == ("metrics-only", Outcome.NOT_APPLIED)
    assert record.end_time == record.time and job.applied == []


def test_a_job_that_cannot_be_rescaled_in_place_says_why(tmp_path: Path) -> None:
    refusal = "in-place rescales run on local Spark, standalone and session clusters, not on yarn"
    job = Job(tmp_path, refusal=refusal)
    job.autoscaler().evaluate(NOW)
    [record] = job.history().rescales
    assert record.outcome is Outcome.NOT_APPLIED and job.applied == []
    assert record.reason.endswith(f"Not applied: {refusal}.")


def test_nothing_is_evaluated_during_a_rescale_or_when_not_running(tmp_path: Path) -> None:
    job = Job(tmp_path)
    write_marker(job.registry, JOB, RescaleMarker("r", 2, 3, "/sp"))
    assert job.autoscaler().evaluate(NOW) is None
    job.status.state = JobState.RESTARTING
    assert job.autoscaler().evaluate(NOW) is None
    assert job.history().rescales == [] and job.applied == []


def test_the_last_change_counts_from_when_it_completed(tmp_path: Path) -> None:
    """A rescale decided long ago that completed a moment ago still holds a scale-down
    back for scale-down.interval (and the next decision for stabilization.interval)."""
    job = Job(tmp_path)
    history = RescaleHistory()
    done = RescaleRecord.new(NOW - 3600, 1, 2, "up", "Scale up.", {}, True)
    done.outcome, done.end_time = Outcome.COMPLETED, int((NOW - 30) * 1000)
    history.append(done)
    history.write(job.registry, JOB)
    decision = job.autoscaler().evaluate(NOW)
    assert decision is not None and decision.blocked_by == "stabilizing", decision.reason


def test_a_scale_down_is_sized_with_the_rate_in_the_rescale_history(tmp_path: Path) -> None:
    """At 2, 100 rows in 3.5 s every 10 s (35 % busy) want 2 slots linearly; the scale-up
    from 1, recorded with the rate it measured there (20 rows/s, more than the 14.3 a slot
    now), says 1 is enough: the driver reads it from the history and scales down to 1."""
    job = Job(tmp_path)
    series_file.write(
        job.registry,
        JOB,
        series_file.Series(queries={"q": batches(NOW - 1200, NOW, 10.0, 100, 3.5)}),
    )
    assert job.autoscaler().evaluate(NOW).target == 2  # type: ignore[union-attr]
    measured = {"processing_rate": 20.0, "window_seconds": 600.0, "window_complete": True}
    up = RescaleRecord.new(NOW - 5000, 1, 2, "up", "Scale up.", {"queries": {"q": measured}}, True)
    up.outcome, up.end_time = Outcome.COMPLETED, int((NOW - 4900) * 1000)
    history = RescaleHistory()
    history.append(up)
    history.write(job.registry, JOB)
    decision = job.autoscaler().evaluate(NOW)
    assert decision is not None and (decision.direction, decision.target) == ("down", 1)
    assert "ran at 20.0 rows/s at parallelism 1" in decision.reason
    assert job.history().rescales[-1].figures["measured"]["q"]["parallelism"] == 1


def test_with_tracking_the_driver_sizes_with_the_restart_times_the_job_measured(
    tmp_path: Path,
) -> None:
    """The completed rescales' measured restarts in the history: the longest recent one,
    with restart.time-tracking.enabled; restart.time as configured without."""
    job = Job(tmp_path)
    history = RescaleHistory()
    for at, took in ((NOW - 9000, 45_000), (NOW - 6000, 20_000)):
        done = RescaleRecord.new(at, 1, 2, "up", "Scale up.", {}, True)
        done.outcome, done.end_time = Outcome.COMPLETED, int((at + 60) * 1000)
        done.restart_duration = took
        history.append(done)
    history.write(job.registry, JOB)
    learnt = job.autoscaler(restart_time_tracking=True).evaluate(NOW)
    assert learnt is not None and learnt.figures["restart_time"] == 45.0
    configured = job.autoscaler().evaluate(NOW)
    assert configured is not None and configured.figures["restart_time"] == 300.0


def test_a_kafka_job_is_scaled_within_its_topics_partitions(tmp_path: Path) -> None:
    """Busy enough for more than 3 slots, but its Kafka source reads 3 partitions: the job
    goes to 3 (a task more would read nothing), as Flink aligns a Kafka source to them."""
    job = Job(tmp_path)
    offsets = {"orders": {"0": 10, "1": 12, "2": 9}}
    job.status.queries["q"].figures = BatchFigures(
        batch_id=1,
        sources=[SourceFigures("KafkaV2[Subscribe[orders]]", end_offset=offsets)],
    )
    decision = job.autoscaler(scale_up_max_factor=4.0).evaluate(NOW)
    assert decision is not None and decision.target == 3
    assert kafka_partitions(job.status) == 3
    without = Job(tmp_path / "files").autoscaler(scale_up_max_factor=4.0).evaluate(NOW)
    assert without is not None and without.target > 3, "a job without Kafka is not capped"
