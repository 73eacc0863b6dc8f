"""Flink's busy, back-pressured and idle time of a task, in a micro-batch query's terms.

Flink reports, per task, how many milliseconds of each second it spent working
(``busyTimeMsPerSecond``), blocked because what follows could not take its output
(``backPressuredTimeMsPerSecond``) and waiting for input (``idleTimeMsPerSecond``); the three
add up to 1000. A Spark streaming query runs one micro-batch per trigger. Over its recent
batches, each batch of duration ``d`` against a trigger interval ``I`` accounts for
``max(d, I)`` of wall time:

- busy: ``min(d, I)``, the query working within its interval;
- back-pressured: ``max(0, d - I)``, the time the batch overran its interval, during which the
  next trigger (and the input it would have read) waited: the source held back by the query,
  which is what back-pressure means to a Flink user;
- idle: ``max(0, I - d)``, the rest of the interval, waiting for the next trigger.

A query with no processing-time trigger (Spark's default: the next batch as soon as the last
one ends) has no interval: its wall time is the gap between two batch starts, busy for the
batch and idle for the rest, never back-pressured. A query Spark reports idle (its last
trigger found no new input) is idle. This is the one place the figures are computed: the job
graph, ``/metrics`` and the autoscaler read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from flinkish_cli.registry.status import Progress, parse_timestamp

#: Milliseconds in the second Flink's figures are per.
PER_SECOND = 1000.0


@dataclass(frozen=True)
class TaskTime:
    """Milliseconds per second busy, back-pressured and idle (they add up to 1000)."""

    busy: float
    backpressured: float
    idle: float

    @property
    def busy_share(self) -> float:
        """Busy time as a share of wall time (0 to 1)."""
        return self.busy / PER_SECOND


IDLE = TaskTime(0.0, 0.0, PER_SECOND)


def task_time(recent: list[Progress], trigger_ms: int | None, idle: bool = False) -> TaskTime:
    """The task time of a query over its ``recent`` batches (oldest first).

    ``trigger_ms`` is the query's processing-time trigger interval, None or 0 when it has
    none; ``idle`` is Spark's report that the query's last trigger found no input."""
    if idle or not recent:
        return IDLE
    busy = pressured = waiting = 0.0
    if trigger_ms and trigger_ms > 0:
        for batch in recent:
            duration = max(0, batch.duration_ms)
            busy += min(duration, trigger_ms)
            pressured += max(0, duration - trigger_ms)
            waiting += max(0, trigger_ms - duration)
    else:
        starts = [parse_timestamp(batch.timestamp) for batch in recent]
        for batch, start, following in zip(recent, starts, starts[1:], strict=False):
            duration = max(0, batch.duration_ms)
            wall = max(duration, following - start) if start and following else duration
            busy += duration
            waiting += wall - duration
        if len(recent) == 1:
            busy = float(max(0, recent[0].duration_ms))
    total = busy + pressured + waiting
    if total <= 0:
        return IDLE
    return TaskTime(
        busy=PER_SECOND * busy / total,
        backpressured=PER_SECOND * pressured / total,
        idle=PER_SECOND * waiting / total,
    )
