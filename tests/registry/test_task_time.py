"""Flink's busy / back-pressured / idle time from a query's recent micro-batches."""

from __future__ import annotations

import pytest

from flinkish_cli.registry.status import Progress
from flinkish_cli.registry.task_time import IDLE, task_time


def batch(n: int, duration_ms: int, second: int) -> Progress:
    return Progress(
        batch_id=n, timestamp=f"2026-11-25T10:00:{second:02d}.000Z", duration_ms=duration_ms
    )


def test_a_query_within_its_interval_is_busy_for_its_batches_and_idle_for_the_rest() -> None:
    times = task_time([batch(1, 500, 0), batch(2, 500, 2)], trigger_ms=2000)
    assert times.busy == pytest.approx(250)
    assert times.backpressured == 0
    assert times.idle == pytest.approx(750)


def test_batches_overrunning_their_interval_are_back_pressure() -> None:
    times = task_time([batch(1, 3000, 0), batch(2, 3000, 3)], trigger_ms=2000)
    assert times.busy == pytest.approx(1000 * 2 / 3)
    assert times.backpressured == pytest.approx(1000 / 3)
    assert times.idle == 0
    assert times.busy + times.backpressured + times.idle == pytest.approx(1000)


def test_without_an_interval_the_gap_between_batch_starts_is_the_wall_time() -> None:
    times = task_time([batch(1, 1000, 0), batch(2, 1000, 4), batch(3, 1000, 8)], trigger_ms=None)
    assert times.busy == pytest.approx(250)
    assert times.backpressured == 0
    assert times.busy + times.idle == pytest.approx(1000)


def test_a_query_reported_idle_or_without_batches_is_idle() -> None:
    assert task_time([batch(1, 3000, 0)], trigger_ms=1000, idle=True) == IDLE
    assert task_time([], trigger_ms=1000) == IDLE
    assert IDLE.busy_share == 0
