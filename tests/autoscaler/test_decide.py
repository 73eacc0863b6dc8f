"""The decision, unit by unit, and one scenario per user complaint (FLINK-xxxxx)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from flinkish_cli.autoscaler.decide import (
    HISTORY_MAX_AGE,
    Decision,
    Measured,
    decide,
    measured_rates,
    rescale_record,
    restart_time,
)
from flinkish_cli.autoscaler.metrics import QueryMetrics, query_metrics
from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from tests.autoscaler.load import Job, batches, settings

S = settings(metrics_window=600.0, stabilization_interval=60.0)
DAY = 86_400.0


def evaluate(
    job: Job,
    now: float,
    run_start: float,
    last_change: float | None = None,
    s: AutoscalerSettings = S,
    allowed: object = None,
    trigger_ms: int | None = 10_000,
) -> Decision:
    job.run_until(now)
    metrics = query_metrics("q", job.points, s, now, run_start, trigger_ms)
    return decide([metrics], job.parallelism, s, now, run_start, last_change, allowed)  # type: ignore[arg-type]


def test_stabilizing_and_window_guards() -> None:
    job = Job(4, 100.0, lambda t: 200.0)
    assert evaluate(job, 30.0, 0.0).blocked_by == "stabilizing"
    assert evaluate(job, 300.0, 0.0).blocked_by == "window"
    assert evaluate(job, 900.0, 0.0, last_change=870.0).blocked_by == "stabilizing"
    within = evaluate(job, 700.0, 0.0)
    assert (within.direction, within.blocked_by, within.target) == ("none", None, 4)
    # sized for 200 rows/s at 0.7 and what arrives in a 300 s restart within 1800 s: 319.0
    assert "Within target" in within.reason and within.figures["required"]["q"] == 4


def test_a_step_with_a_backlog_scales_up_once_to_work_it_off_within_catch_up() -> None:
    rate = {"now": 100.0}
    job = Job(2, 100.0, lambda t: rate["now"], max_rows=2000)  # reads at most 200 rows/s
    assert evaluate(job, 700.0, 0.0).direction == "none"
    rate["now"] = 600.0  # 6x: the backlog grows by 400 rows/s
    up = evaluate(job, 1400.0, 0.0)
    assert up.direction == "up", up.reason
    backlog = up.figures["queries"]["q"]["backlog"]
    catch_up = (backlog + 600 * S.restart_time) / S.catch_up_duration
    assert up.target == math.ceil((catch_up + 600 / S.utilization_target) / 100.0)
    assert up.target * 100.0 >= 600 + catch_up, "worked off in catch-up.duration"
    job.restart(up.target, 60.0)
    job.max_rows = up.target * 1000
    run_start, changes = job.at, []
    for now in range(int(run_start) + 60, int(run_start) + 4 * 3600, 60):
        decision = evaluate(job, float(now), run_start, last_change=1400.0)
        if decision.changes:
            changes.append(decision)
    assert changes == [], [d.reason for d in changes]
    assert job.backlog < 1000, "the backlog is worked off"


def test_low_load_after_the_scale_down_interval_scales_down_by_at_most_the_factor() -> None:
    job = Job(10, 100.0, lambda t: 100.0)
    blocked = evaluate(job, 3000.0, 0.0, last_change=0.0)
    assert blocked.blocked_by == "scale-down-interval"
    down = evaluate(job, 4000.0, 0.0, last_change=0.0)
    assert (down.direction, down.target) == ("down", 4), down.reason  # wants 2; 10 x (1 - 0.6)
    later = evaluate(
        job,
        4000.0,
        0.0,
        last_change=0.0,
        s=settings(metrics_window=600.0, stabilization_interval=60.0, scale_down_max_factor=0.9),
    )
    assert later.target == 2  # ceil(100 / (100 x 0.7))


def test_bounds_and_snapping() -> None:
    job = Job(2, 100.0, lambda t: 1000.0, max_rows=2000)
    capped = evaluate(
        job,
        700.0,
        0.0,
        s=settings(metrics_window=600.0, stabilization_interval=60.0, scale_up_max_factor=1.0),
    )
    assert capped.target == 4  # 2 x (1 + 1.0)
    most = evaluate(
        job,
        700.0,
        0.0,
        s=settings(metrics_window=600.0, stabilization_interval=60.0, max_parallelism=5),
    )
    assert most.target == 5
    snapped = evaluate(job, 700.0, 0.0, allowed={2, 4, 8, 16, 32, 64, 128})
    free = evaluate(job, 700.0, 0.0)
    assert snapped.target == min(p for p in (32, 64, 128) if p >= free.target)
    nothing = evaluate(job, 700.0, 0.0, allowed=lambda p: p == 1)
    assert nothing.target == 2 and nothing.direction == "none"


def test_metrics_only_records_but_marks_not_applied() -> None:
    job = Job(2, 100.0, lambda t: 1000.0, max_rows=2000)
    up = evaluate(job, 700.0, 0.0)
    record = rescale_record(up, settings(scaling_enabled=False), 700.0)
    assert (record.outcome, record.mode) == (Outcome.NOT_APPLIED, "metrics-only")
    assert (record.from_parallelism, record.to_parallelism) == (2, up.target)
    assert rescale_record(up, S, 700.0).outcome is Outcome.PENDING
    assert up.to_json()["figures"]["queries"]["q"]["input_rate"] > 0


def test_flink_36018_a_noisy_day_gives_a_handful_of_changes_none_down_too_soon() -> None:
    noise = random.Random(36018)

    def arrival(t: float) -> float:  # a daily wave and +-50 % batch to batch
        return (250 + 150 * math.sin(2 * math.pi * t / DAY)) * noise.uniform(0.5, 1.5)

    job = Job(4, 100.0, arrival, max_rows=None)
    run_start, last_change, changes = 0.0, None, []
    now = 0.0
    while now < DAY:
        now += 60.0
        decision = evaluate(job, now, run_start, last_change)
        if decision.changes:
            if decision.direction == "down" and last_change is not None:
                assert now - last_change >= S.scale_down_interval
            changes.append((now, decision.direction, decision.target))
            job.restart(decision.target, 60.0)
            run_start = last_change = job.at
    assert 1 <= len(changes) <= 6, changes


def test_flink_38538_a_query_100_percent_busy_is_never_scaled_down() -> None:
    # back to back (no trigger): 3 quick batches of 1000 rows, 2 of 10 rows taking 2.5 s (a
    # state-heavy batch): the median rate says 1000 rows/s, 38 % of capacity, yet it is busy
    def rows(i: int, at: float) -> int:
        return 1000 if i % 5 < 3 else 10

    def duration(i: int, at: float) -> float:
        return 1.0 if i % 5 < 3 else 2.5

    points, at, index = [], 0.0, 0
    while at < 2000:
        points += batches(at, at + 1, 1, rows(index, at), duration(index, at), first_batch=index)
        at += duration(index, at)
        index += 1
    metrics = query_metrics("q", points, S, 2000.0, 0.0, None)
    assert metrics.busy_share == pytest.approx(1.0) and metrics.processing_rate == 1000.0
    decision = decide([metrics], 8, S, 2000.0, 0.0)
    assert (decision.target, decision.blocked_by) == (8, "busy"), decision.reason


def test_flink_32002_a_nearly_idle_query_is_not_scaled_down_aggressively() -> None:
    tiny = Job(8, 250.0, lambda t: 0.33, trigger_s=120.0)  # 40 rows in 20 ms per batch
    unknown = evaluate(tiny, 700.0, 0.0, trigger_ms=120_000)
    assert (unknown.target, unknown.blocked_by) == (8, "unknown-rate"), unknown.reason
    fast = Job(8, 1250.0, lambda t: 200.0)  # 2000 rows in 0.2 s: 10000 rows/s (inflated)
    bounded = evaluate(fast, 700.0, 0.0)
    assert (bounded.direction, bounded.target) == ("down", 4), "wants 1; 8 x (1 - 0.6)"


def test_flink_31318_no_loop_while_a_backlog_is_worked_off_on_schedule() -> None:
    tight = settings(metrics_window=600.0, stabilization_interval=60.0, utilization_max=0.8)
    job = Job(6, 100.0, lambda t: 400.0, max_rows=6000, backlog=300_000.0)
    job.at = 60.0  # scaled up at 0, restarted by 60
    decisions = []
    for now in range(720, 3600, 60):
        decisions.append(evaluate(job, float(now), 60.0, last_change=0.0, s=tight))
    assert not any(d.changes for d in decisions), [d.reason for d in decisions if d.changes]
    assert "catching-up" in {d.blocked_by for d in decisions}
    assert job.backlog == 0
    # the load drops while the backlog is still there: no scale-down either
    low = Job(6, 100.0, lambda t: 50.0, max_rows=6000, backlog=600_000.0)
    low.at = 60.0
    held = evaluate(low, 720.0, 60.0, last_change=0.0, s=tight)
    assert (held.target, held.blocked_by) == (6, "backlog"), held.reason


def test_flink_33764_batches_slowed_10x_by_gc_do_not_scale_up() -> None:
    tight = settings(metrics_window=600.0, stabilization_interval=60.0, utilization_max=0.8)
    job = Job(4, 100.0, lambda t: 280.0, slow=lambda i, at: 10.0 if i in (70, 71, 72) else 1.0)
    decision = evaluate(job, 1000.0, 0.0, s=tight)
    assert decision.target == 4, decision.reason
    assert decision.blocked_by == "outliers"
    assert decision.figures["queries"]["q"]["outliers"] == 3


def test_a_backlog_of_a_few_records_is_no_reason_to_scale_up() -> None:
    """Found by the benchmark: a file that arrived just before the evaluation made a backlog
    of 2 records, and what arrives during a restart (restart.time) counted as load, so a
    query at 40 % of its capacity was scaled up. As in Flink, the restart share sizes a
    change and never triggers one."""
    from flinkish_cli.autoscaler.metrics import QueryMetrics

    s = replace(S, catch_up_duration=180.0, utilization_max=0.8, utilization_min=0.3)
    metrics = QueryMetrics(
        "enriched", batches=24, outliers=0, window_seconds=120.0, window_complete=True,
        input_rate=2.6, busy_share=0.4, processing_rate=6.5, rate_busy_seconds=48.0,
        raw_processing_rate=6.5, backlog=2.0, backlog_start=0.0, backlog_growth=0.0,
        idle=False,
    )  # fmt: skip
    decision = decide([metrics], 1, s, now=1000.0, run_start=0.0)
    assert (decision.direction, decision.blocked_by) == ("none", None), decision.reason
    assert "Within target" in decision.reason


#: The benchmark's keys (benchmarks/autoscale.py; restart.time at its 5 min default).
BENCH = replace(
    S,
    metrics_window=120.0,
    stabilization_interval=60.0,
    scale_down_interval=300.0,
    catch_up_duration=180.0,
    scale_down_max_factor=0.9,
    utilization_target=0.4,
    utilization_min=0.3,
    utilization_max=0.8,
    max_parallelism=6,
)


def bench_metrics(**changes: object) -> QueryMetrics:
    """The benchmark's query after the step, at parallelism 4: 2 rows/s, 10 rows a 5 s
    trigger in 0.9 s: 11.1 rows/s (2.8 per slot), 18 % busy."""
    figures = dict(
        batches=24, outliers=0, window_seconds=120.0, window_complete=True, input_rate=2.0,
        busy_share=0.18, processing_rate=2.0 / 0.18, rate_busy_seconds=21.6,
        raw_processing_rate=2.0 / 0.18, backlog=0.0, backlog_start=0.0, backlog_growth=0.0,
        idle=False,
    )  # fmt: skip
    return QueryMetrics("enriched", **{**figures, **changes})  # type: ignore[arg-type]


def bench_history() -> list[RescaleRecord]:
    """The benchmark's scale-up, decided 646 s into the schedule at parallelism 1 from a
    true rate of 6.1 rows/s over a full window (its figures are in the record)."""
    at_1 = bench_metrics(input_rate=5.1, busy_share=0.84, processing_rate=6.1, backlog=106.0)
    up = decide([at_1], 1, BENCH, now=646.0, run_start=0.0)
    assert (up.direction, up.target) == ("up", 4), up.reason
    return [rescale_record(up, BENCH, 646.0)]


def bench_down(
    measured: list[Measured],
    s: AutoscalerSettings = BENCH,
    allowed: set[int] | None = None,
    **changes: object,
) -> Decision:
    """The benchmark's scale-down evaluation, 1320 s in; the scale-up ended at 791 s."""
    metrics = [bench_metrics(**changes)]
    return decide(metrics, 4, s, 1320.0, 791.0, 791.0, allowed, measured)


def test_a_scale_down_is_sized_with_the_rate_the_job_measured_at_a_smaller_parallelism() -> None:
    """Found by the benchmark: linearly, 11.1 rows/s at 4 is 2.8 per slot, so the low input
    (2 rows/s at 40 % and what arrives in a 300 s restart within 180 s: 8.3 rows/s) wanted 3
    slots; the job measured 6.1 rows/s at 1 before its scale-up, and 2 slots of that are
    12.2 rows/s. One slot (6.1) would be below the target utilisation: never taken."""
    linear = bench_down([])
    assert (linear.direction, linear.target) == ("down", 3), linear.reason
    assert "measured" not in linear.figures
    down = bench_down(measured_rates(bench_history()))
    assert (down.direction, down.target) == ("down", 2), down.reason
    assert (
        "ran at 6.1 rows/s at parallelism 1 11 min ago (6.1 a slot, 2.8 a slot at 4 now; "
        "linearly it wanted 3)" in down.reason
    )
    assert down.figures["measured"]["enriched"] == {
        "parallelism": 1, "processing_rate": 6.1, "time": 646_000, "linear": 3,
    }  # fmt: skip
    # at 2 (about 8.7 rows/s, 23 % busy) the measurement at 1 still says 1 slot is too few
    at_2 = decide(
        [bench_metrics(processing_rate=8.7, busy_share=0.23)], 2, BENCH, 1700.0, 1336.0,
        last_change=1336.0, measured=measured_rates(bench_history()),
    )  # fmt: skip
    assert (at_2.direction, at_2.target) == ("none", 2), at_2.reason
    # a lighter load: the measurement at 1 fits it, the linear rule wanted 2
    light = bench_down(measured_rates(bench_history()), input_rate=1.0, processing_rate=10.0)
    assert (light.target, light.figures["measured"]["enriched"]["linear"]) == (1, 2)


def test_a_measurement_stale_of_another_query_too_short_or_not_smaller_is_ignored() -> None:
    (good,) = measured_rates(bench_history())
    assert bench_down([good]).target == 2
    ignored = {
        "stale": replace(good, time=1320.0 - HISTORY_MAX_AGE - 1),
        "from the future": replace(good, time=1400.0),
        "another query": replace(good, query="other"),
        "a window not full": replace(good, window_complete=False),
        "a shorter window": replace(good, window_seconds=60.0),
        "an unknown rate": replace(good, processing_rate=None),
        "at the current parallelism": replace(good, parallelism=4, processing_rate=30.0),
        "slower per slot than now": replace(good, parallelism=2, processing_rate=5.0),
    }
    for why, measured in ignored.items():
        decision = bench_down([measured])
        assert (decision.target, "measured" in decision.figures) == (3, False), why
    # of several, the lowest rate per slot: 7.0 at 2 is 3.5 a slot, two slots of it too few
    assert bench_down([good, replace(good, parallelism=2, processing_rate=7.0)]).target == 3
    # figures it cannot read are left out
    damaged = bench_history()[0]
    damaged.figures["queries"] = {"enriched": {"processing_rate": "fast"}, "x": None}
    assert measured_rates([damaged]) == []
    assert measured_rates([replace(damaged, figures={"queries": [1]})]) == []


def test_a_measurement_bypasses_no_guard_and_never_sizes_a_scale_up() -> None:
    measured = measured_rates(bench_history())
    held = {
        "scale-down-interval": decide(
            [bench_metrics()], 4, BENCH, 1000.0, 791.0, last_change=791.0, measured=measured
        ),
        # 200 records: 100 s of input, 28 % busy with them
        "backlog": bench_down(measured, replace(BENCH, lag_threshold=60.0), backlog=200.0),
        "busy": bench_down(measured, busy_share=0.96),
        "unknown-rate": bench_down(measured, processing_rate=None),
    }
    for guard, decision in held.items():
        assert (decision.target, decision.blocked_by) == (4, guard), decision.reason
    factor = bench_down(measured, s=replace(BENCH, scale_down_max_factor=0.25))
    assert factor.target == 3  # wants 2; 4 x (1 - 0.25)
    assert bench_down(measured, s=replace(BENCH, min_parallelism=3)).target == 3
    assert bench_down(measured, allowed={3, 4, 6}).target == 3
    assert bench_down(measured, allowed={4, 6}).target == 4
    # above utilization.max: a measurement at 1 does not change a scale-up's size
    busy = {"input_rate": 10.0, "busy_share": 0.9}
    up = [bench_down(m, **busy) for m in (measured, [])]
    assert up[0].direction == "up" and up[0].target == up[1].target, up[0].reason


def restarted(
    at: float, seconds: float | None, outcome: Outcome = Outcome.COMPLETED
) -> RescaleRecord:
    """A rescale decided at ``at`` (epoch s) whose restart took ``seconds`` (None: not
    measured)."""
    record = RescaleRecord.new(at, 2, 4, "up", "Scale up.", {}, True)
    record.outcome, record.end_time = outcome, int((at + 60) * 1000)
    record.restart_duration = None if seconds is None else round(seconds * 1000)
    return record


TRACKING = replace(S, restart_time_tracking=True)


def test_the_learnt_restart_time_is_the_longest_recent_measured_one_at_most_the_limit() -> None:
    now = 10 * DAY
    hour = 3600.0
    three = [restarted(now - 3 * hour, 90.0), restarted(now - 2 * hour, 40.0)]
    three.append(restarted(now - hour, 60.0))
    assert restart_time(S, three, now) == 300.0, "off by default: restart.time as configured"
    assert restart_time(TRACKING, three, now) == 90.0, "the longest of the recent ones"
    # of the measured ones the newest 3 count: a longer, older fourth no longer does
    assert restart_time(TRACKING, [restarted(now - 4 * hour, 200.0), *three], now) == 90.0
    # more than a day old: left out, unless it is the newest measured one
    stale = restarted(now - DAY - 1, 200.0)
    assert restart_time(TRACKING, [stale, *three[1:]], now) == 60.0
    assert restart_time(TRACKING, [stale], now) == 200.0
    # capped by restart.time-tracking.limit (15 min by default)
    slow = [*three, restarted(now - 60, 1500.0)]
    assert restart_time(TRACKING, slow, now) == 900.0
    assert restart_time(replace(TRACKING, restart_time_limit=45.0), three, now) == 45.0
    # nothing measured (a metrics-only, rolled-back or older record): restart.time
    unmeasured = [restarted(now - hour, None), restarted(now - 60, None, Outcome.ROLLED_BACK)]
    assert restart_time(TRACKING, unmeasured, now) == 300.0
    assert restart_time(TRACKING, [], now) == 300.0
    # read back from the rescale history file
    history = RescaleHistory()
    for record in [*unmeasured, *three]:
        history.append(record)
    read = RescaleHistory.from_json(history.to_json()).rescales
    assert restart_time(TRACKING, read, now) == 90.0


def catching_up(**changes: object) -> QueryMetrics:
    """At 2, 200 rows/s true rate, 180 rows/s of input and a backlog of 54000 shrinking by
    30 rows/s: 90 % busy without the backlog, 105 % with its share of catch-up.duration
    (30 rows/s): above utilization.max, and 1800 s from gone."""
    figures = dict(
        batches=60, outliers=0, window_seconds=600.0, window_complete=True, input_rate=180.0,
        busy_share=0.9, processing_rate=200.0, rate_busy_seconds=540.0,
        raw_processing_rate=200.0, backlog=54_000.0, backlog_start=72_000.0,
        backlog_growth=-30.0, idle=False,
    )  # fmt: skip
    return QueryMetrics("q", **{**figures, **changes})  # type: ignore[arg-type]


def test_decide_sizes_with_the_learnt_restart_time_and_sets_the_deadline_by_it() -> None:
    # sizing: 30 rows/s of backlog + 180 x restart / 1800 + 180 / 0.7, over 100 rows/s a slot
    quiet = catching_up(backlog_growth=5.0)  # the backlog grows: never on schedule
    configured = decide([quiet], 2, S, 700.0, 0.0, 0.0)
    assert configured.figures["restart_time"] == 300.0
    assert (configured.direction, configured.target) == ("up", 4), configured.reason  # 3.2
    learnt = decide([quiet], 2, S, 700.0, 0.0, 0.0, restart=30.0)
    assert learnt.figures["restart_time"] == 30.0
    assert (learnt.direction, learnt.target) == ("up", 3), learnt.reason  # 2.9
    longer = decide([quiet], 2, S, 700.0, 0.0, 0.0, restart=1800.0)
    assert longer.target == 5  # 4.7
    # the catch-up deadline, 0 + restart + 1800 s: the backlog is gone 1800 s from now (700)
    draining = catching_up()
    assert decide([draining], 2, S, 700.0, 0.0, 0.0).direction == "up", "due by 2100: late"
    held = decide([draining], 2, S, 700.0, 0.0, 0.0, restart=900.0)
    assert (held.target, held.blocked_by) == (2, "catching-up"), held.reason
    # None is restart.time, whatever the tracking
    assert decide([quiet], 2, TRACKING, 700.0, 0.0, 0.0).figures["restart_time"] == 300.0
