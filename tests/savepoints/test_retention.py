"""Savepoint retention on real savepoints: the oldest beyond the count or the age go, through
the same safe path as ``savepoint -d``; the newest, those in a directory the user named, and
anything that is not a savepoint stay."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from flinkish_cli.registry.history import (
    SavepointHistory,
    SavepointRecord,
    SavepointState,
    Trigger,
)
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.savepoints.create import take_savepoint
from flinkish_cli.savepoints.retention import Retention, apply_retention
from flinkish_cli.storage import LocalStorage
from tests.savepoints.checkpoints import fake_checkpoint

JOB = "ef" * 16


def _setup(tmp_path: Path) -> tuple[SavepointHistory, LocalStorage]:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job"))
    return SavepointHistory(registry), LocalStorage(str(tmp_path))


def _take(
    history: SavepointHistory, storage: LocalStorage, tmp_path: Path, at: float, **more
) -> SavepointRecord:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    path = take_savepoint(
        storage, {"q": str(checkpoint)}, storage, str(tmp_path / "sp"), JOB, "job", "4.3.0"
    )
    record = SavepointRecord(JOB, Trigger.PERIODIC, SavepointState.COMPLETED, path, time=at, **more)
    history.record(record)
    return record


def _states(history: SavepointHistory) -> list[str]:
    return [r.state.value for r in history.of_job(JOB)]  # newest first


def test_the_oldest_beyond_the_count_are_disposed(tmp_path: Path) -> None:
    history, storage = _setup(tmp_path)
    taken = [_take(history, storage, tmp_path, 1000.0 + n) for n in range(4)]
    disposed = apply_retention(history, JOB, Retention(max_count=2), _local, 1010.0)
    assert disposed == [taken[1].path, taken[0].path]
    assert _states(history) == ["COMPLETED", "COMPLETED", "DISPOSED", "DISPOSED"]
    assert [Path(r.path).exists() for r in taken] == [False, False, True, True]
    assert apply_retention(history, JOB, Retention(max_count=2), _local, 1010.0) == []


def test_old_ones_go_but_the_newest_stays_whatever_its_age(tmp_path: Path) -> None:
    history, storage = _setup(tmp_path)
    taken = [_take(history, storage, tmp_path, 1000.0 + n) for n in range(2)]
    retention = Retention(max_count=10, max_age=timedelta(hours=1))
    disposed = apply_retention(history, JOB, retention, _local, 1000.0 + 86400)
    assert disposed == [taken[0].path]
    assert Path(taken[1].path).exists() and _states(history) == ["COMPLETED", "DISPOSED"]


def test_a_savepoint_in_a_named_directory_stays_unless_the_key_says_so(tmp_path: Path) -> None:
    history, storage = _setup(tmp_path)
    named = _take(history, storage, tmp_path, 1000.0, explicit_target=True)
    _take(history, storage, tmp_path, 1001.0)
    assert apply_retention(history, JOB, Retention(max_count=1), _local, 1002.0) == []
    assert Path(named.path).exists()
    everything = Retention(max_count=1, dispose_named=True)
    assert apply_retention(history, JOB, everything, _local, 1002.0) == [named.path]


def test_what_is_not_a_savepoint_is_never_disposed(tmp_path: Path) -> None:
    history, storage = _setup(tmp_path)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_text("keep me")
    history.record(
        SavepointRecord(JOB, Trigger.MANUAL, SavepointState.COMPLETED, str(precious), time=1.0)
    )
    _take(history, storage, tmp_path, 2.0)
    assert apply_retention(history, JOB, Retention(max_count=1), _local, 3.0) == []
    assert (precious / "data").read_text() == "keep me"
    assert _states(history) == ["COMPLETED", "COMPLETED"]  # the refusal left it recorded


def _local(path: str) -> LocalStorage:
    return LocalStorage(path)


def test_what_killed_drivers_left_incomplete_goes_once_left_alone_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A savepoint directory of the job (or of a job it replaced) with no manifest, quiet
    for ABANDONED_AFTER, is swept; a complete savepoint, a quiet one of another job, a
    recent one and anything not named like a savepoint stay."""
    from flinkish_cli.savepoints.retention import ABANDONED_AFTER, sweep_abandoned

    history, storage = _setup(tmp_path)
    complete = _take(history, storage, tmp_path, 1000.0).path
    directory = tmp_path / "sp"
    now = time.time()

    def leftover(name: str, age: float) -> Path:
        path = directory / name
        (path / "counts" / "state" / "0").mkdir(parents=True)
        (path / "counts" / "state" / "0" / "_metadata").write_text("Spark's, not ours")
        (path / "counts" / "offsets").mkdir()
        for file in path.rglob("*"):
            os.utime(file, (now - age, now - age))
        return path

    ours = leftover(f"savepoint-{JOB[:6]}-{'a' * 12}", ABANDONED_AFTER + 60)
    replaced = leftover(f"savepoint-{'cd' * 3}-{'b' * 12}", ABANDONED_AFTER + 60)
    recent = leftover(f"savepoint-{JOB[:6]}-{'c' * 12}", 30)
    other_job = leftover(f"savepoint-{'12' * 3}-{'d' * 12}", ABANDONED_AFTER + 60)
    not_ours = leftover("my-backup", ABANDONED_AFTER + 60)
    swept = sweep_abandoned(storage, str(directory), [JOB, "cd" * 16], now)
    assert sorted(swept) == sorted([str(ours), str(replaced)])
    assert not ours.exists() and not replaced.exists()
    assert recent.exists() and other_job.exists() and not_ours.exists()
    assert Path(complete, "_metadata").exists()  # complete: never swept, whatever its age
    assert sweep_abandoned(storage, str(tmp_path / "missing"), [JOB], now) == []
