"""Periodic savepoints: a running job takes one every interval, or on a cron expression.

``flinkish.savepoint.periodic.interval`` (the Flink Kubernetes Operator's
``kubernetes.operator.periodic.savepoint.interval`` is a synonym) is a duration or a cron
expression (croniter, in the driver's local time). The job's driver, or its session-cluster
client, runs :class:`PeriodicSavepoints` on a thread of its own; each savepoint goes into
``execution.checkpointing.savepoint-dir`` through the same single worker as savepoints asked
for by hand, so two never run at once, and one still queued or running is never asked for
again. The schedule carries on across restarts of the job: the next is due one interval
after the last periodic savepoint in the job's history.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.registry.history import SavepointHistory, Trigger
from flinkish_cli.savepoints.retention import Retention

log = logging.getLogger("flinkish.runtime")


@dataclass(frozen=True)
class SavepointSchedule:
    """Every ``interval``, or on the cron expression ``cron``."""

    interval: datetime.timedelta | None = None
    cron: str | None = None

    @classmethod
    def parse(cls, value: datetime.timedelta | str) -> SavepointSchedule | None:
        """The schedule a configured value describes; None for 0 (off)."""
        if isinstance(value, str):
            return cls(cron=value)
        return cls(interval=value) if value.total_seconds() > 0 else None

    def next_after(self, moment: float) -> float:
        """When the next savepoint is due after ``moment`` (epoch seconds)."""
        if self.interval is not None:
            return moment + self.interval.total_seconds()
        from croniter import croniter

        start = datetime.datetime.fromtimestamp(moment)
        return float(croniter(self.cron, start).get_next(float))

    def __str__(self) -> str:
        return f"cron '{self.cron}'" if self.cron else f"every {self.interval}"


@dataclass(frozen=True)
class SavepointPolicy:
    """Where a job's savepoints go, when it takes them by itself, and how long they stay."""

    directory: str
    schedule: SavepointSchedule | None = None
    retention: Retention = field(default_factory=Retention)

    @classmethod
    def from_config(cls, config: Any) -> SavepointPolicy:
        return cls(
            directory=str(config.get("execution.checkpointing.savepoint-dir")),
            schedule=SavepointSchedule.parse(config.get("flinkish.savepoint.periodic.interval")),
            retention=Retention.from_config(config),
        )


class PeriodicSavepoints:
    """Asks for a savepoint whenever the schedule says one is due, until ``done``."""

    def __init__(
        self,
        policy: SavepointPolicy,
        snapshots: Any,
        submit: Callable[[Callable[[], None]], None],
        live: Callable[[], bool],
        history: SavepointHistory,
        job_id: str,
        started: float,
    ) -> None:
        assert policy.schedule is not None
        self.policy = policy
        self.schedule = policy.schedule
        self.snapshots = snapshots  # Snapshots: take_savepoint(directory, trigger)
        self.submit = submit  # the control server's worker: one savepoint at a time
        self.live = live  # the job runs and is not ending
        self._pending = False  # a periodic savepoint is queued or being taken
        try:
            last = history.last_time(job_id, Trigger.PERIODIC)
        except Exception as error:  # the schedule starts afresh
            log.warning("Could not read the savepoint history: %s", error)
            last = None
        self.due = self.schedule.next_after(last if last is not None else started)

    def run(self, done: threading.Event) -> None:
        log.info("Periodic savepoints %s; the next is due at %s.", self.schedule, _at(self.due))
        while not done.wait(max(0.05, min(self.due - time.time(), 1.0))):
            if time.time() < self.due:
                continue
            self.ask()
            self.due = self.schedule.next_after(max(self.due, time.time()))

    def ask(self) -> None:
        """Queue a periodic savepoint, unless one is still queued or being taken."""
        if self._pending:
            log.info("A periodic savepoint is still under way: this one is skipped.")
            return
        self._pending = True
        try:
            self.submit(self._take)
        except Exception as error:  # the worker is shut down: the job is ending
            self._pending = False
            log.warning("Could not start a periodic savepoint: %s", error)

    def _take(self) -> None:
        try:
            if self.live():
                self.snapshots.take_savepoint(self.policy.directory, Trigger.PERIODIC)
        except Exception as error:  # recorded FAILED in the history; the job runs on
            log.warning("Periodic savepoint failed: %s", error)
        finally:
            self._pending = False


def _at(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment).isoformat(timespec="seconds")
