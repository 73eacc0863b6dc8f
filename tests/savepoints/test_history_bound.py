"""A job that takes savepoints for months keeps a small history: the driver's own savepoint
path (:class:`~flinkish_cli.runtime.queries.snapshots.Snapshots`, as periodic savepoints take them,
without Spark) against a real registry and real savepoints, seen through ``flinkish
savepoint list`` and ``flinkish list`` as a user sees it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from flinkish_cli.cli.main import main
from flinkish_cli.cli.options import VERBOSE
from flinkish_cli.registry.history import (
    SavepointHistory,
    SavepointRecord,
    SavepointState,
    Trigger,
)
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.queries.snapshots import Snapshots
from flinkish_cli.savepoints.retention import Retention
from tests.savepoints.checkpoints import fake_checkpoint

OLD, JOB = "0a" * 16, "1b" * 16


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JobRegistry:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(
        f"execution.checkpointing.dir: {tmp_path / 'cp'}\n"
        f"execution.checkpointing.savepoint-dir: {tmp_path / 'sp'}\n"
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return JobRegistry.open(str(tmp_path / "cp"))


def _flinkish(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    VERBOSE["on"] = False
    main([*args, "--output", "json"])
    return json.loads(capsys.readouterr().out)


def _snapshots(registry: JobRegistry, job_id: str, checkpoint: Path) -> Snapshots:
    """The savepoints of a driver whose only query checkpoints into ``checkpoint``."""
    plan = SimpleNamespace(job_id=job_id, name="job", attempt=0)
    queries = SimpleNamespace(
        checkpoint_dirs=lambda: {"q": str(checkpoint)}, identities={}, handles={}
    )
    return Snapshots(plan, registry, None, queries, None, Retention(max_count=3))  # type: ignore[arg-type]


def _files(registry: JobRegistry, job_id: str) -> list[str]:
    return sorted(p.name for p in (Path(registry.meta_dir(job_id)) / "savepoints").iterdir())


def test_a_job_taking_savepoints_for_months_keeps_a_bounded_history(
    registry: JobRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The measured case: periodic savepoints and a history max-count of 3 left 41 records
    after 20 minutes. Now 3 COMPLETED (retention) and 3 DISPOSED or FAILED ones stay."""
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.FINISHED, end_time=1.0))
    checkpoint = fake_checkpoint(tmp_path / "cp" / JOB / "q", committed=1)
    snapshots = _snapshots(registry, JOB, checkpoint)
    paths = [snapshots.take_savepoint(str(tmp_path / "sp"), Trigger.PERIODIC) for _ in range(41)]
    listed = _flinkish(capsys, "savepoint", "list", JOB)["savepoints"]
    assert [(r["path"], r["state"]) for r in listed] == [
        *((p, "COMPLETED") for p in paths[:-4:-1]),
        *((p, "DISPOSED") for p in paths[-4:-7:-1]),
    ]
    assert len(_files(registry, JOB)) == 6
    assert sorted(p.name for p in (tmp_path / "sp").iterdir()) == sorted(
        Path(p).name for p in paths[-3:]
    )
    (jobs,) = _flinkish(capsys, "list", "-a")["jobs"]
    assert jobs["last-savepoint"]["path"] == paths[-1]

    broken = _snapshots(registry, JOB, tmp_path / "no-such-checkpoint")
    for _ in range(5):  # a savepoint that keeps failing (a full disk, say)
        with pytest.raises(Exception):  # noqa: B017 - whatever the failure is
            broken.take_savepoint(str(tmp_path / "sp"), Trigger.PERIODIC)
    listed = _flinkish(capsys, "savepoint", "list", JOB)["savepoints"]
    assert [r["state"] for r in listed] == ["FAILED"] * 3 + ["COMPLETED"] * 3
    assert len(_files(registry, JOB)) == 6


def test_an_upgraded_job_prunes_the_history_it_inherited_from_an_older_flinkish(
    registry: JobRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job it replaced kept its records as an older flinkish wrote them (one
    ``<id>.json`` each, whatever the state): they are still listed, counted as the new
    job's, pruned or rewritten, and ``savepoint list`` still follows the job back."""
    registry.write(JobStatus(job_id=OLD, name="job", state=JobState.FINISHED, upgraded_to=JOB))
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.FINISHED, upgraded_from=OLD))
    old_dir = Path(registry.meta_dir(OLD)) / "savepoints"
    old_dir.mkdir(parents=True)
    older: list[SavepointRecord] = []
    for number in range(10):
        state = SavepointState.FAILED if number == 9 else SavepointState.DISPOSED
        older.append(SavepointRecord(OLD, Trigger.PERIODIC, state, f"/sp/gone-{number}"))
    older.append(SavepointRecord(OLD, Trigger.UPGRADE, SavepointState.COMPLETED, "/sp/upgrade"))
    for record in older:
        (old_dir / f"{record.record_id}.json").write_text(record.to_json())
    before = _flinkish(capsys, "savepoint", "list", JOB)["savepoints"]
    assert [r["record_id"] for r in before] == [r.record_id for r in reversed(older)]

    checkpoint = fake_checkpoint(tmp_path / "cp" / JOB / "q", committed=1)
    newest = _snapshots(registry, JOB, checkpoint).take_savepoint(str(tmp_path / "sp"))
    listed = _flinkish(capsys, "savepoint", "list", JOB)["savepoints"]
    assert [(r["path"], r["state"]) for r in listed] == [
        (newest, "COMPLETED"),
        (older[-1].path, "COMPLETED"),  # retention keeps the newest 3 of the lineage
        (older[-2].path, "FAILED"),
        (older[-3].path, "DISPOSED"),
        (older[-4].path, "DISPOSED"),
    ]
    assert _files(registry, OLD) == sorted(
        SavepointHistory(registry).of_job(OLD)[n].file_name for n in range(4)
    ), "the older files kept are rewritten, the others deleted"
    assert [r["path"] for r in _flinkish(capsys, "savepoint", "list", OLD)["savepoints"]] == [
        r["path"] for r in listed[1:]
    ]


def test_the_next_savepoint_sweeps_what_a_killed_driver_left(
    registry: JobRegistry, tmp_path: Path
) -> None:
    """A killed driver's incomplete savepoint (no manifest, quiet for long) goes with the
    job's next savepoint; one a writer may still be inside (recent) stays."""
    import os
    import time

    from flinkish_cli.savepoints.retention import ABANDONED_AFTER

    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.RUNNING))
    checkpoint = fake_checkpoint(tmp_path / "cp" / JOB / "q", committed=1)
    directory = tmp_path / "sp"
    left, recent = (
        directory / f"savepoint-{JOB[:6]}-{'e' * 12}",
        directory / f"savepoint-{JOB[:6]}-{'f' * 12}",
    )
    for path, age in ((left, ABANDONED_AFTER + 1), (recent, 5.0)):
        (path / "q" / "offsets").mkdir(parents=True)
        (path / "q" / "offsets" / "0").write_text("v1\n")
        for item in (path, *path.rglob("*")):
            os.utime(item, (time.time() - age, time.time() - age))
    taken = _snapshots(registry, JOB, checkpoint).take_savepoint(str(directory))
    assert not left.exists() and recent.exists() and Path(taken, "_metadata").exists()
