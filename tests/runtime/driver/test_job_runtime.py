"""The driver's state machine in this process: :class:`JobRuntime` built from its plan, a real
registry in a temporary directory, the classic flavour and one :class:`RuntimeSettings`
(its real parts, from :func:`build_parts`, as the driver builds it),
with its heartbeat and watcher threads running but no Spark (no query, no JVM). A cancel
asked through the control channel (the job client's own ``ask``) ends the job CANCELED in
the registry; a second end and a savepoint of the ending job are refused with the reason.
The Spark scenarios (test_driver_failover.py, test_fault_tolerance.py) cover the same
paths with a real program."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from flinkish_cli.client.asking import ask
from flinkish_cli.config import Configuration
from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import Entry, JobPlan
from flinkish_cli.registry import protocol
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver import job as job_module
from flinkish_cli.runtime.driver.job import JobRuntime
from flinkish_cli.runtime.driver.parts import RuntimeSettings, build_parts
from flinkish_cli.runtime.flavours import flavour as flavours

JOB = "4d" * 16


def test_the_runtimes_settings_come_from_the_jobs_configuration() -> None:
    config = Configuration.from_flat(
        {
            "flinkish.checkpoint.size.interval": "7 s",
            "flinkish.metrics.jvm.interval": "3 s",
            "flinkish.upgrade.readiness.timeout": "2 min",
            "web.exception-history-size": "4",
        }
    )
    settings = RuntimeSettings.from_config(config)
    assert (settings.footprint_interval, settings.jvm_interval) == (7.0, 3.0)
    assert (settings.readiness, settings.history_size) == (120.0, 4)
    assert settings.autoscaler is not None and not settings.autoscaler.enabled


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobRuntime]:
    """A running job's runtime whose program has reached its first wait."""
    monkeypatch.setattr(job_module, "CANCEL_GRACE", 5.0)  # the end below comes first
    root = str(tmp_path / "checkpoints")
    plan = JobPlan(
        job_id=JOB,
        name="counts",
        entry=Entry(kind="module", target="jobs.counts"),
        checkpoint_root=root,
        flink_conf={},
        master="local[1]",
    )
    registry = JobRegistry.open(root)
    settings = RuntimeSettings()
    parts = build_parts(plan, registry, flavours.by_name("classic"), None, settings)
    runtime = JobRuntime(plan, settings, parts)
    runtime.begin()
    runtime.keeper.set_state(JobState.RUNNING)
    runtime.queries.has_run = True
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: runtime.status.state.is_terminal or runtime.end(None))
        yield runtime


def test_a_cancel_through_the_control_channel_ends_the_job_canceled(
    runtime: JobRuntime,
) -> None:
    registry = JobRegistry.open(runtime.plan.checkpoint_root)
    answer = ask(registry, JOB, protocol.Cancel(), timeout=30, pause=0.02)
    assert answer.ok
    assert runtime.ending and runtime.status.state is JobState.CANCELLING
    again = ask(registry, JOB, protocol.Cancel(), timeout=30, pause=0.02)
    assert not again.ok
    assert again.error == f"Job {JOB} is already ending (CANCELLING)."
    with pytest.raises(JobError, match=r"Cannot take a savepoint of job .*: it is CANCELLING"):
        runtime.trigger_savepoint(str(Path(runtime.plan.checkpoint_root) / "sp"))
    assert runtime.end(None) is JobState.CANCELED
    recorded = registry.find(JOB)
    assert recorded is not None and recorded.state is JobState.CANCELED
