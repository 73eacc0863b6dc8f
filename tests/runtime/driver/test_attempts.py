"""The attempts of a job's program (:class:`~flinkish_cli.runtime.driver.attempts.Attempts`) in this
process, with doubles of its queries, its status keeper and its JVM watch: which failure ends
an attempt, what a failure records for the restart strategy, and the wait before the next
attempt, checked in well under a second with no Spark. The scenarios in
test_driver_failover.py and test_fault_tolerance.py cover the same loop with real jobs."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from flinkish_cli.config import load_configuration
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.runtime.driver.attempts import Attempts, CheckpointsFailed, SparkLostError

JOB = "4d" * 16


@pytest.fixture(autouse=True)
def _test_modules_kept() -> Iterator[None]:
    """An attempt forgets the modules the job's program imported (not from site-packages),
    as a restarted driver must; here the driver is this test process, whose own modules
    (the tests', the docs scripts') those are: put back what the attempts dropped."""
    kept = dict(sys.modules)
    yield
    for name, module in kept.items():
        sys.modules.setdefault(name, module)


class QueryDouble:
    def __init__(self, active: bool = False, error: BaseException | None = None) -> None:
        self.active = active
        self.error = error

    def exception(self) -> BaseException | None:
        return self.error


class QueriesDouble:
    """The job's queries: their handles, and what the attempts asked of them."""

    def __init__(self, **handles: QueryDouble) -> None:
        self.handles = handles
        self.cleared = 0

    def clear_attempt(self) -> None:
        self.cleared += 1

    def failed_query(self) -> str | None:
        return None


class KeeperDouble:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.status = JobStatus(job_id=JOB, name="counts", state=JobState.RUNNING)
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


class JvmDouble:
    def __init__(self) -> None:
        self.gone = False

    def lost(self, confirm: bool = False) -> bool:
        return self.gone


def _attempts(queries: QueriesDouble, ending: list[bool] | None = None) -> Attempts:
    asked = ending if ending is not None else [False]
    attempts = Attempts(
        plan=cast(Any, None),
        flavour=cast(Any, None),
        queries=cast(Any, queries),
        keeper=cast(Any, KeeperDouble()),
        rule_watcher=cast(Any, None),
        jvm=cast(Any, JvmDouble()),
        ending=lambda: asked[0],
    )
    return attempts


def _is_active(query: Any) -> bool:
    return bool(query.active)


def test_the_first_failed_query_ends_the_attempt_and_is_named(monkeypatch: Any) -> None:
    monkeypatch.setattr("flinkish_cli.runtime.driver.attempts.is_active", _is_active)
    broken = RuntimeError("division by zero in a UDF")
    queries = QueriesDouble(clean=QueryDouble(), sums=QueryDouble(error=broken))
    attempts = _attempts(queries)
    assert attempts.wait_for_queries() is broken
    assert attempts.failed_query == "sums"


def test_a_rule_failure_wins_and_a_lost_jvm_is_spark_lost(monkeypatch: Any) -> None:
    monkeypatch.setattr("flinkish_cli.runtime.driver.attempts.is_active", _is_active)
    attempts = _attempts(QueriesDouble(sums=QueryDouble(active=True)))
    rule = CheckpointsFailed("3 consecutive checkpoints failed")
    assert attempts.fail(rule) is True
    assert attempts.fail(RuntimeError("a second one")) is False  # the first one stands
    assert attempts.wait_for_queries() is rule
    attempts.failure = None
    cast(JvmDouble, attempts.jvm).gone = True
    assert isinstance(attempts.wait_for_queries(), SparkLostError)


def test_a_query_that_fails_while_the_job_ends_is_no_failure(monkeypatch: Any) -> None:
    monkeypatch.setattr("flinkish_cli.runtime.driver.attempts.is_active", _is_active)
    queries = QueriesDouble(sums=QueryDouble(error=RuntimeError("stopped")))
    attempts = _attempts(queries, ending=[True])
    assert attempts.wait_for_queries() is None
    assert attempts.failed_query is None


def test_a_failure_is_recorded_once_and_restarts_while_the_strategy_allows(
    tmp_path: Path,
) -> None:
    config = load_configuration(
        tmp_path,
        dynamic=[
            "restart-strategy.type=fixed-delay",
            "restart-strategy.fixed-delay.attempts=1",
            "restart-strategy.fixed-delay.delay=2 s",
        ],
    )
    attempts = _attempts(QueriesDouble())
    keeper = cast(KeeperDouble, attempts.keeper)
    first = RuntimeError("the source went away")
    decision = attempts.record_failure(config, first, None)
    assert decision.restart and decision.delay == 2.0
    assert keeper.status.state is JobState.RESTARTING and keeper.status.restarts == 1
    assert keeper.flushes == 1  # a restart is written at once
    assert len(keeper.status.exceptions) == 1
    attempts.remember_end(first, "the source went away", 10)  # already in the history
    assert len(keeper.status.exceptions) == 1

    second = RuntimeError("the source went away again")
    decision = attempts.record_failure(config, second, None)
    assert not decision.restart  # one restart allowed, and used
    assert keeper.flushes == 1
    attempts.remember_end(RuntimeError("cancelled meanwhile"), "cancelled meanwhile", 10)
    assert len(keeper.status.exceptions) == 3


def test_the_wait_before_a_restart_clears_the_attempt_and_yields_to_an_end() -> None:
    queries = QueriesDouble()
    ending = [False]
    attempts = _attempts(queries, ending)
    assert attempts.restart_after(0) is True
    assert queries.cleared == 1
    ending[0] = True
    assert attempts.restart_after(30) is False  # a cancel during the wait: no restart
    assert queries.cleared == 2
