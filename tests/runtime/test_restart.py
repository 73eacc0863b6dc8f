"""Restart strategies: the decisions Flink's strategies make, for each failure."""

import random

from flinkish_cli.config import load_configuration
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.runtime.restart import (
    ExponentialDelay,
    FailureRate,
    FixedDelay,
    NoRestart,
    from_config,
    record_failure,
)


def test_fixed_delay_allows_exactly_its_attempts() -> None:
    strategy = FixedDelay(attempts=2, delay=3.0)
    assert [d.restart for d in (strategy.on_failure(t) for t in range(4))] == [
        True,
        True,
        False,
        False,
    ]
    assert FixedDelay(2, 3.0).on_failure(0).delay == 3.0
    assert "after 0 restart attempts" in FixedDelay(0, 1).on_failure(0).reason


def test_failure_rate_counts_failures_within_the_interval() -> None:
    strategy = FailureRate(max_failures=2, interval=60, delay=1)
    assert strategy.on_failure(0).restart
    assert strategy.on_failure(10).restart
    assert not strategy.on_failure(20).restart  # three within a minute
    fresh = FailureRate(max_failures=2, interval=60, delay=1)
    assert all(fresh.on_failure(t).restart for t in (0, 10, 100, 110, 200))


def test_exponential_delay_grows_caps_and_resets() -> None:
    strategy = ExponentialDelay(
        initial=1, maximum=5, multiplier=2, reset_threshold=100, jitter=0, attempts=10
    )
    delays = [strategy.on_failure(t).delay for t in range(5)]
    assert delays == [1, 2, 4, 5, 5]
    assert strategy.on_failure(200).delay == 1  # a quiet period resets the backoff


def test_exponential_delay_jitter_stays_within_its_factor() -> None:
    strategy = ExponentialDelay(
        initial=10,
        maximum=10,
        multiplier=1,
        reset_threshold=1e9,
        jitter=0.1,
        attempts=1000,
        rng=random.Random(7),
    )
    delays = [strategy.on_failure(t).delay for t in range(200)]
    assert all(9 <= d <= 10 for d in delays)
    assert len(set(delays)) > 100


def test_exponential_delay_gives_up_after_its_attempts() -> None:
    strategy = ExponentialDelay(1, 1, 1, 1e9, 0, attempts=2)
    assert [strategy.on_failure(t).restart for t in range(3)] == [True, True, False]


def test_strategy_from_configuration(tmp_path) -> None:
    def strategy(**flat: str):
        return from_config(
            load_configuration(tmp_path, dynamic=[f"{k}={v}" for k, v in flat.items()])
        )

    assert isinstance(strategy(), NoRestart)  # no checkpointing, no strategy: Flink's rule
    assert isinstance(strategy(**{"execution.checkpointing.interval": "1 s"}), ExponentialDelay)
    fixed = strategy(
        **{
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "2 s",
        }
    )
    assert fixed == FixedDelay(3, 2.0)
    assert isinstance(strategy(**{"restart-strategy.type": "none"}), NoRestart)
    rate = strategy(**{"restart-strategy.type": "failure-rate"})
    assert isinstance(rate, FailureRate)


def test_a_recorded_failure_joins_the_exception_history(tmp_path) -> None:
    config = load_configuration(
        tmp_path,
        dynamic=[
            "restart-strategy.type=fixed-delay",
            "restart-strategy.fixed-delay.attempts=1",
            "web.exception-history-size=1",
        ],
    )
    status = JobStatus(job_id="b" * 32, name="job")
    first = record_failure(config, status, "boom", 10.0, query="counts")
    assert first.restart and status.state is JobState.RESTARTING and status.restarts == 1
    second = record_failure(config, status, "boom again", 20.0)
    assert not second.restart and second.note.startswith("not restarted: fixed-delay")
    assert status.failure_times == [10.0, 20.0]
    assert status.exceptions == [  # bounded by web.exception-history-size
        {"timestamp": 20000, "attempt": 1, "query": None, "cause": "boom again"}
    ]


def test_a_job_failing_now_and_then_for_months_keeps_few_failure_times(tmp_path) -> None:
    """The failure times in the status are replayed at each failure: only those that still
    change a decision are kept (the list no longer grows with the job's age), and every
    decision is the one the whole history gives."""

    def config(**flat: str):
        return load_configuration(tmp_path, dynamic=[f"{k}={v}" for k, v in flat.items()])

    hour = 3600.0
    exponential = config(
        **{
            "execution.checkpointing.interval": "1 s",
            "restart-strategy.exponential-delay.reset-backoff-threshold": "1 h",
            "restart-strategy.exponential-delay.attempts-before-reset-backoff": "4",
        }
    )
    rate = config(
        **{
            "restart-strategy.type": "failure-rate",
            "restart-strategy.failure-rate.max-failures-per-interval": "3",
            "restart-strategy.failure-rate.failure-rate-interval": "1 h",
        }
    )
    # a burst of three failures every two hours, for a week
    times = [burst * 2 * hour + n * 60.0 for burst in range(12 * 7) for n in range(3)]
    for strategy_config in (exponential, rate):
        status = JobStatus(job_id="c" * 32, name="job")
        every = []
        for number, moment in enumerate(times):
            decision = record_failure(strategy_config, status, "boom", moment)
            every.append(moment)
            whole = from_config(strategy_config)
            for earlier in every[:-1]:
                whole.on_failure(earlier)
            assert decision.restart == whole.on_failure(moment).restart, number
            status.state = JobState.RUNNING
        assert len(status.failure_times) <= 3
    assert len(status.exceptions) <= 16
