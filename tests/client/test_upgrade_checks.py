"""What ``flinkish upgrade`` refuses before it touches the old job: a state the upgrade mode
cannot start from, missing or unretained checkpoints, a savepoint directory it cannot write.
Each refusal says what to do instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flinkish_cli.client.upgrade.checks import check_state, check_writable, fallback_allowed
from flinkish_cli.client.upgrade.outcome import UpgradeMode
from flinkish_cli.config import Configuration
from flinkish_cli.errors import JobError, SavepointError
from flinkish_cli.registry import program
from flinkish_cli.registry.program import ProgramRecord
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry

JOB = "3f2a9c1e5b7d4f60a8e1c2b3d4e5f607"
FALLBACK = {"flinkish.upgrade.last-state-fallback.enabled": "true"}


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    return JobRegistry.open(str(tmp_path / "cp"))


def _old(state: JobState, queries: bool = True) -> JobStatus:
    status = JobStatus(job_id=JOB, name="counts", state=state, pid=42)
    if queries:
        status.queries["counts"] = QueryStatus(name="counts", checkpoint=f"/cp/{JOB}/counts")
    return status


@pytest.mark.parametrize(
    ("state", "says", "hint"),
    [
        (JobState.FINISHED, "it is FINISHED", "flinkish run -s <savepoint or"),
        (JobState.CANCELED, "it is CANCELED", "flinkish run -s <savepoint or"),
        (JobState.CREATED, "it is CREATED", "Wait until it runs"),
        (JobState.CANCELLING, "it is CANCELLING", "Wait until it runs"),
    ],
)
def test_a_job_that_ended_or_has_not_run_is_not_upgraded(
    registry: JobRegistry, state: JobState, says: str, hint: str
) -> None:
    with pytest.raises(JobError, match=says) as refused:
        check_state(registry, Configuration.from_flat({}), _old(state), UpgradeMode.STATELESS)
    assert hint in str(refused.value.hint)


def test_a_savepoint_needs_a_running_job_unless_it_may_fall_back(registry: JobRegistry) -> None:
    failed = _old(JobState.FAILED)
    assert not fallback_allowed(Configuration.from_flat({}))
    with pytest.raises(JobError, match="only a running job takes one"):
        check_state(registry, Configuration.from_flat({}), failed, UpgradeMode.SAVEPOINT)
    assert fallback_allowed(Configuration.from_flat(FALLBACK))
    check_state(registry, Configuration.from_flat(FALLBACK), failed, UpgradeMode.SAVEPOINT)
    check_state(registry, Configuration.from_flat({}), failed, UpgradeMode.STATELESS)


def test_the_last_state_needs_checkpoints(registry: JobRegistry) -> None:
    config = Configuration.from_flat(FALLBACK)
    empty = _old(JobState.FAILED, queries=False)
    for mode in (UpgradeMode.LAST_STATE, UpgradeMode.SAVEPOINT):  # the fallback's too
        with pytest.raises(JobError, match="it has no checkpoints") as refused:
            check_state(registry, config, empty, mode)
        assert "--upgrade-mode stateless" in str(refused.value.hint)


def test_the_last_state_of_a_live_job_needs_a_cancel_that_keeps_it(
    registry: JobRegistry, tmp_path: Path
) -> None:
    config = Configuration.from_flat({})
    running = _old(JobState.RUNNING)
    check_state(registry, config, running, UpgradeMode.LAST_STATE)  # no kept program: default
    retention = "execution.checkpointing.externalized-checkpoint-retention"
    record = ProgramRecord(kind="module", target="jobs.counts")
    record.conf = {retention: "DELETE_ON_CANCELLATION"}
    assert program.keep(registry, JOB, record, [])
    with pytest.raises(JobError, match="DELETE_ON_CANCELLATION, so cancelling it deletes"):
        check_state(registry, config, running, UpgradeMode.LAST_STATE)
    check_state(registry, config, _old(JobState.FAILED), UpgradeMode.LAST_STATE)  # ended


def test_a_savepoint_directory_is_writable_or_refused(tmp_path: Path) -> None:
    config = Configuration.from_flat({})
    check_writable(config, str(tmp_path / "not" / "yet" / "there"))  # its parent is
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    with pytest.raises(SavepointError, match="is not a directory"):
        check_writable(config, str(a_file / "sp"))
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(SavepointError, match="is not writable"):
            check_writable(config, str(locked / "sp"))
