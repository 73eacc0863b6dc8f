"""Restart strategies, checkpoint rules and checkpoint retention on real Spark."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of, read_json_dir, write_events

pytestmark = pytest.mark.spark

FLAKY = str(JOBS / "flaky_sink.py")


def _input(env: FlinkishEnv, files: int = 2) -> Path:
    inputs = env.root / "in"
    for index in range(files):
        write_events(
            inputs, [{"key": "k", "value": i, "seq": i} for i in range(index * 5, index * 5 + 5)]
        )
    return inputs


def _status(env: FlinkishEnv, job_id: str) -> dict:
    return json.loads((env.checkpoints / job_id / "_flinkish" / "status.json").read_text())


def _rows(output: Path) -> list[dict]:
    return [r for d in sorted((output / "rows").glob("batch=*")) for r in read_json_dir(d)]


def test_sink_failing_n_times_recovers_within_the_attempts(flinkish_env: FlinkishEnv) -> None:
    env = flinkish_env
    env.write_conf(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 2,
            "restart-strategy.fixed-delay.delay": "1 s",
            "execution.runtime-mode": "BATCH",
        }
    )
    inputs, output = _input(env), env.root / "out"
    result = env.run("run", FLAKY, str(inputs), str(output), "2", check=True)
    job_id = job_id_of(result.stdout)
    status = _status(env, job_id)
    assert status["state"] == "FINISHED"
    assert status["restarts"] == 2
    assert sorted(r["seq"] for r in _rows(output)) == list(range(10))


def test_sink_failing_beyond_the_attempts_fails_the_job(flinkish_env: FlinkishEnv) -> None:
    env = flinkish_env
    env.write_conf(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 1,
            "restart-strategy.fixed-delay.delay": "1 s",
            "execution.runtime-mode": "BATCH",
        }
    )
    inputs, output = _input(env), env.root / "out"
    result = env.run("run", FLAKY, str(inputs), str(output), "3", check=False)
    assert result.returncode == 1
    assert "sink unavailable (failure 2 of 3)" in result.stderr
    assert "fixed-delay strategy gave up after 1 restart attempts" in result.stderr
    assert "Traceback" not in result.stderr
    job_id = job_id_of(result.stdout)
    assert _status(env, job_id)["restarts"] == 1
    job = env.job(job_id)
    assert job["state"] == "FAILED"
    assert "sink unavailable" in job["failure-cause"]
    assert len(list((output / "_failures").iterdir())) == 2, "no restart beyond the attempts"
    # the exception history keeps both failures, the restarted one and the last
    history = job["exceptions"]
    assert [(e["attempt"], e["query"]) for e in history] == [(0, "flaky"), (1, "flaky")]
    assert "(failure 1 of 3)" in history[0]["cause"] and "(failure 2 of 3)" in history[1]["cause"]
    assert history[0]["timestamp"] <= history[1]["timestamp"]


def test_failure_in_first_batch_restarts_with_the_default_strategy_and_shows_restarting(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env  # checkpointing interval set, no strategy: exponential-delay (Flink 2)
    env.write_conf(
        {
            "restart-strategy.type": None,  # unset: Flink 2's default applies
            "restart-strategy.exponential-delay.initial-backoff": "3 s",
        }
    )
    inputs, output = _input(env), env.root / "out"
    job_id = job_id_of(
        env.run("run", "-d", FLAKY, str(inputs), str(output), "1", check=True).stdout
    )
    env.wait_for_state(job_id, {"RESTARTING"}, timeout=60)
    listing = env.run("list", check=True).stdout
    assert f" : {job_id} : flaky_sink (RESTARTING)" in listing
    env.wait_for_state(job_id, {"RUNNING"}, timeout=60)
    deadline = time.monotonic() + 120
    while len(_rows(output)) < 10:
        assert time.monotonic() < deadline, "the restarted job processed nothing"
        time.sleep(0.5)
    env.run("cancel", job_id, check=True)
    assert _status(env, job_id)["restarts"] == 1


def test_checkpoint_timeout_beyond_the_tolerable_failures_fails_the_job(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf(
        {
            "execution.checkpointing.timeout": "1 s",
            "execution.checkpointing.tolerable-failed-checkpoints": 0,
            "restart-strategy.type": "none",
        }
    )
    inputs, output = _input(env, 1), env.root / "out"
    result = env.run("run", FLAKY, str(inputs), str(output), "0", "6", check=False)
    assert result.returncode == 1
    assert "Exceeded the tolerable failed checkpoints" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_job_stuck_in_a_batch_fails_the_health_check_and_its_strategy_decides(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf(
        {
            # the operator's key, a synonym of flinkish.health-check.checkpoint-progress.window
            "kubernetes.operator.cluster.health-check.checkpoint-progress.window": "2 s",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 1,
            "restart-strategy.fixed-delay.delay": "1 s",
        }
    )
    inputs, output = _input(env, 3), env.root / "out"
    result = env.run("run", FLAKY, str(inputs), str(output), "0", "8", check=False)
    assert result.returncode == 1
    assert "no checkpoint progress for 2 s" in result.stderr
    assert "Traceback" not in result.stderr
    job = env.job(job_id_of(result.stdout))
    assert job["state"] == "FAILED" and job["restarts"] == 1  # restarted once, as told
    causes = [e["cause"] for e in job["exceptions"]]
    assert len(causes) == 2 and all("no checkpoint progress for 2 s" in c for c in causes)


def test_slow_checkpoints_within_the_tolerable_failures_keep_the_job(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf(
        {
            "execution.checkpointing.timeout": "1 s",
            "execution.checkpointing.tolerable-failed-checkpoints": 5,
            "restart-strategy.type": "none",
            "execution.runtime-mode": "BATCH",
        }
    )
    inputs, output = _input(env, 2), env.root / "out"
    env.run("run", FLAKY, str(inputs), str(output), "0", "2", check=True)
    assert sorted(r["seq"] for r in _rows(output)) == list(range(10))


@pytest.mark.parametrize(
    ("retention", "kept"),
    [("DELETE_ON_CANCELLATION", False), ("RETAIN_ON_CANCELLATION", True)],
)
def test_checkpoint_retention_on_cancel(flinkish_env: FlinkishEnv, retention, kept) -> None:
    env = flinkish_env
    env.write_conf({"execution.checkpointing.externalized-checkpoint-retention": retention})
    inputs, output = _input(env), env.root / "out"
    job_id = job_id_of(
        env.run("run", "-d", FLAKY, str(inputs), str(output), "0", check=True).stdout
    )
    env.wait_for_batches(job_id, "flaky", 0)
    env.run("cancel", job_id, check=True)
    assert (env.checkpoints / job_id / "flaky").exists() is kept
    assert (env.checkpoints / job_id / "_flinkish" / "status.json").exists()
