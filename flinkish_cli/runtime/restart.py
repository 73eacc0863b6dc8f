"""Flink's restart strategies, decided in the job's driver.

A job fails when its program raises or a query terminates with an exception. The driver then
asks its :class:`RestartStrategy` whether, and after what delay, to run the job again; the
queries resume from their checkpoints because their names (hence checkpoint directories) do
not change. Failures flinkish detects before anything runs (a query without a name, a
savepoint that does not match) are never retried: they would fail the same way. Nor is a
program that fails before its job ever ran (before all its queries started, the first time):
as in Flink, where a failing ``main()`` submits no job, that is a start-up error.

When ``restart-strategy.type`` is not set, Flink 2's rule applies: exponential-delay when
checkpointing is enabled (``execution.checkpointing.interval`` set), otherwise no restarts.

The job's driver (a failed attempt) and its supervisor (a dead driver) both record a failure
through :func:`record_failure`, so the bookkeeping (failure times, RESTARTING, the count of
restarts, why a job was not restarted) is written once. The failure times kept are only those
the strategy's later decisions depend on (:func:`needed`), so they never grow with the job's
age.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from flinkish_cli.registry.status import JobState, JobStatus

#: The exit status of a driver that found Spark's JVM gone: its supervisor starts a new one.
EXIT_JVM_LOST = 75
#: The exit status of a driver that stopped its job for an in-place rescale: its supervisor
#: starts the next driver at the new parallelism (:mod:`flinkish_cli.registry.rescale_marker`).
EXIT_RESCALE = 76
#: Why a program that failed before its job ever ran is not restarted.
FAILED_BEFORE_RUNNING = "the program failed before its job ran"


@dataclass(frozen=True)
class Decision:
    """Whether to restart, after how many seconds, and why not when not."""

    restart: bool
    delay: float = 0.0
    reason: str = ""

    @property
    def note(self) -> str:
        """What a FAILED job's cause ends with when it was not restarted."""
        return f"not restarted: {self.reason}"


class RestartStrategy(Protocol):
    """Decides after each failure."""

    def on_failure(self, now: float) -> Decision: ...


def needed(strategy: RestartStrategy, failures: list[float]) -> list[float]:
    """The newest of ``failures`` (in order) that the strategy's later decisions depend on:
    replaying them decides as replaying all would, so a job failing now and then for months
    keeps a bounded list. Failure-rate looks back one interval from the newest failure;
    exponential-delay, to its last reset (a pause of ``reset_threshold`` between two
    failures forgets those before); fixed-delay counts them all (at most its attempts + 1:
    the job then fails), as does no-restart (one: the job fails)."""
    if not failures:
        return failures
    if isinstance(strategy, FailureRate):
        return [t for t in failures if failures[-1] - t <= strategy.interval]
    if isinstance(strategy, ExponentialDelay):
        since = max(
            (
                n
                for n in range(1, len(failures))
                if failures[n] - failures[n - 1] >= strategy.reset_threshold
            ),
            default=0,
        )
        return failures[since:]
    return failures


@dataclass
class NoRestart:
    """``restart-strategy.type: disable`` (also none, off)."""

    def on_failure(self, now: float) -> Decision:
        return Decision(False, reason="restart-strategy.type is disable: no restarts")


@dataclass
class FixedDelay:
    """Restart up to ``attempts`` times, ``delay`` seconds apart."""

    attempts: int
    delay: float
    failures: int = 0

    def on_failure(self, now: float) -> Decision:
        self.failures += 1
        if self.failures > self.attempts:
            return Decision(
                False,
                reason=f"fixed-delay strategy gave up after {self.attempts} restart attempts",
            )
        return Decision(True, self.delay)


@dataclass
class FailureRate:
    """Restart unless more than ``max_failures`` failures happened within ``interval``."""

    max_failures: int
    interval: float
    delay: float
    times: deque[float] = field(default_factory=deque)

    def on_failure(self, now: float) -> Decision:
        self.times.append(now)
        while self.times and now - self.times[0] > self.interval:
            self.times.popleft()
        if len(self.times) > self.max_failures:
            return Decision(
                False,
                reason=f"failure-rate strategy: {len(self.times)} failures within "
                f"{self.interval:.0f} s (at most {self.max_failures} allowed)",
            )
        return Decision(True, self.delay)


@dataclass
class ExponentialDelay:
    """Pauses growing by ``multiplier`` from ``initial`` to ``maximum``, with jitter.

    Running ``reset_threshold`` seconds without failure resets the pause and the count of
    attempts; more than ``attempts`` restarts before such a reset fail the job.
    """

    initial: float
    maximum: float
    multiplier: float
    reset_threshold: float
    jitter: float
    attempts: int
    rng: random.Random = field(default_factory=random.Random)
    _backoff: float = 0.0
    _count: int = 0
    _last: float | None = None

    def on_failure(self, now: float) -> Decision:
        if self._last is not None and now - self._last >= self.reset_threshold:
            self._backoff, self._count = 0.0, 0
        self._last = now
        self._count += 1
        if self._count > self.attempts:
            return Decision(
                False,
                reason=f"exponential-delay strategy gave up after {self.attempts} restart attempts",
            )
        self._backoff = (
            self.initial
            if self._backoff == 0
            else min(self._backoff * self.multiplier, self.maximum)
        )
        spread = self._backoff * self.jitter
        delay = max(0.0, self._backoff + self.rng.uniform(-spread, spread))
        return Decision(True, min(delay, self.maximum))


def from_config(config: Any) -> RestartStrategy:
    """The strategy a :class:`~flinkish_cli.config.Configuration` describes."""

    def seconds(key: str) -> float:
        return float(config.get(key).total_seconds())

    kind = str(config.get("restart-strategy.type") or "disable")
    if kind == "fixed-delay":
        return FixedDelay(
            int(config.get("restart-strategy.fixed-delay.attempts")),
            seconds("restart-strategy.fixed-delay.delay"),
        )
    if kind == "failure-rate":
        return FailureRate(
            int(config.get("restart-strategy.failure-rate.max-failures-per-interval")),
            seconds("restart-strategy.failure-rate.failure-rate-interval"),
            seconds("restart-strategy.failure-rate.delay"),
        )
    if kind == "exponential-delay":
        prefix = "restart-strategy.exponential-delay."
        return ExponentialDelay(
            initial=seconds(prefix + "initial-backoff"),
            maximum=seconds(prefix + "max-backoff"),
            multiplier=float(config.get(prefix + "backoff-multiplier")),
            reset_threshold=seconds(prefix + "reset-backoff-threshold"),
            jitter=float(config.get(prefix + "jitter-factor")),
            attempts=int(config.get(prefix + "attempts-before-reset-backoff")),
        )
    return NoRestart()


def history_size(config: Any) -> int:
    """How many failures the job's exception history keeps (``web.exception-history-size``)."""
    return int(config.get("web.exception-history-size"))


def replay(config: Any, failures: list[float], now: float) -> Decision:
    """The decision for a failure at ``now``, after the job's earlier ``failures``.

    A strategy's state is the history of the job's failures, kept in the job's status, so
    that restarts inside a driver and restarts of a dead driver (by its supervisor) are
    judged by one strategy across processes.
    """
    strategy = from_config(config)
    for moment in failures:
        strategy.on_failure(moment)
    return strategy.on_failure(now)


def record_failure(
    config: Any, status: JobStatus, cause: str, now: float, query: str | None = None
) -> Decision:
    """Record a failure of the job at ``now`` in its ``status`` (its failure times and its
    exception history) and decide (:func:`replay`).

    A restart is recorded at once: RESTARTING, one more restart, ``cause`` as the failure's
    cause. A job that is not restarted is left for the caller to end (FAILED, with
    :attr:`Decision.note`), as only the caller knows what else its end records.
    """
    decision = replay(config, status.failure_times, now)
    status.failure_times = needed(from_config(config), [*status.failure_times, now])
    status.remember_failure(cause, now, history_size(config), query)
    if decision.restart:
        status.state = JobState.RESTARTING
        status.restarts += 1
        status.failure_cause = cause
    return decision
