"""The autoscaler's keys: Flink's defaults, short durations, and bad values refused."""

from pathlib import Path

import pytest

from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.config import load_configuration
from flinkish_cli.config.model import Configuration
from flinkish_cli.errors import ConfigError


@pytest.fixture(autouse=True)
def _no_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty working directory, no FLINK_CONF_DIR: defaults and ``-D`` only."""
    monkeypatch.delenv("FLINK_CONF_DIR", raising=False)
    monkeypatch.chdir(tmp_path)


def test_defaults_are_flinks() -> None:
    settings = AutoscalerSettings.from_config(Configuration())
    assert settings == AutoscalerSettings(
        enabled=False,
        scaling_enabled=True,
        interval=10.0,
        metrics_window=900.0,
        stabilization_interval=300.0,
        utilization_target=0.7,
        utilization_min=pytest.approx(0.4),  # type: ignore[arg-type]
        utilization_max=1.0,
        scale_up_max_factor=100000.0,
        scale_down_max_factor=0.6,
        scale_down_interval=3600.0,
        min_parallelism=1,
        max_parallelism=200,
        catch_up_duration=1800.0,
        restart_time=300.0,
        lag_threshold=300.0,
        restart_time_tracking=False,
        restart_time_limit=900.0,
    )


def test_short_durations_and_the_standalone_synonym() -> None:
    config = load_configuration(
        dynamic=[
            "job.autoscaler.metrics.window=5 s",
            "job.autoscaler.stabilization.interval=500 ms",
            "autoscaler.standalone.control-loop.interval=2 s",
        ]
    )
    settings = AutoscalerSettings.from_config(config)
    assert (settings.metrics_window, settings.stabilization_interval) == (5.0, 0.5)
    assert settings.interval == 2.0


def test_min_and_max_derive_from_target_and_boundary_within_0_and_1() -> None:
    config = load_configuration(dynamic=["job.autoscaler.utilization.target=0.9"])
    settings = AutoscalerSettings.from_config(config)
    assert settings.utilization_min == pytest.approx(0.6)
    assert settings.utilization_max == 1.0  # 1.2, clamped; target 0.9 < 1 holds
    config = load_configuration(
        dynamic=["job.autoscaler.utilization.target=1", "job.autoscaler.utilization.min=0.5"]
    )
    assert AutoscalerSettings.from_config(config).utilization_max == 1.0  # derived: not checked


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("utilization.target=0", "is out of range; expected a fraction above 0 up to 1"),
        ("utilization.target=1.5", "is out of range; expected a fraction above 0 up to 1"),
        ("scale-down.max-factor=1", "is out of range; expected a fraction from 0 up to"),
        ("scale-up.max-factor=0", "is out of range; expected a number above 0"),
        ("vertex.min-parallelism=0", "is out of range; expected an integer ≥ 1"),
        ("utilization.max=1.2", "is out of range; expected a fraction from 0 to 1"),
        ("metrics.window=0 s", "is out of range; expected a duration above 0"),
        ("catch-up.duration=0 s", "is out of range; expected a duration above 0"),
        ("interval=soon", "is not a duration"),
        ("restart.time=-1 s", "is not a duration"),
        ("restart.time-tracking.limit=-5 min", "is not a duration"),
        ("restart.time-tracking.limit=soon", "is not a duration"),
        ("restart.time-tracking.enabled=maybe", "is not a boolean; expected true or false"),
    ],
)
def test_bad_values_are_refused_with_the_tables_message(setting: str, expected: str) -> None:
    key, value = setting.split("=")
    with pytest.raises(ConfigError) as caught:
        load_configuration(dynamic=[f"job.autoscaler.{setting}"])
    assert caught.value.message.startswith(f"-D: job.autoscaler.{key}: '{value}' {expected}")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            ["vertex.min-parallelism=8", "vertex.max-parallelism=4"],
            "job.autoscaler.vertex.max-parallelism ≥ job.autoscaler.vertex.min-parallelism",
        ),
        (
            ["utilization.min=0.7"],
            "job.autoscaler.utilization.min < job.autoscaler.utilization.target",
        ),
        (
            ["utilization.target=0.8", "utilization.max=0.6"],
            "job.autoscaler.utilization.max > job.autoscaler.utilization.target",
        ),
    ],
)
def test_rules_between_keys(settings: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_configuration(dynamic=[f"job.autoscaler.{s}" for s in settings])
    assert caught.value.message.endswith(f"expected {expected}")


def test_restart_time_tracking_is_flinks_keys() -> None:
    config = load_configuration(
        dynamic=[
            "job.autoscaler.restart.time-tracking.enabled=true",
            "job.autoscaler.restart.time-tracking.limit=2 min",
            "job.autoscaler.restart.time=30 s",
        ]
    )
    settings = AutoscalerSettings.from_config(config)
    assert (settings.restart_time_tracking, settings.restart_time_limit) == (True, 120.0)
    assert settings.restart_time == 30.0


def test_an_unknown_restart_time_tracking_key_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_configuration(dynamic=["job.autoscaler.restart.time-tracking.enable=true"])
    expected = "did you mean job.autoscaler.restart.time-tracking.enabled?"
    assert f"unknown configuration key; {expected}" in caught.value.message
