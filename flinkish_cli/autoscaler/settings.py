"""The ``job.autoscaler.*`` keys as one typed value, read once from the configuration.

Durations are float seconds; the defaults, the ranges and the rules between keys are the
option table's (:mod:`flinkish_cli.config.options`), so a bad value never gets this far:
the configuration loader refuses it with the table's message. ``utilization_min`` and
``utilization_max`` are Flink's: set, or derived as the target ∓ the boundary within [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

from flinkish_cli.config.mappings import Lookup

PREFIX = "job.autoscaler."


@dataclass(frozen=True)
class AutoscalerSettings:
    """What the autoscaler is told to do (see each key's description in the option table)."""

    enabled: bool
    #: False: metrics-only, decisions are recorded (NOT_APPLIED) and never applied
    scaling_enabled: bool
    interval: float
    metrics_window: float
    stabilization_interval: float
    utilization_target: float
    utilization_min: float
    utilization_max: float
    scale_up_max_factor: float
    scale_down_max_factor: float
    scale_down_interval: float
    min_parallelism: int
    max_parallelism: int
    catch_up_duration: float
    restart_time: float
    lag_threshold: float
    #: size with the restart times the job measured (restart.time-tracking.enabled)
    restart_time_tracking: bool
    #: the most a measured restart time counts for (restart.time-tracking.limit)
    restart_time_limit: float

    @classmethod
    def from_config(cls, config: Lookup) -> AutoscalerSettings:
        """The settings in effect in ``config`` (a Configuration, or any Lookup of it)."""

        def seconds(key: str) -> float:
            return float(config.get(PREFIX + key).total_seconds())

        def number(key: str) -> float:
            return float(config.get(PREFIX + key))

        return cls(
            enabled=bool(config.get(PREFIX + "enabled")),
            scaling_enabled=bool(config.get(PREFIX + "scaling.enabled")),
            interval=seconds("interval"),
            metrics_window=seconds("metrics.window"),
            stabilization_interval=seconds("stabilization.interval"),
            utilization_target=number("utilization.target"),
            utilization_min=number("utilization.min"),
            utilization_max=number("utilization.max"),
            scale_up_max_factor=number("scale-up.max-factor"),
            scale_down_max_factor=number("scale-down.max-factor"),
            scale_down_interval=seconds("scale-down.interval"),
            min_parallelism=int(config.get(PREFIX + "vertex.min-parallelism")),
            max_parallelism=int(config.get(PREFIX + "vertex.max-parallelism")),
            catch_up_duration=seconds("catch-up.duration"),
            restart_time=seconds("restart.time"),
            lag_threshold=seconds("backlog-processing.lag-threshold"),
            restart_time_tracking=bool(config.get(PREFIX + "restart.time-tracking.enabled")),
            restart_time_limit=seconds("restart.time-tracking.limit"),
        )

    @property
    def applies(self) -> bool:
        """The autoscaler runs and applies its decisions (not metrics-only)."""
        return self.enabled and self.scaling_enabled


def check_can_scale(config: Lookup) -> None:
    """Refuse, at ``run``, a job the autoscaler is told to rescale but could not: an
    in-place rescale repartitions the job's state offline, which Spark does only for the
    RocksDB state store (:class:`~flinkish_cli.errors.ConfigError` with the advice)."""
    from flinkish_cli.errors import ConfigError

    if not AutoscalerSettings.from_config(config).applies:
        return
    backend = str(config.get("state.backend.type") or "hashmap").lower()
    if backend != "rocksdb":
        raise ConfigError(
            f"job.autoscaler.enabled rescales the job in place, but state.backend.type is "
            f"'{backend}': Spark repartitions a query's state to a new parallelism only in "
            "the RocksDB state store.",
            "Set state.backend.type: rocksdb, or job.autoscaler.scaling.enabled: false to "
            "only record the autoscaler's decisions.",
        )
