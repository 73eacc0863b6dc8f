"""The driver's state machine at its seam, in-process: :class:`JobRuntime` built from one
:class:`RuntimeSettings` and its collaborators given (:class:`JobParts`), with doubles for
the queries, attempts, savepoints, the JVM watch and the metrics probe, and the rest real
(the status keeper on a registry in a temporary directory, the checkpoint rules' watcher).
It shows the settings reach the state machine, the state machine drives the parts it was
given (no others), and the parts that call back into it are connected: a checkpoint rule
fails the attempt and stops the queries, the attempts see the job ending. No Spark, no
threads but the runtime's own; each test runs in well under a second."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flinkish_cli.plan.job import Entry, JobPlan
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver import job as job_module
from flinkish_cli.runtime.driver.attempts import CheckpointsFailed, NoCheckpointProgress
from flinkish_cli.runtime.driver.job import JobRuntime
from flinkish_cli.runtime.driver.parts import JobParts, RuntimeSettings
from flinkish_cli.runtime.queries.checkpoint_rules import BatchWatcher, CheckpointRules
from flinkish_cli.runtime.status_keeper import StatusKeeper

JOB = "5e" * 16


class Queries:
    """The job's queries without Spark: none running; records what it is asked."""

    def __init__(self) -> None:
        self.handles: dict[str, Any] = {}
        self.last_batch: dict[str, int] = {}
        self.has_run = True
        self.spark = None
        self.restorer = SimpleNamespace(restored={})
        self.graphs = SimpleNamespace(record_pending=lambda handles: None)
        self.stopped = threading.Event()
        self.asked: list[str] = []

    def footprint_targets(self) -> list[Any]:
        return []

    def stopping(self) -> None:
        self.asked.append("stopping")

    def stop_all(self, graceful: bool) -> None:
        self.asked.append(f"stop_all graceful={graceful}")
        self.stopped.set()

    def reconcile(self) -> None:
        self.asked.append("reconcile")


class Attempts:
    """The program's attempts: records the failures it is given and the end it remembers."""

    def __init__(self) -> None:
        self.failures: list[BaseException] = []
        self.remembered: list[tuple[str, int]] = []
        self.ending: Any = None  # the runtime connects it

    def fail(self, failure: BaseException) -> bool:
        self.failures.append(failure)
        return len(self.failures) == 1

    def remember_end(self, error: BaseException, cause: str, history_size: int) -> None:
        self.remembered.append((cause, history_size))


class Snapshots:
    def __init__(self) -> None:
        self.taken: list[str] = []

    def take_savepoint(self, target: str, trigger: Any, explicit: bool) -> str:
        self.taken.append(target)
        return f"{target}/savepoint-1"


class Jvm:
    parent = 1

    def __init__(self) -> None:
        self.gone = False

    def lost(self, confirm: bool = False) -> bool:
        return self.gone


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[JobRuntime, JobParts]]:
    monkeypatch.setattr(job_module, "CANCEL_GRACE", 5.0)  # the end in each test comes first
    root = str(tmp_path / "checkpoints")
    plan = JobPlan(
        job_id=JOB, name="seam", entry=Entry(kind="module", target="jobs.counts"),
        checkpoint_root=root, flink_conf={}, master="local[2]", parallelism=2,
    )  # fmt: skip
    registry = JobRegistry.open(root)
    settings = RuntimeSettings(history_size=4)
    parts = JobParts(
        registry=registry,
        flavour=SimpleNamespace(name="classic", driver_owns_jvm=True, remote=False),
        keeper=StatusKeeper(plan, registry),
        rule_watcher=BatchWatcher(CheckpointRules(), lambda cause: None),
        queries=Queries(),
        snapshots=Snapshots(),
        jvm=Jvm(),
        attempts=Attempts(),
        probe=SimpleNamespace(measure=lambda now, interval: None),
    )  # type: ignore[arg-type]
    runtime = JobRuntime(plan, settings, parts)
    runtime.keeper.set_state(JobState.RUNNING)
    yield runtime, parts
    if not runtime.status.state.is_terminal:
        runtime.end(None)


def test_the_state_machine_is_the_parts_it_was_given(built: tuple[JobRuntime, JobParts]) -> None:
    runtime, parts = built
    assert runtime.queries is parts.queries and runtime.attempts is parts.attempts
    assert runtime.keeper is parts.keeper and runtime.registry is parts.registry
    assert runtime.trigger_savepoint("/sp") == "/sp/savepoint-1"
    assert parts.snapshots.taken == ["/sp"]  # type: ignore[attr-defined]


def test_a_failing_checkpoint_rule_fails_the_attempt_and_stops_the_queries(
    built: tuple[JobRuntime, JobParts],
) -> None:
    _, parts = built  # the runtime connected the watcher to itself when it was built
    parts.rule_watcher.fail("3 checkpoints failed")
    parts.rule_watcher.stalled("no progress")  # type: ignore[misc]
    assert parts.queries.stopped.wait(30)  # type: ignore[attr-defined]
    first, second = parts.attempts.failures  # type: ignore[attr-defined]
    assert isinstance(first, CheckpointsFailed) and "3 checkpoints failed" in str(first)
    assert isinstance(second, NoCheckpointProgress)
    assert parts.queries.asked == ["stop_all graceful=False"]  # type: ignore[attr-defined]


def test_the_attempts_see_the_job_ending(built: tuple[JobRuntime, JobParts]) -> None:
    runtime, parts = built
    assert parts.attempts.ending() is False
    assert runtime.request_end(JobState.CANCELED, "By hand.", graceful=True)
    assert parts.attempts.ending() is True
    assert parts.queries.stopped.wait(30)  # type: ignore[attr-defined]
    assert runtime.end(None) is JobState.CANCELED
    assert parts.registry.find(JOB).state is JobState.CANCELED  # type: ignore[union-attr]


def test_a_failed_end_is_remembered_with_the_settings_history_size(
    built: tuple[JobRuntime, JobParts],
) -> None:
    runtime, parts = built
    parts.jvm.gone = True  # type: ignore[attr-defined]
    assert runtime.spark_lost()
    assert runtime.end(ValueError("boom")) is JobState.FAILED
    [(cause, size)] = parts.attempts.remembered  # type: ignore[attr-defined]
    assert "boom" in cause and size == 4
    assert parts.queries.asked[-1] == "reconcile"  # type: ignore[attr-defined]
    recorded = parts.registry.find(JOB)
    assert recorded is not None and recorded.state is JobState.FAILED
