"""The rescale history file: latest evaluation, bounded records, outcomes, damage."""

from __future__ import annotations

import json
from pathlib import Path

from flinkish_cli.registry.rescales import (
    MAX_RESCALES,
    RESCALES_FILE,
    Outcome,
    RescaleHistory,
    RescaleRecord,
)
from flinkish_cli.registry.store import JobRegistry

JOB = "a" * 32


def _record(time: float = 1000.0, applied: bool = True, to: int = 4) -> RescaleRecord:
    return RescaleRecord.new(time, 2, to, "up", "Scale up.", {"q": {"busy_share": 1.0}}, applied)


def test_a_new_record_is_pending_or_not_applied_in_metrics_only_mode() -> None:
    pending = _record()
    assert (pending.outcome, pending.mode, pending.end_time) == (Outcome.PENDING, "scaling", None)
    assert pending.time == 1_000_000 and len(pending.id) == 32
    ignored = _record(applied=False)
    assert (ignored.outcome, ignored.mode) == (Outcome.NOT_APPLIED, "metrics-only")
    assert ignored.end_time == ignored.time and ignored.outcome.final


def test_written_read_back_with_the_latest_evaluation(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path))
    assert RescaleHistory.read(registry, JOB) == RescaleHistory(), "no file: empty"
    history = RescaleHistory()
    history.record_evaluation({"direction": "none", "reason": "Within target."})
    history.append(_record())
    history.write(registry, JOB)
    read = RescaleHistory.read(registry, JOB)
    assert read == history
    path = tmp_path / JOB / "_flinkish" / RESCALES_FILE
    data = json.loads(path.read_text())
    assert set(data["rescales"][0]) == {
        "id", "time", "end-time", "from", "to", "direction", "reason", "mode", "outcome",
        "figures", "restart-duration",
    }  # fmt: skip
    read.record_evaluation({"direction": "up"})
    assert read.latest == {"direction": "up"}, "the latest evaluation is overwritten"


def test_bounded_to_the_newest_hundred() -> None:
    history = RescaleHistory()
    records = [_record(time=float(i)) for i in range(MAX_RESCALES + 5)]
    for record in records:
        history.append(record)
    assert history.rescales == records[5:]
    assert len(RescaleHistory.from_json(history.to_json()).rescales) == MAX_RESCALES


def test_outcome_update_and_the_last_change() -> None:
    history = RescaleHistory()
    first, second = _record(to=4), _record(to=8)
    history.append(first)
    history.append(second)
    assert history.last_change() is None
    assert history.update_outcome(first.id, Outcome.IN_PROGRESS, None)
    assert history.update_outcome(first.id, Outcome.COMPLETED, 1200.5)
    assert (first.outcome, first.end_time) == (Outcome.COMPLETED, 1_200_500)
    assert history.update_outcome(second.id, Outcome.ROLLED_BACK, 1300.0)
    assert history.last_change() is first
    assert not history.update_outcome("f" * 32, Outcome.FAILED, 1.0), "no such record"


def test_a_damaged_file_is_an_empty_history_and_a_damaged_record_is_dropped(
    tmp_path: Path,
) -> None:
    registry = JobRegistry.open(str(tmp_path))
    history = RescaleHistory()
    history.append(_record())
    history.write(registry, JOB)
    path = tmp_path / JOB / "_flinkish" / RESCALES_FILE
    good = json.loads(path.read_text())["rescales"][0]
    for damage in (b"{ not json", b"\xff\xfe", b"[]", b'{"version": 99, "rescales": []}'):
        path.write_bytes(damage)
        assert RescaleHistory.read(registry, JOB) == RescaleHistory(), damage
    bad = [{**good, "outcome": "MAYBE"}, {**good, "to": "4"}, {**good, "mode": "x"}, "x", {}]
    path.write_text(json.dumps({"version": 1, "latest": [], "rescales": [*bad, good]}))
    read = RescaleHistory.read(registry, JOB)
    assert read.latest is None and [r.to_dict() for r in read.rescales] == [good]


def test_a_completed_rescales_restart_is_measured_onto_its_record() -> None:
    history = RescaleHistory()
    record = _record(time=1000.0)
    history.append(record)
    assert not history.record_restart(record.id, 1000.5, 1042.0), "not completed yet"
    history.update_outcome(record.id, Outcome.COMPLETED, 1042.0)
    assert not history.record_restart(record.id, 0.0, 1042.0), "the stop is unknown"
    assert not history.record_restart(record.id, 1043.0, 1042.0), "stopped after it ran"
    assert not history.record_restart("f" * 32, 1000.5, 1042.0), "no such record"
    assert record.restart_duration is None
    assert history.record_restart(record.id, 1000.5, 1042.25)
    assert record.restart_duration == 41_750
    read = RescaleHistory.from_json(history.to_json())
    assert read.rescales[0].restart_duration == 41_750 and read == history


def test_a_record_without_a_restart_duration_reads_as_unmeasured() -> None:
    """Files written before the figure existed, and a figure that is not a duration: the
    record stays, unmeasured."""
    good = _record().to_dict()
    del good["restart-duration"]
    bad = [{**good, "restart-duration": v} for v in (-1, "5 s", 1.5, True)]
    text = json.dumps({"version": 1, "latest": None, "rescales": [good, *bad]})
    read = RescaleHistory.from_json(text)
    assert len(read.rescales) == 5
    assert all(r.restart_duration is None for r in read.rescales)
