"""The health check on progress, on a clock the test moves: a query with work that commits
nothing within the window stalls the job once; an idle query, or one that commits, never."""

from __future__ import annotations

import pytest

from flinkish_cli.registry.status import Progress
from flinkish_cli.runtime.queries import checkpoint_rules
from flinkish_cli.runtime.queries.checkpoint_rules import BatchWatcher, CheckpointRules


class Query:
    """What the watcher reads of a StreamingQuery."""

    def __init__(self, data: bool = False, trigger: bool = False) -> None:
        self.isActive = True
        self.status = {"isDataAvailable": data, "isTriggerActive": trigger}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(checkpoint_rules.time, "monotonic", fake)
    return fake


def _watcher(window: float) -> tuple[BatchWatcher, list[str]]:
    stalls: list[str] = []
    rules = CheckpointRules(progress_window_s=window)
    return BatchWatcher(rules, lambda cause: None, stalls.append), stalls


def _progress(batch: int) -> Progress:
    return Progress.from_spark({"batchId": batch, "durationMs": {"triggerExecution": 10}})


def test_a_query_with_input_and_no_commit_stalls_the_job_once(clock: Clock) -> None:
    watcher, stalls = _watcher(60)
    queries = {"counts": Query(data=True, trigger=True)}
    watcher.watch(queries, lambda name: None)
    clock.now += 60
    watcher.watch(queries, lambda name: None)
    assert stalls == []  # at the window, not past it
    clock.now += 1
    watcher.watch(queries, lambda name: None)
    clock.now += 100
    watcher.watch(queries, lambda name: None)
    assert stalls == [
        "no checkpoint progress for 60 s (query 'counts' had input but committed no batch; "
        "flinkish.health-check.checkpoint-progress.window)"
    ]
    watcher.reset()  # a restarted attempt is judged afresh
    watcher.watch(queries, lambda name: None)
    clock.now += 61
    watcher.watch(queries, lambda name: None)
    assert len(stalls) == 2


def test_commits_within_the_window_keep_it_healthy(clock: Clock) -> None:
    watcher, stalls = _watcher(60)
    queries = {"counts": Query(data=True)}
    for batch in range(5):
        watcher.watch(queries, lambda name, last=batch - 1: last)
        clock.now += 50
        watcher.completed("counts", _progress(batch))
    watcher.watch(queries, lambda name: 4)
    assert stalls == []


def test_an_idle_query_never_stalls_even_when_input_comes_later(clock: Clock) -> None:
    watcher, stalls = _watcher(60)
    idle = Query()
    watcher.watch({"counts": idle}, lambda name: 3)
    clock.now += 3600  # an hour without input
    watcher.watch({"counts": idle}, lambda name: 3)
    idle.status["isDataAvailable"] = True  # input arrives: the window starts now
    watcher.watch({"counts": idle}, lambda name: 3)
    clock.now += 30
    watcher.watch({"counts": idle}, lambda name: 3)
    assert stalls == []


def test_the_check_is_off_by_default(clock: Clock) -> None:
    watcher, stalls = _watcher(CheckpointRules().progress_window_s)
    queries = {"counts": Query(data=True, trigger=True)}
    watcher.watch(queries, lambda name: None)
    clock.now += 10**6
    watcher.watch(queries, lambda name: None)
    assert stalls == []
