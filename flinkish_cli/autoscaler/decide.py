"""The autoscaler's decision: the job's new parallelism, or why it keeps the one it has.

:func:`decide` is pure: the same figures give the same decision. The parallelism of a
flinkish job is job-wide (local[N] slots, shuffle partitions, state partitions on a
rescale), so the decision is too: **the largest parallelism any query needs**. Each query
with a known true processing rate (:mod:`.metrics`) is sized as Flink sizes a vertex:

- its *utilisation* is its input rate plus its backlog's share,
  ``backlog / catch-up.duration`` (when its sources report one), over its true processing
  rate: the busy share it needs at the current parallelism;
- the parallelism it needs is sized as Flink's ``getTargetProcessingCapacity`` sizes a
  vertex: the capacity ``backlog / catch-up.duration + input rate × restart.time /
  catch-up.duration + input rate / utilization.target`` (the backlog, what arrives while
  the job restarts, and the input at the target utilisation) over the rate per slot,
  rounded up, assuming the rate grows linearly with the parallelism. The restart share
  sizes a change and never triggers one: a backlog of a few records is no reason to scale.

**The restart time can be learnt** (Flink's ``restart.time-tracking``, off by default as in
Flink). ``restart.time`` sizes the restart share above and sets the catch-up deadline
below. With ``restart.time-tracking.enabled`` both use the longest restart the job itself
measured on its recent rescales (:func:`restart_time`), at most
``restart.time-tracking.limit``, and ``restart.time`` while it has measured none. A
rescale's restart is measured when it completes, onto its rescale history record (its
``restart-duration``): from when the old driver began stopping its queries for it to when
the new driver had every query's first batch at the new parallelism behind it. The recent
ones are those of Flink's scaling tracking: the newest :data:`RESTART_SAMPLES` measured
rescales made at most :data:`HISTORY_MAX_AGE` ago, and the newest measured one whatever its
age. Like the measured rates, they survive restarts and rescales (same JobID) and start
afresh with a new job.

**A scale-down is sized with what the job measured** (flinkish's, not Flink's). Flink
sizes every change linearly: a vertex at parallelism ``p`` with true rate ``r`` processes
``r / p`` per slot at any parallelism. A Spark micro-batch has a fixed cost besides its
rows (planning, scheduling, the commit), so under a low input the rate per slot falls as
the parallelism grows, and the linear rule underestimates what fewer slots can do: the
benchmark's job, measured at 6.1 rows/s at parallelism 1, read 2.8 rows/s per slot at 4
under the same low input and was scaled down 4 → 3 only. So a scale-down (never a
scale-up, never its trigger: that is the current window's utilisation) sizes a query with
the rate per slot the job itself measured at a smaller parallelism when that is more than
the linear one. The measurements are the figures of the job's rescale history
(:func:`measured_rates`): each decision recorded its queries' figures, measured over a full
window at its *from* parallelism; the history survives restarts and rescales (same JobID)
and starts afresh with a new job (an upgrade). A measurement counts when it is of the same
query, at a parallelism below the current one, with a known rate over a full metrics
window (at least the current ``metrics.window``), and at most :data:`HISTORY_MAX_AGE` old;
of several the lowest rate per slot is taken. The query's parallelism is then the capacity
above over that rate per slot, rounded up: at the measured parallelism the measured rate
itself, so the job is never sized below what its target utilisation allows by its own
figures. Every guard below is checked first, and the max factor, the bounds and the
allowed parallelisms after, as for a linear size.

An idle query needs nothing (``vertex.min-parallelism``). The job scales up when a query's
utilisation is above ``utilization.max``, down when every query's is below
``utilization.min``, and not at all in between. The new parallelism is bounded by the max
factors (up to at most ``floor(current × (1 + scale-up.max-factor))``, at least
``current + 1``; down to at least ``ceil(current × (1 − scale-down.max-factor))``), then by
``vertex.min/max-parallelism``, then snapped up to the nearest allowed parallelism (what
the state can be split into, the sources' partitions; by default any), at most
``vertex.max-parallelism`` (snapping may exceed the scale-up cap).

Guards, each named in :attr:`Decision.blocked_by`, in the order they are checked:

- ``stabilizing``: within ``stabilization.interval`` of the run's start (a start, restart
  or rescale) or of the last parallelism change;
- ``window``: the metrics window is not full yet;
- ``catching-up`` (FLINK-31318): no scale-up that only the backlog asks for while every
  backlog shrinks fast enough to be gone by the catch-up deadline (the last change, or the
  run's start, + restart.time, or the learnt one, + catch-up.duration);
- ``outliers`` (FLINK-33764): no scale-up that only outlier batches (GC, restart,
  checkpoint) ask for: when the naive rate (outliers included) would put a query above
  ``utilization.max`` and the true rate does not, the job keeps its parallelism;
- ``unknown-rate`` (FLINK-32002): no scale-down while a query with input has no trustworthy
  processing rate (too little busy time: an inflated estimate);
- ``backlog`` (FLINK-31318): no scale-down while a backlog takes longer than
  ``backlog-processing.lag-threshold`` to read at the input rate;
- ``busy`` (FLINK-38538): no scale-down while a query's busy share is above
  ``utilization.max`` or :data:`NEAR_FULL`, whatever its estimated rate says;
- ``scale-down-interval`` (FLINK-36018): no scale-down within ``scale-down.interval`` of the
  last change (a job never changed counts from nothing: the user picked its parallelism).

A query whose rate is unknown does not stop a scale-up the others need (more parallelism
is safe for it too). Metrics-only mode is the caller's: the decision is the same, its
record says NOT_APPLIED (:func:`rescale_record`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from flinkish_cli.autoscaler.metrics import QueryMetrics
from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.registry.rescales import RescaleRecord

UP, DOWN, NONE = "up", "down", "none"
#: A busy share at or above this is "near 100 % busy": never scaled down.
NEAR_FULL = 0.95
#: Float noise allowed when a required parallelism is rounded up.
_EPSILON = 1e-9
#: A measurement in the rescale history older than this (seconds) is stale: the default of
#: Flink's ``job.autoscaler.history.max.age``, for the history its autoscaler learns from.
HISTORY_MAX_AGE = 86_400.0
#: The measured restarts a learnt restart time is the longest of: the newest this many, the
#: default of Flink's ``job.autoscaler.history.max.count``, by which its scaling tracking
#: trims the rescales it keeps restart durations of (with ``history.max.age``).
RESTART_SAMPLES = 3

Allowed = Callable[[int], bool] | Collection[int]


@dataclass(frozen=True)
class Decision:
    """What the autoscaler decided; ``target == current`` when it keeps the parallelism."""

    current: int
    target: int
    direction: str  # "up", "down" or "none"
    #: one sentence, with the figures
    reason: str
    #: the guard that held a change back, None when none did
    blocked_by: str | None
    #: per query its metrics, utilisation and required parallelism; the job's utilisation
    figures: dict[str, Any]

    @property
    def changes(self) -> bool:
        return self.target != self.current

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Measured:
    """A query's true processing rate the job measured at a parallelism (epoch s)."""

    query: str
    parallelism: int
    time: float
    processing_rate: float | None
    window_seconds: float
    window_complete: bool


def measured_rates(records: Iterable[RescaleRecord]) -> list[Measured]:
    """The measurements in rescale records: a record's ``figures["queries"]`` are its
    queries' figures over the window that ended at its ``time``, at its ``from``
    parallelism (whatever became of the decision). A figure it cannot read is left out."""
    found = []
    for record in records:
        queries = record.figures.get("queries")
        for name, m in (queries if isinstance(queries, dict) else {}).items():
            try:
                rate = m["processing_rate"]
                found.append(
                    Measured(
                        str(name),
                        record.from_parallelism,
                        record.time / 1000,
                        None if rate is None else float(rate),
                        float(m["window_seconds"]),
                        m["window_complete"] is True,
                    )
                )
            except (KeyError, TypeError, ValueError):
                continue
    return found


def restart_time(
    settings: AutoscalerSettings, records: Iterable[RescaleRecord], now: float
) -> float:
    """The restart time (s) a decision at ``now`` sizes with, as Flink's
    ``ScalingTracking.getMaxRestartTimeOrDefault``: ``restart.time`` unless
    ``restart.time-tracking.enabled``; with it, the longest restart measured on the recent
    rescales among ``records`` (the job's rescale history: the newest
    :data:`RESTART_SAMPLES` measured ones made at most :data:`HISTORY_MAX_AGE` before
    ``now``, and the newest measured one whatever its age), at most
    ``restart.time-tracking.limit``; ``restart.time`` when none was measured."""
    if not settings.restart_time_tracking:
        return settings.restart_time
    measured = sorted((r for r in records if r.restart_duration is not None), key=lambda r: r.time)
    if not measured:
        return settings.restart_time
    recent = [r for r in measured if r.time / 1000 >= now - HISTORY_MAX_AGE][-RESTART_SAMPLES:]
    longest = max(r.restart_duration or 0 for r in recent or measured[-1:]) / 1000
    return min(longest, settings.restart_time_limit)


@dataclass(frozen=True)
class _Need:
    """What one query with a known rate needs."""

    utilisation: float  # with the backlog to work off
    steady: float  # without it
    required: int
    capacity: float  # rows/s to size for


def _need(m: QueryMetrics, current: int, settings: AutoscalerSettings, restart: float) -> _Need:
    """As Flink's ``AutoScalerUtils.getTargetProcessingCapacity``: whether the query is
    overloaded compares its input and its backlog's share of catch-up.duration with its true
    rate (``utilisation``); the parallelism is sized for that backlog share, the input that
    arrives while the job restarts (``restart`` s: restart.time, or the learnt one) worked
    off within catch-up.duration too, and the input at utilization.target (``required``)."""
    rate = m.processing_rate or 0.0
    backlog_rate = (m.backlog or 0.0) / settings.catch_up_duration
    restart_rate = m.input_rate * restart / settings.catch_up_duration
    capacity = backlog_rate + restart_rate + m.input_rate / settings.utilization_target
    required = math.ceil(current * capacity / rate - _EPSILON)
    utilisation = (m.input_rate + backlog_rate) / rate
    return _Need(utilisation, m.input_rate / rate, max(1, required), capacity)


def _snap(wanted: int, settings: AutoscalerSettings, allowed: Allowed | None) -> int | None:
    """The smallest allowed parallelism from ``wanted`` to the maximum, None if none is."""
    if allowed is None:
        return wanted
    test = allowed if callable(allowed) else allowed.__contains__
    return next((p for p in range(wanted, settings.max_parallelism + 1) if test(p)), None)


def _bounded(wanted: int, current: int, settings: AutoscalerSettings) -> int:
    if wanted > current:
        most = max(current + 1, math.floor(current * (1 + settings.scale_up_max_factor)))
        wanted = min(wanted, most)
    else:
        least = math.ceil(current * (1 - settings.scale_down_max_factor) - _EPSILON)
        wanted = max(wanted, least)
    return min(settings.max_parallelism, max(settings.min_parallelism, wanted))


def _on_schedule(m: QueryMetrics, deadline: float, now: float) -> bool:
    """The query's backlog shrinks fast enough to be gone by ``deadline``."""
    drain = m.drain_rate
    if not m.backlog:
        return True
    return drain is not None and drain > 0 and m.backlog / drain <= deadline - now


def _describe(m: QueryMetrics, need: _Need) -> str:
    backlog = f", backlog {m.backlog:.0f} records" if m.backlog else ""
    return (
        f"query '{m.query}' needs {need.utilisation:.0%} of its capacity (input "
        f"{m.input_rate:.1f} rows/s{backlog}, true rate {m.processing_rate:.1f} rows/s)"
    )


def decide(
    metrics: Sequence[QueryMetrics],
    current: int,
    settings: AutoscalerSettings,
    now: float,
    run_start: float,
    last_change: float | None = None,
    allowed: Allowed | None = None,
    measured: Sequence[Measured] = (),
    restart: float | None = None,
) -> Decision:
    """The job-wide decision at ``now`` (epoch seconds) for a job at parallelism ``current``
    whose run started at ``run_start``, last changed its parallelism at ``last_change``
    (None: never), from its queries' :func:`~.metrics.query_metrics`. ``allowed``: the
    parallelisms the job may take (a set, or a test); None: any in [min, max].
    ``measured``: the rates the job measured before (:func:`measured_rates` of its rescale
    history), which may size a scale-down. ``restart``: the restart time (s) to size with
    and to set the catch-up deadline by (:func:`restart_time` of the rescale history);
    None: ``restart.time``."""
    restart = settings.restart_time if restart is None else restart
    needs = {m.query: _need(m, current, settings, restart) for m in metrics if _known(m)}
    figures: dict[str, Any] = {
        "queries": {m.query: m.to_json() for m in metrics},
        "utilisation": {q: n.utilisation for q, n in needs.items()},
        "required": {q: n.required for q, n in needs.items()},
        "restart_time": restart,
    }

    def keep(reason: str, blocked_by: str | None = None) -> Decision:
        return Decision(current, current, NONE, reason, blocked_by, figures)

    def change(target: int, reason: str) -> Decision:
        return Decision(current, target, UP if target > current else DOWN, reason, None, figures)

    changed = max(run_start, last_change or run_start)
    if now < changed + settings.stabilization_interval:
        return keep(
            f"Stabilizing: {now - changed:.0f} s of {settings.stabilization_interval:.0f} s "
            "since the job's last start or rescale.",
            "stabilizing",
        )
    if not metrics:
        return keep("No streaming query has reported a batch yet.")
    if not all(m.window_complete for m in metrics):
        return keep(
            f"Collecting: the metrics window of {settings.metrics_window:.0f} s is not full.",
            "window",
        )
    active = [m for m in metrics if not m.idle]
    unknown = [m.query for m in active if not _known(m)]
    top = max(needs, key=lambda q: needs[q].utilisation, default=None)
    utilisation = needs[top].utilisation if top else 0.0
    figures["job_utilisation"] = utilisation
    detail = _describe(next(m for m in metrics if m.query == top), needs[top]) if top else ""

    if utilisation > settings.utilization_max:
        assert top is not None
        wanted = max(n.required for n in needs.values())
        target = _snap(_bounded(wanted, current, settings), settings, allowed)
        if target is None or target <= current:
            return keep(f"At the highest allowed parallelism {current}: {detail}.")
        deadline = (last_change or run_start) + restart + settings.catch_up_duration
        steady = max(n.steady for n in needs.values())
        draining = all(_on_schedule(m, deadline, now) for m in active)
        if steady <= settings.utilization_max and draining:
            return keep(
                f"Catching up: {detail}, but every backlog shrinks fast enough to be worked off "
                f"within catch-up.duration ({settings.catch_up_duration:.0f} s).",
                "catching-up",
            )
        return change(
            target,
            f"Scale up from {current} to {target}: {detail}, above utilization.max "
            f"{settings.utilization_max:.0%}; sized for utilization.target "
            f"{settings.utilization_target:.0%}.",
        )
    slowed = [
        m
        for m in metrics
        if m.outliers and m.query in needs and _naive(m, needs[m.query]) > settings.utilization_max
    ]
    if slowed:
        m = slowed[0]
        return keep(
            f"No scale-up: query '{m.query}' looks {_naive(m, needs[m.query]):.0%} busy only "
            f"through {m.outliers} outlier batches (restart, checkpoint, GC), "
            f"{needs[m.query].utilisation:.0%} without them.",
            "outliers",
        )
    if needs and utilisation >= settings.utilization_min:
        return keep(
            f"Within target: {detail}, between utilization.min "
            f"{settings.utilization_min:.0%} and utilization.max {settings.utilization_max:.0%}."
        )
    if unknown:
        return keep(
            f"No scale-down: the true processing rate of {', '.join(unknown)} is unknown "
            "(too little busy time in the window to measure it).",
            "unknown-rate",
        )
    down = _Down(metrics, needs, current, settings, now, last_change, allowed, measured)
    return _scale_down(down, figures, keep, change)


def _naive(m: QueryMetrics, need: _Need) -> float:
    """The query's utilisation from its naive rate (outlier batches included)."""
    raw = m.raw_processing_rate or 0.0
    return need.utilisation * (m.processing_rate or 0.0) / raw if raw > 0 else 0.0


def _known(m: QueryMetrics) -> bool:
    return not m.idle and m.processing_rate is not None and m.processing_rate > 0


@dataclass(frozen=True)
class _Down:
    """What a scale-down is decided from."""

    metrics: Sequence[QueryMetrics]
    needs: dict[str, _Need]
    current: int
    settings: AutoscalerSettings
    now: float
    last_change: float | None
    allowed: Allowed | None
    measured: Sequence[Measured]


def _trusted(h: Measured, query: str, d: _Down) -> bool:
    """``h`` may size ``query``'s scale-down: the same query, a smaller parallelism, a
    known rate over a full window, not stale."""
    return (
        h.query == query
        and 1 <= h.parallelism < d.current
        and h.processing_rate is not None
        and math.isfinite(h.processing_rate)
        and h.processing_rate > 0
        and h.window_complete
        and h.window_seconds >= d.settings.metrics_window - _EPSILON
        and 0 <= d.now - h.time <= HISTORY_MAX_AGE
    )


def _sized_down(query: str, need: _Need, d: _Down) -> tuple[int, dict[str, Any] | None]:
    """The parallelism ``query`` needs on a scale-down, and the measurement it was sized
    with (None: linearly): the lowest rate per slot it was measured at below the current
    parallelism, when that is more than its current rate per slot."""
    rate = next(m.processing_rate for m in d.metrics if m.query == query) or 0.0
    seen = [h for h in d.measured if _trusted(h, query, d)]
    h = min(seen, key=lambda s: (s.processing_rate or 0.0) / s.parallelism, default=None)
    if h is None or h.processing_rate is None:
        return need.required, None
    per_slot = h.processing_rate / h.parallelism
    if per_slot <= rate / d.current:
        return need.required, None
    required = max(1, math.ceil(need.capacity / per_slot - _EPSILON))
    return min(need.required, required), {
        "parallelism": h.parallelism,
        "processing_rate": h.processing_rate,
        "time": int(h.time * 1000),
        "linear": need.required,
    }


def _sized_as_measured(query: str, used: dict[str, Any], d: _Down) -> str:
    rate = used["processing_rate"]
    current = next(m.processing_rate for m in d.metrics if m.query == query) or 0.0
    return (
        f"query '{query}' ran at {rate:.1f} rows/s at parallelism {used['parallelism']} "
        f"{(d.now - used['time'] / 1000) / 60:.0f} min ago ({rate / used['parallelism']:.1f} "
        f"a slot, {current / d.current:.1f} a slot at {d.current} now; linearly it wanted "
        f"{used['linear']})"
    )


def _scale_down(
    d: _Down,
    figures: dict[str, Any],
    keep: Callable[..., Decision],
    change: Callable[[int, str], Decision],
) -> Decision:
    """Every query below utilization.min (or idle): the guards of a scale-down, then it."""
    settings, current, now, needs = d.settings, d.current, d.now, d.needs
    behind = [m for m in d.metrics if (m.backlog_seconds or 0.0) > settings.lag_threshold]
    if behind:
        m = behind[0]
        return keep(
            f"No scale-down while query '{m.query}' works off a backlog of {m.backlog:.0f} "
            f"records ({m.backlog_seconds:.0f} s of input, above the lag threshold of "
            f"{settings.lag_threshold:.0f} s).",
            "backlog",
        )
    ceiling = min(settings.utilization_max, NEAR_FULL)
    busy = [m for m in d.metrics if m.busy_share >= ceiling]
    if busy:
        return keep(
            f"No scale-down while query '{busy[0].query}' is {busy[0].busy_share:.0%} busy "
            f"(at or above {ceiling:.0%}), whatever its estimated rate says.",
            "busy",
        )
    if d.last_change is not None and now - d.last_change < settings.scale_down_interval:
        return keep(
            f"No scale-down within scale-down.interval ({settings.scale_down_interval:.0f} s) "
            f"of the last change, {now - d.last_change:.0f} s ago.",
            "scale-down-interval",
        )
    sized = {q: _sized_down(q, n, d) for q, n in needs.items()}
    used = {q: u for q, (_, u) in sized.items() if u is not None}
    if used:
        figures["measured"] = used
    wanted = max((r for r, _ in sized.values()), default=settings.min_parallelism)
    target = _snap(_bounded(wanted, current, settings), settings, d.allowed)
    if target is None or target >= current:
        return keep(f"Low load, but no allowed parallelism below {current} fits it.")
    load = (
        f"the busiest query needs {max(n.utilisation for n in needs.values()):.0%} of its "
        f"capacity, below utilization.min {settings.utilization_min:.0%}"
        if needs
        else "every query is idle"
    )
    how = "; ".join(_sized_as_measured(q, u, d) for q, u in used.items())
    return change(
        target,
        f"Scale down from {current} to {target}: {load} (wanted {wanted}"
        f"{f', sized with a measured rate: {how}' if how else ''}; at most scale-down.max-factor "
        f"{settings.scale_down_max_factor:.0%} less per step).",
    )


def rescale_record(decision: Decision, settings: AutoscalerSettings, now: float) -> RescaleRecord:
    """The rescale history's record of a decision that changes the parallelism: PENDING
    when the autoscaler scales, NOT_APPLIED (and ended) when it only records."""
    return RescaleRecord.new(
        time=now,
        from_parallelism=decision.current,
        to_parallelism=decision.target,
        direction=decision.direction,
        reason=decision.reason,
        figures=decision.figures,
        applied=settings.scaling_enabled,
    )
