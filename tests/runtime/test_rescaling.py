"""The driver's side of an in-place rescale (:class:`RescaleWatch`), without Spark: a job that
fails at the new parallelism gives the rescale up at once, for its supervisor to roll back;
a rollback that fails, or a driver that runs for no rescale, is left to the restart strategy."""

from __future__ import annotations

from pathlib import Path

import pytest

from flinkish_cli.plan.job import Entry, JobPlan, RestorePlan
from flinkish_cli.registry.rescale_marker import RescaleMarker, write_marker
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.rescaling import RescaleWatch

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
        self.given_up: list[str] = []
        self.watch = RescaleWatch(
            plan, self.registry, lambda: self.status, dict, self.given_up.append,
            lambda marker, outcome: None,
        )  # fmt: skip

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
