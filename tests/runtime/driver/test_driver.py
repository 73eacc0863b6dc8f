"""The driver's own bookkeeping: a new YARN attempt of the job's application."""

from __future__ import annotations

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.runtime.driver.driver import record_yarn_attempt

APP = "application_1796641210460_0002"
JOB = "a" * 32


def _status(state: JobState = JobState.RUNNING) -> JobStatus:
    return JobStatus(job_id=JOB, name="job", state=state, yarn_application=APP)


def test_the_first_attempt_records_only_its_number() -> None:
    status = _status(JobState.CREATED)
    record_yarn_attempt(status, 1, Configuration())
    assert (status.yarn_attempt, status.restarts, status.exceptions) == (1, 0, [])
    assert status.state is JobState.CREATED


def test_a_second_attempt_records_why_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.delenv("CONTAINER_ID", raising=False)
    status = _status()
    record_yarn_attempt(status, 1, Configuration())
    record_yarn_attempt(status, 2, Configuration())
    cause = (
        f"The driver of YARN application attempt 1 of {APP} ended (its ApplicationMaster "
        "container was lost); YARN started attempt 2."
    )  # without a Hadoop configuration, no diagnostics
    assert [e["cause"] for e in status.exceptions] == [cause]
    assert status.exceptions[0]["attempt"] == 0
    assert (status.restarts, status.failure_cause, status.state) == (
        1,
        cause,
        JobState.RESTARTING,
    )
    record_yarn_attempt(status, 2, Configuration())  # the same attempt again: nothing new
    assert (len(status.exceptions), status.restarts) == (1, 1)


def test_a_driver_outside_yarn_records_nothing() -> None:
    status = JobStatus(job_id=JOB, name="job")
    record_yarn_attempt(status, None, Configuration())
    assert status.yarn_attempt is None and status.exceptions == []
