"""``flinkish upgrade`` end to end, as a CI pipeline runs it, on real Spark: broken versions.

The pipeline deploys each version of the counting job over the same path (``app/``), then
runs ``flinkish upgrade <JobID> app/counts_job.py ...`` (or the upgrades guide's CI script)
and reads its lines and exit status. Everything is checked before the job is touched; three broken
versions (one raises at start, one fails its first batch, one never starts its queries) each
roll back to the previous program, which runs from the copy the registry kept although
``app/`` now holds the broken one; a good version becomes stable. Every input row reaches
Spark's file sink exactly once and the counts equal the ground truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.cycle import savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.upgrade_pipeline import (
    FAILS_FIRST_BATCH,
    GOOD,
    NEVER_STARTS,
    RAISES_AT_START,
    READINESS,
    ROLLED_BACK,
    STABLE,
    SUBMITTED,
    Pipeline,
)

pytestmark = pytest.mark.spark


def _refused(env: FlinkishEnv, pipeline: Pipeline, job: str, *args: str, says: str) -> None:
    """An upgrade refused before anything is touched: one message, exit 1, the old job
    RUNNING in the same driver, no new job, no savepoint. (The job's state is read as
    ``list -a --output json`` shows it, in this process: :meth:`FlinkishEnv.polled`.)"""
    pid = env.driver_pid(job)
    jobs_before = {p.name for p in env.checkpoints.iterdir()}
    result = env.run(*args, check=False)
    assert result.returncode == 1, result
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert env.polled(job)["state"] == "RUNNING" and env.driver_pid(job) == pid
    assert {p.name for p in env.checkpoints.iterdir()} == jobs_before
    assert not env.savepoints.exists() or not any(env.savepoints.iterdir())


def test_broken_versions_roll_back_and_a_good_one_upgrades_exactly_once(
    flinkish_env: FlinkishEnv,
) -> None:
    env, pipeline = flinkish_env, Pipeline(flinkish_env)
    cycle = pipeline.cycle
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed()

    # -- everything is checked before the job is touched
    (env.root / "a-file").write_text("not a directory")
    (env.root / "broken.py").write_text("def broken(:\n")
    refusals = [
        (["upgrade", "not-a-job-id", pipeline.script], "not-a-job-id"),
        (["upgrade", "0" * 32, pipeline.script], "0" * 32),
        (["upgrade", job, str(env.root / "missing.py")], "missing.py does not exist"),
        (["upgrade", job, str(env.root / "broken.py")], "is not valid Python"),
        (
            ["upgrade", "-D", "execution.checkpointing.interval=often", job, pipeline.script],
            "execution.checkpointing.interval",
        ),
        (
            ["upgrade", "--savepointPath", str(env.root / "a-file" / "sp"), job, pipeline.script],
            "is not writable",
        ),
        (["upgrade", "-s", str(env.savepoints), job, pipeline.script], "-s cannot be used"),
    ]
    for args, says in refusals:
        _refused(env, pipeline, job, *args, says=says)

    # -- a version that raises at start: rolled back to the previous program
    pipeline.deploy(RAISES_AT_START)
    env.write_conf({"flinkish.upgrade.readiness.timeout": "2 min"})  # as CI configures it
    first, recorded = pipeline.deploy_script(job)  # the upgrades guide's CI script
    assert first.returncode == 1, first
    assert "Rolled back: job" in first.stderr and "this deployment failed" in first.stderr
    rolled = ROLLED_BACK.search(first.stdout)
    assert rolled and recorded == rolled["back"], first.stdout
    assert rolled["old"] == job and "version 2 cannot start" in rolled["reason"]
    assert SUBMITTED.findall(first.stdout) == [rolled["new"], rolled["back"]]
    assert savepoint_path(first.stdout) == rolled["sp"]
    assert rolled["prog"].endswith("app/counts_job.py")
    back = rolled["back"]
    links = {j["jid"]: j for j in env.list_jobs()}
    assert links[back]["state"] == "RUNNING"
    assert links[job]["upgraded_to"] == rolled["new"]
    assert links[rolled["new"]]["upgraded_from"] == job
    assert links[rolled["new"]]["upgraded_to"] == back
    assert links[back]["upgraded_from"] == rolled["new"] and links[back]["rolled_back"] is True
    cycle.add_input(1)
    cycle.wait_until_all_processed()

    # -- a version that fails its first batch (its input arrives after the savepoint)
    pipeline.deploy(FAILS_FIRST_BATCH)
    status, second = pipeline.upgrade_with_input_after_savepoint(back, *READINESS)
    assert status == 1, second
    rolled = ROLLED_BACK.search(second)
    assert rolled and "version 3 cannot tag" in rolled["reason"], second
    back = rolled["back"]
    cycle.wait_until_all_processed()

    # -- a version that never starts its queries: not stable within the readiness timeout
    pipeline.deploy(NEVER_STARTS)
    timeout = ("-D", "kubernetes.operator.deployment.readiness.timeout=12 s")  # the operator's
    third = pipeline.upgrade(back, *timeout)
    assert third.returncode == 1, third
    rolled = ROLLED_BACK.search(third.stdout)
    assert rolled and "not stable within 12 s" in rolled["reason"], third.stdout
    back = rolled["back"]
    cycle.add_input(1)
    cycle.wait_until_all_processed()

    # -- a good version becomes stable; the pipeline goes on from it
    pipeline.deploy(GOOD)
    upgraded, recorded = pipeline.deploy_script(back)
    assert upgraded.returncode == 0, upgraded
    stable = STABLE.search(upgraded.stdout)
    assert stable and stable["old"] == back, upgraded.stdout
    final = stable["new"]
    assert recorded == final and f"Deployed: job {final} runs the new program." in upgraded.stdout
    cycle.add_input(2)
    cycle.wait_until_all_processed()
    listed = {j["jid"]: j for j in env.list_jobs()}
    assert listed[final]["state"] == "RUNNING" and listed[final]["upgraded_from"] == back
    # the replaced job's own checkpoints went once the new one was stable (the new job keeps
    # its own); its status stays, and the jobs that were rolled back from keep theirs
    assert "Deleted the checkpoints of the replaced job " + back in upgraded.stderr
    assert not list((env.checkpoints / back).glob("*/commits")), list(
        (env.checkpoints / back).iterdir()
    )
    assert list((env.checkpoints / final).glob("*/commits"))
    assert list((env.checkpoints / job).glob("*/commits"))
    assert listed[back]["state"] == "FINISHED"

    # the savepoint history follows the job across its upgrades: four, one per upgrade
    history = env.run("savepoint", "list", final, "--output", "json", check=True).stdout
    upgrades = [r for r in json.loads(history)["savepoints"] if r["trigger"] == "UPGRADE"]
    assert len(upgrades) == 4 and upgrades[0]["job_id"] == back
    assert all(
        r["state"] == "COMPLETED" and Path(r["path"], "_metadata").is_file() for r in upgrades
    )
    assert upgrades[-1]["job_id"] == job

    env.run("cancel", final, check=True)
    cycle.check_exactly_once()
