"""A query's figures over the metrics window, from series points built directly."""

import pytest

from flinkish_cli.autoscaler.metrics import QueryMetrics, query_metrics, window_start
from tests.autoscaler.load import batches, point, settings

WINDOW = settings(metrics_window=600.0, stabilization_interval=60.0)
NOW = 10_000.0


def _metrics(points: list, run_start: float = 0.0, trigger_ms: int | None = 10_000):
    return query_metrics("q", points, WINDOW, NOW, run_start, trigger_ms)


def test_steady_load_rates_and_busy_share() -> None:
    # a batch every 10 s: 1000 rows in 2.5 s -> 100 rows/s in, 400 rows per busy second
    metrics = _metrics(batches(NOW - 600, NOW, 10, 1000, 2.5))
    assert metrics.batches == 60 and metrics.outliers == 0
    assert metrics.window_complete
    assert metrics.input_rate == pytest.approx(100.0)
    assert metrics.processing_rate == pytest.approx(400.0)
    assert metrics.busy_share == pytest.approx(0.25)
    assert not metrics.idle and metrics.backlog is None and metrics.backlog_seconds is None


def test_the_window_starts_after_stabilization_and_is_incomplete_until_then() -> None:
    run_start = NOW - 300  # restarted 5 min ago: 4 min observed of a 10 min window
    assert window_start(WINDOW, NOW, run_start) == NOW - 240
    older = batches(NOW - 900, NOW - 240, 10, 50_000, 9.0)  # another run's, or a cold JVM's
    metrics = _metrics(older + batches(NOW - 240, NOW, 10, 1000, 2.5), run_start)
    assert metrics.batches == 24 and not metrics.window_complete
    assert metrics.processing_rate == pytest.approx(400.0)
    assert metrics.window_seconds == 240


def test_outlier_batches_are_left_out_of_the_processing_rate() -> None:
    points = batches(NOW - 600, NOW, 10, 1000, lambda i, _: 25.0 if i in (5, 6, 7) else 2.5)
    metrics = _metrics(points)
    assert metrics.outliers == 3
    assert metrics.processing_rate == pytest.approx(400.0)
    assert metrics.rate_busy_seconds == pytest.approx(57 * 2.5)


def test_the_rate_is_a_median_not_a_maximum() -> None:
    points = batches(NOW - 600, NOW, 10, 1000, lambda i, _: 0.5 if i % 10 == 0 else 2.5)
    assert _metrics(points).processing_rate == pytest.approx(400.0)


def test_too_little_busy_time_gives_an_unknown_rate() -> None:
    # FLINK-32002: 5 tiny batches of 40 rows in 20 ms would read as 2000 rows/s
    points = batches(NOW - 600, NOW, 120, 40, 0.02)
    metrics = _metrics(points, trigger_ms=None)
    assert metrics.processing_rate is None
    assert metrics.rate_busy_seconds == pytest.approx(0.1)
    assert not metrics.idle


def test_no_rows_is_idle_and_not_busy() -> None:
    metrics = _metrics(batches(NOW - 600, NOW, 10, 0, 0.05))
    assert metrics.idle and metrics.busy_share == 0.0 and metrics.processing_rate is None
    empty = _metrics([])
    assert empty.idle and empty.batches == 0 and empty.input_rate == 0.0


def test_backlog_at_the_newest_and_oldest_batch_and_how_fast_it_drains() -> None:
    points = batches(NOW - 600, NOW, 10, 1000, 2.5, lag=lambda i, _: 60_000 - 500 * i)
    points.append(point(NOW, 99, 1000, 2.5, None))  # a batch whose source reports no lag
    metrics = _metrics(points)
    assert metrics.input_rate == pytest.approx(61_000 / 600 - 50.0), "read, less the drained"
    queued = metrics.input_rate * 10  # what arrives in one batch period is no backlog
    assert metrics.backlog == pytest.approx(60_000 - 500 * 59 - queued)
    assert metrics.backlog_start == pytest.approx(60_000 - queued)
    assert metrics.drain_rate == pytest.approx(50.0)  # 500 every 10 s
    assert metrics.backlog_seconds == pytest.approx(metrics.backlog / metrics.input_rate)


def test_to_json_holds_every_figure() -> None:
    metrics = _metrics(batches(NOW - 600, NOW, 10, 1000, 2.5, lag=5000))
    data = metrics.to_json()
    assert QueryMetrics(**data) == metrics
    assert data["backlog"] == pytest.approx(4000.0) and data["query"] == "q"


def test_what_arrived_during_one_batch_is_no_backlog() -> None:
    """A file source measured right after its batch always has the files that arrived
    meanwhile waiting: one batch period's input is the next batch, not a backlog."""
    steady = _metrics(batches(NOW - 600, NOW, 5, 50, 2.0, lag=50), trigger_ms=5000)  # 10 rows/s
    assert steady.backlog == 0.0 and steady.backlog_start == 0.0
    behind = _metrics(batches(NOW - 600, NOW, 5, 50, 2.0, lag=650), trigger_ms=5000)
    assert behind.backlog == pytest.approx(600.0)
