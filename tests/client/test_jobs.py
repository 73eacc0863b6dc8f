"""The job client as every front end uses it: typed commands reach the job's driver, typed
results come back, and what cannot be asked is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flinkish_cli.client.base import savepoint_target
from flinkish_cli.client.jobs import JobClient
from flinkish_cli.config import load_configuration
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.registry.protocol import (
    StopWithSavepoint,
    TriggerCheckpoint,
    TriggerSavepoint,
    command_of,
)
from flinkish_cli.registry.status import JobState
from tests.fixtures.fake_driver import BATCHES, FakeDriver

JOB = "3f2a9c0d1e4b5a6978c1d2e3f4a5b6c7"


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JobClient:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(
        f"execution.checkpointing.dir: {tmp_path / 'cp'}\n"
        f"execution.checkpointing.savepoint-dir: {tmp_path / 'sp'}\n"
    )
    monkeypatch.chdir(tmp_path)
    return JobClient(load_configuration(conf_dir=str(conf)))


@pytest.fixture
def driver(client: JobClient) -> Iterator[FakeDriver]:
    running = FakeDriver(client.registry, JOB)
    yield running
    running.close()


def test_a_savepoint_is_a_typed_request_and_its_path_comes_back(
    client: JobClient, driver: FakeDriver, tmp_path: Path
) -> None:
    path = client.savepoint(JOB, "relative/sp")
    [request] = driver.requests
    expected = TriggerSavepoint(str(tmp_path / "relative" / "sp"), explicit_target=True)
    assert command_of(request) == expected
    assert path.startswith(str(tmp_path / "relative" / "sp" / "savepoint-3f2a9c-"))
    assert Path(path).is_dir()


def test_a_checkpoint_answers_flinks_checkpoint_id(client: JobClient, driver: FakeDriver) -> None:
    done = client.checkpoint(JOB)
    assert command_of(driver.requests[0]) == TriggerCheckpoint()
    assert done.batches == BATCHES and done.checkpoint_id == max(BATCHES.values()) + 1


def test_stop_with_a_savepoint_ends_the_job_finished(
    client: JobClient, driver: FakeDriver, tmp_path: Path
) -> None:
    outcome = client.stop(JOB, None, drain=True)
    assert command_of(driver.requests[0]) == StopWithSavepoint(str(tmp_path / "sp"), drain=True)
    assert outcome.state is JobState.FINISHED and outcome.ended_as(JobState.FINISHED) is None


def test_a_trigger_answered_as_its_job_ends_is_read_as_answered(
    client: JobClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A driver answers a stop, then records its end. A poll that finds no answer yet and then
    finds the job ended reads the answer again, rather than reporting that the job ended
    before answering (a race a registry on S3, with its slower reads, made visible)."""
    driver = FakeDriver(client.registry, JOB, answer=False)
    trigger = client.stop_detached(JOB, None, drain=False)
    find = client.registry.find

    def the_driver_answers_and_ends_meanwhile(job_id: str):
        driver.answer_pending()
        return find(job_id)

    monkeypatch.setattr(client.registry, "find", the_driver_answers_and_ends_meanwhile)
    result = client.trigger_result(JOB, trigger)
    assert result is not None and result.done and result.ok, result
    assert result.result["path"].startswith(str(tmp_path / "sp" / "savepoint-3f2a9c-"))
    assert client.registry.get(JOB).state is JobState.FINISHED


def test_cancel_returns_the_final_status(client: JobClient, driver: FakeDriver) -> None:
    assert client.cancel(JOB).effective_state() is JobState.CANCELED
    with pytest.raises(JobError, match=f"Cannot cancel job {JOB}: it is CANCELED"):
        client.cancel(JOB)  # refused before anything is sent
    assert len(driver.requests) == 1


def test_listing_reads_the_jobs_without_asking_them(client: JobClient, driver: FakeDriver) -> None:
    jobs, unreadable = client.list_jobs()
    assert [job.job_id for job in jobs] == [JOB] and unreadable == []
    assert driver.requests == []


def test_savepoint_directories_are_resolved_or_refused(
    client: JobClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = client.config
    assert savepoint_target(config, None) == str(tmp_path / "sp")
    assert savepoint_target(config, "file:rel/") == str(tmp_path / "rel")
    assert savepoint_target(config, "s3://bucket/sp/") == "s3://bucket/sp"
    with pytest.raises(UsageError, match="gs://b/sp is not on a supported storage"):
        savepoint_target(config, "gs://b/sp")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    bare = load_configuration(conf_dir=str(_empty_conf(tmp_path)))  # Flink's default applies
    assert savepoint_target(bare, None) == str(tmp_path / "home" / ".flinkish" / "savepoints")


def _empty_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "bare"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(f"execution.checkpointing.dir: {tmp_path / 'cp'}\n")
    return conf
