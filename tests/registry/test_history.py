"""The savepoint history: one record per savepoint, newest first, every job or one, a
disposed savepoint marked so, and a damaged record never breaks the listing."""

from __future__ import annotations

from pathlib import Path

from flinkish_cli.registry.history import (
    SavepointHistory,
    SavepointRecord,
    SavepointState,
    Trigger,
)
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry

A, B = "a" * 32, "b" * 32


def _history(tmp_path: Path) -> SavepointHistory:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    for job_id in (A, B):
        registry.write(JobStatus(job_id=job_id, name=f"job-{job_id[0]}"))
    return SavepointHistory(registry)


def _record(job_id: str, trigger: Trigger, path: str, **more) -> SavepointRecord:
    return SavepointRecord(
        job_id, trigger, more.pop("state", SavepointState.COMPLETED), path, **more
    )


def test_records_are_listed_newest_first_per_job_and_for_all(tmp_path: Path) -> None:
    history = _history(tmp_path)
    first = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000001", size=10)
    other = _record(B, Trigger.PERIODIC, "/sp/savepoint-bbbbbb-000000000001")
    failed = _record(A, Trigger.STOP, "/sp", state=SavepointState.FAILED, cause="disk full")
    for record in (first, other, failed):
        history.record(record)
    assert [r.record_id for r in history.of_job(A)] == [failed.record_id, first.record_id]
    assert [r.record_id for r in history.all()] == [
        failed.record_id,
        other.record_id,
        first.record_id,
    ]
    assert history.of_job(A)[0].cause == "disk full"
    assert history.of_job(A)[1].summary() == {
        "job_id": A,
        "trigger": "MANUAL",
        "time": int(first.time * 1000),
        "path": "/sp/savepoint-aaaaaa-000000000001",
        "state": "COMPLETED",
        "size": 10,
        "batches": {},
        "cause": None,
        "explicit_target": False,
        "record_id": first.record_id,
    }


def test_a_disposed_savepoint_is_marked_once(tmp_path: Path) -> None:
    history = _history(tmp_path)
    path = "/sp/savepoint-aaaaaa-000000000002"
    history.record(_record(A, Trigger.STOP, path))
    assert history.mark_disposed(A, path + "/")
    assert [r.state for r in history.of_job(A)] == [SavepointState.DISPOSED]
    assert not history.mark_disposed(A, path), "already disposed"
    assert not history.mark_disposed(A, "/sp/savepoint-aaaaaa-000000000009")


def test_a_damaged_record_is_skipped(tmp_path: Path) -> None:
    history = _history(tmp_path)
    good = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000003")
    history.record(good)
    directory = Path(history.registry.meta_dir(A)) / "savepoints"
    (directory / "00000000000000000001-damaged.json").write_text("{not json")
    (directory / "00000000000000000002-foreign.json").write_text('{"trigger": "SOMETIMES"}')
    assert [r.record_id for r in history.of_job(A)] == [good.record_id]


def test_a_job_without_savepoints_has_an_empty_history(tmp_path: Path) -> None:
    assert _history(tmp_path).of_job(B) == []


def test_the_history_follows_a_job_across_its_upgrades(tmp_path: Path) -> None:
    history = _history(tmp_path)
    registry = history.registry
    c, d = "c" * 32, "d" * 32
    registry.write(JobStatus(job_id=c, name="job-c", upgraded_from=A))
    registry.write(JobStatus(job_id=d, name="job-d", upgraded_from=c, rolled_back=True))
    older = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000001")
    upgrade = _record(A, Trigger.UPGRADE, "/sp/savepoint-aaaaaa-000000000002")
    unrelated = _record(B, Trigger.MANUAL, "/sp/savepoint-bbbbbb-000000000001")
    newest = _record(d, Trigger.MANUAL, "/sp/savepoint-dddddd-000000000001")
    for record in (older, upgrade, unrelated, newest):
        history.record(record)
    assert [r.path for r in history.of_lineage(d)] == [newest.path, upgrade.path, older.path]
    assert [r.path for r in history.of_lineage(A)] == [upgrade.path, older.path]


def test_a_loop_of_damaged_links_ends(tmp_path: Path) -> None:
    history = _history(tmp_path)
    registry = history.registry
    registry.write(JobStatus(job_id=A, name="job-a", upgraded_from=B))
    registry.write(JobStatus(job_id=B, name="job-b", upgraded_from=A))
    history.record(_record(A, Trigger.UPGRADE, "/sp/savepoint-aaaaaa-000000000001"))
    assert len(history.of_lineage(A)) == 1


def test_the_last_savepoint_is_the_newest_completed_record(tmp_path: Path) -> None:
    history = _history(tmp_path)
    assert history.last_completed(A) is None, "no savepoint yet"
    older = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000004")
    newer = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000005")
    history.record(older)
    history.record(newer)
    history.record(_record(B, Trigger.MANUAL, "/sp/savepoint-bbbbbb-000000000006"))
    assert history.last_completed(A) == newer
    history.mark_disposed(A, newer.path)
    history.record(_record(A, Trigger.STOP, "/sp", state=SavepointState.FAILED, cause="full"))
    assert history.last_completed(A) == older, "never a disposed or failed one"


def test_the_last_savepoint_costs_one_listing_and_the_reads_down_to_it(tmp_path: Path) -> None:
    """A job list asks every job for its last savepoint: one listing of its records, then
    the newest records only, down to the first COMPLETED one (not one read per record)."""
    history = _history(tmp_path)
    for number in range(5):
        history.record(_record(A, Trigger.PERIODIC, f"/sp/savepoint-aaaaaa-00000000001{number}"))
    newest_completed = history.of_job(A)[0]
    history.record(_record(A, Trigger.STOP, "/sp", state=SavepointState.FAILED, cause="full"))
    storage = history.registry.storage
    calls: list[str] = []
    for name in ("list", "read_text"):
        method = getattr(storage, name)
        setattr(storage, name, lambda path, _m=method, _n=name: calls.append(_n) or _m(path))
    assert history.last_completed(A) == newest_completed
    assert calls == ["list", "read_text", "read_text"], "the FAILED record, then the newest"
