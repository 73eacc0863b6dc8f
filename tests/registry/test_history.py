"""The savepoint history: one record per savepoint, newest first, every job or one, a
disposed savepoint marked so, a damaged record never breaks the listing, an older
flinkish's files still read, and the history bounded (pruning) and cheap to read (its file
names say what a listing needs)."""

from __future__ import annotations

import time
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


def _count_calls(history: SavepointHistory) -> list[str]:
    """The storage calls ``history`` makes from now on, by method name."""
    storage = history.registry.storage
    calls: list[str] = []
    for name in ("list", "read_text", "write_text", "delete"):
        method = getattr(storage, name)
        setattr(storage, name, lambda *a, _m=method, _n=name: calls.append(_n) or _m(*a))
    return calls


def test_the_last_savepoint_costs_one_listing_and_one_read(tmp_path: Path) -> None:
    """A job list asks every job for its last savepoint: one listing of its records, then
    one read, however many FAILED or DISPOSED records are newer (their names say so)."""
    history = _history(tmp_path)
    for number in range(5):
        history.record(_record(A, Trigger.PERIODIC, f"/sp/savepoint-aaaaaa-00000000001{number}"))
    newest_completed = history.of_job(A)[0]
    for _ in range(3):
        history.record(_record(A, Trigger.STOP, "/sp", state=SavepointState.FAILED, cause="full"))
    history.record(_record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000020"))
    history.mark_disposed(A, "/sp/savepoint-aaaaaa-000000000020")
    calls = _count_calls(history)
    assert history.last_completed(A) == newest_completed
    assert calls == ["list", "read_text"]


def test_a_record_file_names_its_trigger_and_state(tmp_path: Path) -> None:
    history = _history(tmp_path)
    record = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000001")
    history.record(record)
    directory = Path(history.registry.meta_dir(A)) / "savepoints"
    assert [p.name for p in directory.iterdir()] == [f"{record.record_id}.PERIODIC.COMPLETED.json"]
    history.mark_disposed(A, record.path)
    assert [p.name for p in directory.iterdir()] == [f"{record.record_id}.PERIODIC.DISPOSED.json"]


def test_the_last_periodic_savepoint_costs_one_listing_and_one_read(tmp_path: Path) -> None:
    history = _history(tmp_path)
    history.record(_record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000001", time=5.0))
    for _ in range(4):
        history.record(_record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000002", time=9.0))
    calls = _count_calls(history)
    assert history.last_time(A, Trigger.PERIODIC) == 5.0
    assert calls == ["list", "read_text"]
    assert history.last_time(B, Trigger.PERIODIC) is None


def _legacy(history: SavepointHistory, record: SavepointRecord) -> Path:
    """Write ``record`` as flinkish wrote records before their names said their state."""
    directory = Path(history.registry.meta_dir(record.job_id)) / "savepoints"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record.record_id}.json"
    path.write_text(record.to_json())
    return path


def test_an_older_flinkishs_records_are_read_marked_and_pruned(tmp_path: Path) -> None:
    history = _history(tmp_path)
    kept = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000001")
    gone = [
        _record(A, Trigger.PERIODIC, f"/sp/savepoint-aaaaaa-00000000000{n}", state=state)
        for n, state in ((2, SavepointState.DISPOSED), (3, SavepointState.FAILED))
    ]
    marked = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000004")
    newest = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000005")
    files = [_legacy(history, r) for r in (kept, *gone, marked)]
    history.record(newest)
    assert [r.record_id for r in history.of_job(A)] == [
        r.record_id for r in (newest, marked, *reversed(gone), kept)
    ]
    assert history.mark_disposed(A, marked.path)
    assert not files[-1].exists(), "rewritten under its new name"
    assert history.last_completed(A) == newest
    assert history.prune(A, max_count=1, max_age=86400.0, now=time.time()) == 2
    assert [(r.path, r.state) for r in history.of_job(A)] == [
        (newest.path, SavepointState.COMPLETED),
        (marked.path, SavepointState.DISPOSED),
        (kept.path, SavepointState.COMPLETED),
    ]
    directory = Path(history.registry.meta_dir(A)) / "savepoints"
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        r.file_name for r in history.of_job(A)
    ), "the older files kept are rewritten under the current names"


def test_pruning_keeps_the_newest_final_records_within_the_age(tmp_path: Path) -> None:
    """Of DISPOSED and FAILED records, the newest max-count made within max-age stay; a
    COMPLETED record stays whatever its age or number (its savepoint is retention's)."""
    history = _history(tmp_path)
    states = [SavepointState.COMPLETED, SavepointState.DISPOSED, SavepointState.FAILED] * 4
    records = [_record(A, Trigger.PERIODIC, f"/sp/{n}", state=s) for n, s in enumerate(states)]
    for record in records:
        history.record(record)
    history.record(_record(B, Trigger.PERIODIC, "/sp/b", state=SavepointState.FAILED))
    final = [r for r in reversed(records) if r.state.final]  # newest first
    calls = _count_calls(history)
    assert history.prune(A, max_count=3, max_age=3600.0, now=time.time()) == 5
    assert calls == ["read_text", "list"] + ["delete"] * 5, "its status, a listing, no record"
    left = history.of_job(A)
    assert [r.record_id for r in left if r.state.final] == [r.record_id for r in final[:3]]
    assert len([r for r in left if not r.state.final]) == 4
    assert history.prune(A, max_count=3, max_age=3600.0, now=time.time() + 7200) == 3
    assert [r.state for r in history.of_job(A)] == [SavepointState.COMPLETED] * 4
    assert len(history.of_job(B)) == 1, "another job's history is its own"


def test_pruning_follows_the_lineage_and_leaves_it_intact(tmp_path: Path) -> None:
    """A job upgraded from another counts the records of the jobs it replaced as its own;
    the statuses that link them stay, so the history still follows the job back."""
    history = _history(tmp_path)
    registry = history.registry
    c = "c" * 32
    registry.write(JobStatus(job_id=A, name="job-a", upgraded_to=c))
    registry.write(JobStatus(job_id=c, name="job-c", upgraded_from=A))
    disposed = SavepointState.DISPOSED
    oldest = _record(A, Trigger.PERIODIC, "/sp/a1", state=disposed)
    upgrade = _record(A, Trigger.UPGRADE, "/sp/a2")
    older = _record(A, Trigger.PERIODIC, "/sp/a3", state=disposed)
    newer = [_record(c, Trigger.PERIODIC, f"/sp/c{n}", state=disposed) for n in range(2)]
    unrelated = _record(B, Trigger.PERIODIC, "/sp/b", state=disposed)
    for record in (oldest, upgrade, older, *newer, unrelated):
        history.record(record)
    assert history.prune(c, max_count=3, max_age=3600.0, now=time.time()) == 1
    assert [r.path for r in history.of_lineage(c)] == ["/sp/c1", "/sp/c0", "/sp/a3", "/sp/a2"]
    assert [r.path for r in history.of_lineage(A)] == ["/sp/a3", "/sp/a2"]
    assert history.of_job(B) == [unrelated]


def test_a_reader_skips_a_record_that_vanishes_under_it(tmp_path: Path) -> None:
    """Pruning (or a record's next state) may delete a file between a reader's listing and
    its read: the reader skips the record, and never takes a file that was superseded."""
    history = _history(tmp_path)
    first = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000001")
    second = _record(A, Trigger.PERIODIC, "/sp/savepoint-aaaaaa-000000000002")
    for record in (first, second):
        history.record(record)
    storage = history.registry.storage
    listing = storage.list

    def list_then_dispose(path: str) -> list:
        found = listing(path)
        storage.list = listing  # type: ignore[method-assign]
        history.mark_disposed(A, second.path)  # between the listing and the read
        return found

    storage.list = list_then_dispose  # type: ignore[method-assign]
    assert [r.record_id for r in history.of_job(A)] == [first.record_id]
    storage.list = list_then_dispose  # type: ignore[method-assign]
    assert history.last_completed(A) == first, "the second is disposed meanwhile"
    half_done = Path(history.registry.meta_dir(A)) / "savepoints" / first.file_name
    history.mark_disposed(A, first.path)
    half_done.write_text(first.to_json())  # as if the COMPLETED file's deletion was cut short
    assert [r.state for r in history.of_job(A)] == [SavepointState.DISPOSED] * 2
    assert history.last_completed(A) is None
    assert history.prune(A, max_count=5, max_age=3600.0, now=time.time()) == 0
    assert not half_done.exists(), "the file left behind goes with the next pruning"


def test_a_record_whose_name_and_content_differ_is_skipped(tmp_path: Path) -> None:
    history = _history(tmp_path)
    directory = Path(history.registry.meta_dir(A)) / "savepoints"
    lying = _record(A, Trigger.MANUAL, "/sp/savepoint-aaaaaa-000000000001")
    history.record(lying)
    (directory / lying.file_name).rename(directory / lying.file_name.replace("COMPLETED", "FAILED"))
    escaping = _record(A, Trigger.MANUAL, "/sp/x", record_id="../../status")
    (directory / "00000000000000000009-1234abcd.json").write_text(escaping.to_json())
    other = _record(B, Trigger.MANUAL, "/sp/savepoint-bbbbbb-000000000001")
    (directory / other.file_name).write_text(other.to_json())
    assert history.of_job(A) == []
    assert not history.mark_disposed(A, "/sp/x")
    assert history.prune(A, max_count=1, max_age=1.0, now=time.time() + 10) == 1
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["00000000000000000009-1234abcd.json", other.file_name]
    ), "a file that cannot be read is never deleted"
