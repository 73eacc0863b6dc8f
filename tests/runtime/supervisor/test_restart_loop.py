"""The supervisor's restart loop (:meth:`Supervisor.run`) at its seam, in-process: a scripted
driver (:class:`FakeDriver`) stands in for each attempt's ``spark-submit``, and the rest is
real (the registry on a local directory, the job's restart strategy, the control channel).
Each test runs in well under a second."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.plan.rundir import SupervisorSpec
from flinkish_cli.registry.control import ControlChannel
from flinkish_cli.registry.protocol import Cancel, to_request
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.supervisor.exits import DriverExit
from flinkish_cli.runtime.supervisor.supervisor import Supervisor

JOB = "ef" * 16
KILLED = -9  # Spark's JVM killed with SIGKILL
#: A fixed-delay strategy that restarts at once.
RESTART_TWICE = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "2",
    "restart-strategy.fixed-delay.delay": "0 ms",
}


@dataclass
class Attempt:
    """One driver attempt: the state it recorded (None: it never reported), how it exited,
    and whether it sent a cancel request before it died."""

    state: JobState | None
    code: int
    cancel: bool = False


@dataclass
class FakeDriver:
    """The driver's side of the seam: each attempt records what a real driver would in the
    registry (its pid and state), then ends as scripted."""

    registry: JobRegistry
    script: list[Attempt]
    started: list[int] = field(default_factory=list)

    def __call__(self, attempt: int) -> DriverExit:
        self.started.append(attempt)
        step = self.script[attempt]
        if step.state is not None:
            status = self.registry.get(JOB)
            status.pid, status.state, status.heartbeat = 10_000 + attempt, step.state, time.time()
            self.registry.write(status)
        if step.cancel:
            ControlChannel(self.registry, JOB).send(to_request(Cancel()))
        return DriverExit(step.code, reported=step.state is not None)


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: list[Attempt],
    conf: dict[str, str] | None = None,
    restarts_here: bool = True,
) -> tuple[int, JobStatus, FakeDriver]:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.CREATED))
    spec = SupervisorSpec(
        argv=["spark-submit", "driver.py"], env={}, job_id=JOB,
        checkpoint_root=str(tmp_path / "checkpoints"), log_path=str(tmp_path / "job.log"),
        restarts_here=restarts_here,
    )  # fmt: skip
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    supervisor = Supervisor(
        run_dir,
        spec,
        "a=b\n",
        registry,
        Configuration.from_flat(RESTART_TWICE if conf is None else conf),
    )
    driver = FakeDriver(registry, script)
    monkeypatch.setattr(supervisor, "_run_driver", driver)  # the seam: one driver attempt
    code = supervisor.run()
    assert not run_dir.exists(), "the run directory goes with the job"
    return code, registry.get(JOB), driver


def test_a_killed_driver_is_restarted_until_one_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        Attempt(JobState.RUNNING, KILLED),
        Attempt(JobState.RUNNING, KILLED),
        Attempt(JobState.FINISHED, 0),
    ]
    code, status, driver = _run(tmp_path, monkeypatch, script)
    assert (code, status.state, driver.started) == (0, JobState.FINISHED, [0, 1, 2])
    assert status.restarts == 2
    assert len(status.failure_times) == 2


def test_the_strategy_gives_up_and_the_job_fails_with_the_drivers_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [Attempt(JobState.RUNNING, KILLED)] * 3
    code, status, driver = _run(tmp_path, monkeypatch, script)
    assert (code, status.state, driver.started) == (1, JobState.FAILED, [0, 1, 2])
    assert status.failure_cause is not None
    assert status.failure_cause.startswith("Spark's JVM exited with signal 9 (SIGKILL).")
    assert status.restarts == 2


def test_without_a_strategy_the_first_death_fails_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, status, driver = _run(tmp_path, monkeypatch, [Attempt(JobState.RUNNING, KILLED)], {})
    assert (code, status.state, driver.started, status.restarts) == (1, JobState.FAILED, [0], 0)


def test_a_driver_that_never_reported_is_not_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, status, driver = _run(tmp_path, monkeypatch, [Attempt(None, 1)])
    assert (code, status.state, driver.started) == (1, JobState.FAILED, [0])
    assert status.failure_cause is not None and status.failure_cause.endswith("(it never started)")


def test_a_cancel_while_the_driver_is_down_ends_the_job_canceled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, status, driver = _run(
        tmp_path, monkeypatch, [Attempt(JobState.RUNNING, KILLED, cancel=True)]
    )
    assert (code, status.state, driver.started) == (0, JobState.CANCELED, [0])
    assert status.restarts == 0


def test_a_cluster_that_restarts_its_drivers_itself_gets_no_restart_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, status, driver = _run(
        tmp_path, monkeypatch, [Attempt(JobState.RUNNING, KILLED)], restarts_here=False
    )
    assert (code, status.state, driver.started) == (1, JobState.FAILED, [0])
    assert status.failure_cause is not None
    assert status.failure_cause.endswith("(the cluster gave up)")
