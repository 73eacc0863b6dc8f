"""Periodic savepoints, without Spark: when they are due (an interval, a cron expression,
after a restart), one at a time, and a failed one never stops the next."""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.errors import ConfigError
from flinkish_cli.registry.history import (
    SavepointHistory,
    SavepointRecord,
    SavepointState,
    Trigger,
)
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.queries.periodic import (
    PeriodicSavepoints,
    SavepointPolicy,
    SavepointSchedule,
)

JOB = "12" * 16


def _policy(**flat: str) -> SavepointPolicy:
    return SavepointPolicy.from_config(
        Configuration.from_flat({"execution.checkpointing.savepoint-dir": "/sp", **flat})
    )


def test_the_schedule_is_an_interval_a_cron_expression_or_off() -> None:
    assert _policy().schedule is None  # off by default
    every = _policy(**{"flinkish.savepoint.periodic.interval": "10 min"}).schedule
    assert every is not None and every.next_after(1000.0) == 1600.0
    operator = _policy(**{"kubernetes.operator.periodic.savepoint.interval": "0 */6 * * *"})
    assert operator.schedule == SavepointSchedule(cron="0 */6 * * *")
    start = datetime.datetime(2026, 11, 24, 7, 30).timestamp()
    due = datetime.datetime.fromtimestamp(operator.schedule.next_after(start))
    assert (due.hour, due.minute) == (12, 0)
    assert operator.retention.max_count == 10  # the operator's defaults
    assert operator.retention.max_age == datetime.timedelta(days=1)
    with pytest.raises(ConfigError, match="is not a valid cron expression"):
        _policy(**{"flinkish.savepoint.periodic.interval": "61 * * * *"})


class _Snapshots:
    """Takes savepoints as the runtime's Snapshots does, failing when told to."""

    def __init__(self, fail_first: bool = False) -> None:
        self.taken: list[tuple[str, Trigger]] = []
        self.fail_first = fail_first

    def take_savepoint(self, directory: str, trigger: Trigger) -> str:
        self.taken.append((directory, trigger))
        if self.fail_first and len(self.taken) == 1:
            raise OSError("disk full")
        return f"{directory}/savepoint-{len(self.taken)}"


def _history(tmp_path: Path) -> SavepointHistory:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    registry.write(JobStatus(job_id=JOB, name="job"))
    return SavepointHistory(registry)


def _until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_savepoints_are_taken_when_due_and_a_failure_never_stops_the_next(
    tmp_path: Path,
) -> None:
    policy = _policy(**{"flinkish.savepoint.periodic.interval": "200 ms"})
    snapshots = _Snapshots(fail_first=True)
    periodic = PeriodicSavepoints(
        policy, snapshots, lambda work: work(), lambda: True, _history(tmp_path), JOB, time.time()
    )
    done = threading.Event()
    thread = threading.Thread(target=periodic.run, args=(done,))
    thread.start()
    try:
        _until(lambda: len(snapshots.taken) >= 3, "three periodic savepoints")
    finally:
        done.set()
        thread.join(timeout=10)
    assert set(snapshots.taken) == {("/sp", Trigger.PERIODIC)}
    assert not thread.is_alive()


def test_one_still_under_way_is_not_asked_for_again(tmp_path: Path) -> None:
    queued: list = []
    periodic = PeriodicSavepoints(
        _policy(**{"flinkish.savepoint.periodic.interval": "1 min"}),
        _Snapshots(),
        queued.append,  # the worker is busy: the work waits
        lambda: True,
        _history(tmp_path),
        JOB,
        time.time(),
    )
    periodic.ask()
    periodic.ask()
    assert len(queued) == 1
    queued[0]()  # taken: the next may be asked for
    periodic.ask()
    assert len(queued) == 2


def test_a_job_that_is_not_running_takes_none(tmp_path: Path) -> None:
    snapshots = _Snapshots()
    periodic = PeriodicSavepoints(
        _policy(**{"flinkish.savepoint.periodic.interval": "1 min"}),
        snapshots,
        lambda work: work(),
        lambda: False,
        _history(tmp_path),
        JOB,
        time.time(),
    )
    periodic.ask()
    assert snapshots.taken == []


def test_the_schedule_carries_on_from_the_last_periodic_savepoint(tmp_path: Path) -> None:
    history = _history(tmp_path)
    for trigger, at in ((Trigger.PERIODIC, 5000.0), (Trigger.MANUAL, 5500.0)):
        history.record(SavepointRecord(JOB, trigger, SavepointState.COMPLETED, "/sp/x", time=at))
    policy = _policy(**{"flinkish.savepoint.periodic.interval": "10 min"})
    restarted = PeriodicSavepoints(
        policy, _Snapshots(), lambda work: work(), lambda: True, history, JOB, 9000.0
    )
    assert restarted.due == 5600.0  # one interval after the last periodic one: overdue
    fresh = PeriodicSavepoints(
        policy,
        _Snapshots(),
        lambda work: work(),
        lambda: True,
        _history(tmp_path / "b"),
        JOB,
        9000.0,
    )
    assert fresh.due == 9600.0
