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
        )
