"""What a job's state machine (:class:`~.job.JobRuntime`) is built from: one settings value,
:class:`RuntimeSettings`, and its collaborators, :class:`JobParts`.

:func:`build_parts` is the one factory of the real collaborators (the driver's, in
:func:`~.driver.run_job`); a test builds :class:`~.job.JobRuntime` with doubles for any of
them instead. The collaborators that call back into the state machine (a checkpoint rule
failing the attempt, an attempt asking whether the job is ending) are connected to it when
it is built (:meth:`~.job.JobRuntime.connect`); the parts it drives with its own methods
(the control server, the autoscaler, the rescale watch) it builds itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver.attempts import Attempts
from flinkish_cli.runtime.driver.jvm_watch import JvmWatch
from flinkish_cli.runtime.driver.process_metrics import Probe, probe_for
from flinkish_cli.runtime.flavours.flavour import Flavour
from flinkish_cli.runtime.queries.checkpoint_rules import BatchWatcher, CheckpointRules
from flinkish_cli.runtime.queries.periodic import SavepointPolicy
from flinkish_cli.runtime.queries.queries import JobQueries
from flinkish_cli.runtime.queries.restoring import JobRestorer
from flinkish_cli.runtime.queries.snapshots import Snapshots
from flinkish_cli.runtime.restart import history_size
from flinkish_cli.runtime.status_keeper import StatusKeeper


@dataclass(frozen=True)
class RuntimeSettings:
    """What the job's configuration tells its runtime (:meth:`from_config`); the defaults
    are a job's with nothing periodic (no savepoints, sizes or JVM metrics, no autoscaler)."""

    rules: CheckpointRules = field(default_factory=CheckpointRules)
    history_size: int = 16  # web.exception-history-size
    policy: SavepointPolicy | None = None  # periodic savepoints and retention
    footprint_interval: float = 0.0  # flinkish.checkpoint.size.interval
    jvm_interval: float = 0.0  # flinkish.metrics.jvm.interval
    readiness: float = 300.0  # flinkish.upgrade.readiness.timeout
    autoscaler: AutoscalerSettings | None = None

    @classmethod
    def from_config(cls, config: Any) -> RuntimeSettings:
        return cls(
            rules=CheckpointRules.from_config(config),
            history_size=history_size(config),
            policy=SavepointPolicy.from_config(config),
            footprint_interval=config.get("flinkish.checkpoint.size.interval").total_seconds(),
            jvm_interval=config.get("flinkish.metrics.jvm.interval").total_seconds(),
            readiness=config.get("flinkish.upgrade.readiness.timeout").total_seconds(),
            autoscaler=AutoscalerSettings.from_config(config),
        )


@dataclass
class JobParts:
    """The collaborators of one job's state machine: its registry and Spark flavour, its
    status (``keeper``), the checkpoint rules' watcher, its queries, savepoints and
    checkpoints (``snapshots``), its attempts, the watch over Spark's JVM and the probe of
    the JVMs for ``/metrics``."""

    registry: JobRegistry
    flavour: Flavour
    keeper: StatusKeeper
    rule_watcher: BatchWatcher
    queries: JobQueries
    snapshots: Snapshots
    jvm: JvmWatch
    attempts: Attempts
    probe: Probe


def build_parts(
    plan: JobPlan,
    registry: JobRegistry,
    flavour: Flavour,
    storage: Any = None,
    settings: RuntimeSettings | None = None,
) -> JobParts:
    """The real collaborators of the job ``plan``: ``storage`` is the storage settings its
    checkpoints need (None: the registry's)."""
    given = settings or RuntimeSettings()
    keeper = StatusKeeper(plan, registry)
    watcher = BatchWatcher(given.rules, _unconnected)
    queries = JobQueries(
        plan,
        flavour,
        registry,
        storage,
        given.rules,
        keeper,
        JobRestorer(plan, storage, registry),
        watcher,
    )
    retention = given.policy and given.policy.retention
    snapshots = Snapshots(plan, registry, storage, queries, keeper, retention)
    jvm = JvmWatch(flavour, plan.deploy_mode)
    attempts = Attempts(plan, flavour, queries, keeper, watcher, jvm, lambda: False)
    probe = probe_for(flavour, plan.master, lambda: queries.spark)
    return JobParts(registry, flavour, keeper, watcher, queries, snapshots, jvm, attempts, probe)


def _unconnected(cause: str) -> None:
    raise RuntimeError(f"the checkpoint rules' watcher is not connected to a job: {cause}")
