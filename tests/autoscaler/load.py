"""Series points of a synthetic query, built directly (no Spark): steady load, spikes, lag.

A query triggers every ``trigger_s`` seconds; each batch reads ``rows`` rows in
``duration_s`` seconds at parallelism ``parallelism``, so its true rate per slot is
``rows / duration_s / parallelism``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.config.model import Configuration

#: Flink's defaults (the option table's), as the configuration loader gives them.
DEFAULTS = AutoscalerSettings.from_config(Configuration())


def settings(**changes: Any) -> AutoscalerSettings:
    """Flink's defaults with ``changes``."""
    return replace(DEFAULTS, **changes)


def point(time_s: float, batch: int, rows: int, duration_s: float, lag: float | None = None):
    """One completed batch as a series point."""
    duration_ms = max(0, round(duration_s * 1000))
    rate = rows / duration_s if duration_s > 0 else 0.0
    return [round(time_s * 1000), batch, rate, rate, duration_ms, rows, 0, 0, lag]


def batches(
    start_s: float,
    end_s: float,
    trigger_s: float,
    rows: Callable[[int, float], int] | int,
    duration_s: Callable[[int, float], float] | float,
    lag: Callable[[int, float], float | None] | float | None = None,
    first_batch: int = 0,
) -> list[list[Any]]:
    """Batches every ``trigger_s`` from ``start_s`` to before ``end_s``; each figure either
    fixed or a function of (the batch's index, its start time)."""

    def value(figure: Any, index: int, at: float) -> Any:
        return figure(index, at) if callable(figure) else figure

    points = []
    index, at = 0, start_s
    while at < end_s:
        points.append(
            point(
                at,
                first_batch + index,
                value(rows, index, at),
                value(duration_s, index, at),
                value(lag, index, at),
            )
        )
        index += 1
        at = start_s + index * trigger_s
    return points


@dataclass
class Job:
    """A simulated job: one query with a processing-time trigger reading from a source with
    offsets (its lag is reported), ``per_slot`` rows per busy second per unit of parallelism;
    a batch reads what arrived (at most ``max_rows``) and takes as long as that needs."""

    parallelism: int
    per_slot: float
    arrival: Callable[[float], float]
    trigger_s: float = 10.0
    max_rows: int | None = None
    slow: Callable[[int, float], float] = lambda index, at: 1.0
    backlog: float = 0.0
    at: float = 0.0
    batch: int = 0
    points: list[list[Any]] = field(default_factory=list)

    def run_until(self, end: float) -> None:
        while self.at < end:
            self.backlog += self.arrival(self.at) * self.trigger_s
            rows = int(self.backlog if self.max_rows is None else min(self.backlog, self.max_rows))
            duration = rows / (self.per_slot * self.parallelism) * self.slow(self.batch, self.at)
            self.backlog -= rows
            self.points.append(point(self.at, self.batch, rows, duration, self.backlog))
            self.batch += 1
            self.at += max(self.trigger_s, duration)
        del self.points[:-2000]

    def restart(self, parallelism: int, restart_s: float) -> None:
        """A rescale: no batch for ``restart_s``, what arrives meanwhile is backlog."""
        self.backlog += self.arrival(self.at) * restart_s
        self.at += restart_s
        self.parallelism = parallelism
