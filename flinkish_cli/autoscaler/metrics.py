"""A query's figures over the metrics window, in the terms of Flink's autoscaler.

The input is the query's points of the job's series (:mod:`flinkish_cli.registry.series`,
one completed micro-batch each, oldest first): the series, not the status's recent batches,
because only the series holds a whole ``job.autoscaler.metrics.window`` (the status keeps 30
batches). The window is the batches that started within ``metrics.window`` before ``now``
and after the run's stabilization: batches before ``run_start + stabilization.interval``
(``run_start`` is the job's start, its last restart or rescale: a rescale is a restart) were
run at another parallelism or by a cold JVM and are never read.

- **input rate**: what arrives, in rows per second: the rows read by the window's batches
  over the window's wall time (``now`` minus the window's start), plus how fast the backlog
  grew (its change from the window's oldest to its newest batch reporting one, over the
  time between them), as Flink adds a source's lag growth to its rate: a query that cannot
  keep up reads less than arrives, and the rest shows as a growing backlog.
- **busy share**: the share of wall time the query ran batches, from
  :mod:`flinkish_cli.registry.task_time` (its one owner) over the window's batches, all of
  them: a slow batch was busy time. A query without a processing-time trigger runs its next
  batch as soon as the last one ends whenever input keeps arriving, so it reads busy (near 1)
  under any steady input; the decision then never scales it down (the safe way to be wrong).
- **true processing rate**: the rows the query processes per second of busy time at the
  current parallelism: the median of the per-batch rates ``input_rows / duration`` of the
  window's batches with input, outliers left out (a median, not a maximum: a few fast
  batches do not make the query look fast). An *outlier* is a batch that took more than
  :data:`OUTLIER_FACTOR` times the median duration of the window's batches with input (a
  restart's first batches, a checkpoint, a long GC pause: not load). The rate is *unknown*
  (None) unless the batches it is taken from hold at least :data:`MIN_BATCHES` batches,
  :data:`MIN_ROWS` rows and ``max(MIN_BUSY_SECONDS, MIN_BUSY_SHARE × window)`` of busy time:
  a rate extrapolated from a few milliseconds of work is inflated (FLINK-32002).
  The naive rate (all rows over all busy time, outliers included) is kept beside it, so
  that the decision can say when outliers alone would have asked for a scale-up.
- **backlog**: the records the query's sources are behind their latest offsets
  (Flink's ``pendingRecords``: a Kafka source's over all its partitions, from its end and
  latest offsets; summed over sources; a file source's as flinkish measures it,
  :mod:`flinkish_cli.runtime.connectors.file_backlog`) at the window's newest batch that reports it,
  and at its oldest (to tell whether it shrinks), less what arrives in one batch period at
  the input rate: what arrived while a batch ran is what the next batch reads, the queue
  of any micro-batch query, not a backlog to catch up on; None: unknown, the sources report
  none (rate, sockets).
- **idle**: the window holds no rows. (Spark's own idle report speaks of the query's last
  trigger only, not of the window, so it is not used.) An idle query is not overloaded: it
  needs no parallelism of its own.

``window_complete`` is true once the run has been observed (past its stabilization) for a
whole ``metrics.window``: no decision is taken on less. Times are epoch seconds (floats);
the series' are epoch ms.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.registry.series import FIELDS
from flinkish_cli.registry.status import Progress
from flinkish_cli.registry.task_time import task_time

#: A batch longer than this many times the window's median duration is an outlier.
OUTLIER_FACTOR = 3.0
#: Batches with input the processing rate needs.
MIN_BATCHES = 3
#: Rows the processing rate needs.
MIN_ROWS = 100
#: Busy time the processing rate needs: this many seconds, or this share of the window if
#: that is more.
MIN_BUSY_SECONDS = 1.0
MIN_BUSY_SHARE = 0.01

_TIME, _BATCH, _IN_RATE, _PROCESSED_RATE, _DURATION, _ROWS, _STATE_ROWS, _STATE_BYTES, _LAG = range(
    len(FIELDS)
)


@dataclass(frozen=True)
class QueryMetrics:
    """One query's figures over the window (see the module docstring for each)."""

    query: str
    #: batches in the window, and of them the outliers left out of the processing rate
    batches: int
    outliers: int
    #: seconds of wall time the window spans (the metrics window once it is complete)
    window_seconds: float
    window_complete: bool
    input_rate: float
    busy_share: float
    #: rows per busy second at the current parallelism; None: unknown
    processing_rate: float | None
    #: busy seconds of the batches the processing rate is taken from
    rate_busy_seconds: float
    #: the naive rate, every batch's rows over every batch's busy time, outliers included
    #: (None with the processing rate): what a slow batch would have made of the query
    raw_processing_rate: float | None
    backlog: float | None
    backlog_start: float | None
    #: records per second the backlog grew by over the window (negative: it shrank)
    backlog_growth: float | None
    idle: bool

    @property
    def backlog_seconds(self) -> float | None:
        """How long the backlog takes to read at the input rate (infinite with no input)."""
        if not self.backlog:
            return None if self.backlog is None else 0.0
        return self.backlog / self.input_rate if self.input_rate > 0 else float("inf")

    @property
    def drain_rate(self) -> float | None:
        """Records per second the backlog shrank by over the window (negative: it grew)."""
        return None if self.backlog_growth is None else -self.backlog_growth

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON object, for the rescale history."""
        return asdict(self)


def _progress(point: Sequence[Any]) -> Progress:
    """A series point as the :class:`Progress` :func:`task_time` reads."""
    start = datetime.fromtimestamp(point[_TIME] / 1000, tz=timezone.utc)
    return Progress(
        batch_id=int(point[_BATCH]),
        timestamp=start.isoformat(timespec="milliseconds"),
        input_rows=int(point[_ROWS]),
        input_rows_per_second=float(point[_IN_RATE]),
        processed_rows_per_second=float(point[_PROCESSED_RATE]),
        duration_ms=int(point[_DURATION]),
        state_rows=int(point[_STATE_ROWS]),
        state_bytes=int(point[_STATE_BYTES]),
        lag=point[_LAG],
    )


def window_start(settings: AutoscalerSettings, now: float, run_start: float) -> float:
    """Where the window starts: ``metrics.window`` before now, never before stabilization."""
    return max(now - settings.metrics_window, run_start + settings.stabilization_interval)


def _processing_rate(
    with_input: list[Sequence[Any]], window: float
) -> tuple[float | None, float, int]:
    """The true processing rate, the busy seconds it is taken from, the outliers left out."""
    if not with_input:
        return None, 0.0, 0
    median_ms = statistics.median(p[_DURATION] for p in with_input)
    kept = [p for p in with_input if p[_DURATION] <= OUTLIER_FACTOR * median_ms]
    busy = sum(p[_DURATION] for p in kept) / 1000
    rows = sum(p[_ROWS] for p in kept)
    enough = (
        len(kept) >= MIN_BATCHES
        and rows >= MIN_ROWS
        and busy >= max(MIN_BUSY_SECONDS, MIN_BUSY_SHARE * window)
    )
    rates = [p[_ROWS] * 1000 / p[_DURATION] for p in kept if p[_DURATION] > 0]
    rate = statistics.median(rates) if enough and rates else None
    return rate, busy, len(with_input) - len(kept)


def _period(window: Sequence[Sequence[Any]], trigger_ms: int | None) -> float:
    """Seconds from one batch's start to the next: the median gap between the window's
    batches, at least the trigger interval (0 for a window of one batch)."""
    gaps = [(b[_TIME] - a[_TIME]) / 1000 for a, b in itertools.pairwise(window)]
    measured = statistics.median(gaps) if gaps else 0.0
    return max(measured, (trigger_ms or 0) / 1000)


def query_metrics(
    query: str,
    points: Sequence[Sequence[Any]],
    settings: AutoscalerSettings,
    now: float,
    run_start: float,
    trigger_ms: int | None = None,
) -> QueryMetrics:
    """The query's figures over the window ending at ``now`` of the run started at
    ``run_start``, from its series points (oldest first). ``trigger_ms`` is the query's
    processing-time trigger interval (its status's), None when it has none."""
    start = window_start(settings, now, run_start)
    window = [p for p in points if start * 1000 <= p[_TIME] <= now * 1000]
    span = max(0.0, now - start)
    rows = sum(p[_ROWS] for p in window)
    with_input = [p for p in window if p[_ROWS] > 0 and p[_DURATION] > 0]
    rate, busy, outliers = _processing_rate(with_input, settings.metrics_window)
    all_busy = sum(p[_DURATION] for p in with_input) / 1000
    lagged = [p for p in window if p[_LAG] is not None]
    growth = None
    if len(lagged) >= 2 and lagged[-1][_TIME] > lagged[0][_TIME]:
        lag_span = (lagged[-1][_TIME] - lagged[0][_TIME]) / 1000
        growth = (lagged[-1][_LAG] - lagged[0][_LAG]) / lag_span
    read = rows / span if span > 0 else 0.0
    share = task_time([_progress(p) for p in window], trigger_ms, rows == 0).busy_share
    queued = max(0.0, read + (growth or 0.0)) * _period(window, trigger_ms)

    def behind(point: Sequence[Any]) -> float:
        return max(0.0, float(point[_LAG]) - queued)

    return QueryMetrics(
        query=query,
        batches=len(window),
        outliers=outliers,
        window_seconds=span,
        window_complete=now - (run_start + settings.stabilization_interval)
        >= settings.metrics_window,
        input_rate=max(0.0, read + (growth or 0.0)),
        busy_share=share,
        processing_rate=rate,
        rate_busy_seconds=busy,
        raw_processing_rate=rows / all_busy if rate is not None else None,
        backlog=behind(lagged[-1]) if lagged else None,
        backlog_start=behind(lagged[0]) if lagged else None,
        backlog_growth=growth,
        idle=rows == 0,
    )
