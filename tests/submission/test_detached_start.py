"""When ``run -d`` returns: once the job runs or has ended, and for a yarn-application once
YARN has accepted its application (its id recorded by the job's supervisor, the job still
CREATED), as Flink's ``run -d -t yarn-application`` does; the record itself
(:meth:`YarnWatch.record_accepted <flinkish_cli.runtime.supervisor.waits.YarnWatch>`) and the
tag the application is found by, and the application of a driver that never reported ended."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.supervisor.waits import YarnWatch
from flinkish_cli.spark import yarn
from flinkish_cli.submission import launcher

JOB = "cd" * 16
APP = "application_1796641210460_0007"


@pytest.mark.parametrize(
    ("state", "app", "accepted", "returns"),
    [
        (JobState.CREATED, None, True, False),  # YARN has not accepted it yet
        (JobState.CREATED, APP, True, True),  # accepted: run -d -t yarn-application returns
        (JobState.CREATED, APP, False, False),  # upgrade waits for RUNNING all the same
        (JobState.RUNNING, None, False, True),
        (JobState.FAILED, None, True, True),
    ],
)
def test_a_detached_start_returns_when_the_job_runs_ended_or_yarn_accepted_it(
    state: JobState, app: str | None, accepted: bool, returns: bool
) -> None:
    status = JobStatus(job_id=JOB, name="job", state=state, yarn_application=app)
    assert launcher.started(status, accepted) is returns
    assert launcher.started(None, accepted) is False


def _sleeper(tmp_path: Path) -> launcher.Launched:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    return launcher.Launched(process=process, log_path=tmp_path / "job.log")


def test_waiting_for_a_detached_yarn_application_ends_at_its_acceptance(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job", yarn_application=APP))
    launched = _sleeper(tmp_path)
    try:
        status = launcher.wait_until_running(registry, JOB, launched, timeout=30, accepted=True)
        assert (status.state, status.yarn_application) == (JobState.CREATED, APP)
        # without an accepted application the wait goes on until RUNNING (here: its timeout)
        registry.write(JobStatus(job_id=JOB, name="job"))
        with pytest.raises(JobError, match="did not reach RUNNING"):
            launcher.wait_until_running(registry, JOB, launched, timeout=0.5, accepted=True)
    finally:
        launched.process.kill()
        launched.process.wait()


def test_the_supervisor_records_the_accepted_application_until_a_driver_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    created = JobStatus(job_id=JOB, name="job", heartbeat=0.0)
    registry.write(created)
    asked: list[str | None] = []

    def tagged(job_id: str, known: str | None = None) -> str | None:
        asked.append(known)
        return APP

    monkeypatch.setattr(yarn, "tagged_application", tagged)
    YarnWatch(yarn_restarts=True).record_accepted(registry, created, reported=False)
    recorded = registry.get(JOB)
    assert (recorded.state, recorded.yarn_application) == (JobState.CREATED, APP)
    assert recorded.supervisor_pid == os.getpid() and recorded.heartbeat > 0  # not stale

    # a driver that reported meanwhile keeps its own status; a reported one is not looked up
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.RUNNING, pid=4242))
    YarnWatch(yarn_restarts=True).record_accepted(registry, created, reported=False)
    YarnWatch(yarn_restarts=True).record_accepted(registry, created, reported=True)
    YarnWatch(yarn_restarts=False).record_accepted(registry, created, reported=False)
    assert registry.get(JOB).yarn_application is None and len(asked) == 2


def test_a_job_s_applications_are_found_by_its_tag() -> None:
    assert yarn.job_tag("AB" * 16) == f"flinkish-job-{'ab' * 16}"
    report = {
        "apps": {
            "app": [
                {"id": "application_1796641210460_0009"},
                {"id": "application_1796641210460_0010"},  # the newest: a rescale's next
                {"id": "application_1796641210460_0002"},
            ]
        }
    }
    assert yarn.newest_application(report) == "application_1796641210460_0010"
    assert yarn.newest_application(report, "application_1796641210460_0010") is None
    assert yarn.newest_application({"apps": None}) is None


def test_a_driver_that_never_reports_takes_its_accepted_application_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The supervisor gives up on a driver that did not report in time: the application YARN
    accepted for it is ended too (killing spark-submit does not end it)."""
    ended: list[str] = []

    def kill(app_id: str) -> str:
        ended.append(app_id)
        return "KILLED"

    monkeypatch.setattr(yarn, "kill", kill)
    accepted = JobStatus(job_id=JOB, name="job", yarn_application=APP)
    YarnWatch(yarn_restarts=True).end_unstarted(accepted)
    YarnWatch(yarn_restarts=True).end_unstarted(JobStatus(job_id=JOB, name="job"))
    YarnWatch(yarn_restarts=False).end_unstarted(accepted)  # a client-mode target's
    assert ended == [APP]
