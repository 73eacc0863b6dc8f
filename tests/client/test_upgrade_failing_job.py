"""``flinkish upgrade`` of a failing job, as CI operates it, on real Spark: the fallback to
the last state (only with its key, never silently), ``--no-rollback``, a new program whose
output forbids a rollback, and a stateless upgrade; every row reaches the sink exactly once.
"""

from __future__ import annotations

import json

import pytest

from tests.fixtures.cycle import Cycle
from tests.fixtures.flinkish_env import FlinkishEnv, write_events
from tests.fixtures.upgrade_pipeline import (
    COMMITS_THEN_FAILS,
    ORIGINAL,
    POISON,
    RAISES_AT_START,
    READINESS,
    SUBMITTED,
    UNSTABLE,
    Pipeline,
)

pytestmark = pytest.mark.spark


def test_a_failing_job_upgraded_from_ci_never_loses_or_repeats_a_row(
    flinkish_env: FlinkishEnv,
) -> None:
    env, pipeline = flinkish_env, Pipeline(flinkish_env)
    cycle = pipeline.cycle
    pipeline.deploy(POISON)
    cycle.add_input(2)
    job = cycle.start()
    cycle.wait_until_all_processed()
    poison = {"key": "poison", "value": 0, "seq": len(cycle.rows)}
    cycle.rows.append(poison)
    write_events(cycle.inputs, [poison])
    env.wait_for_state(job, ["FAILED"])

    # a failed job takes no savepoint: refused, unless the fallback key allows last-state
    pipeline.deploy(ORIGINAL)
    jobs_before = {p.name for p in env.checkpoints.iterdir()}
    refused = pipeline.upgrade(job, *READINESS)
    assert refused.returncode == 1 and "only a running job takes one" in refused.stderr
    assert "--upgrade-mode last-state" in refused.stderr and "Traceback" not in refused.stderr
    assert {p.name for p in env.checkpoints.iterdir()} == jobs_before
    fallback = ("-D", "kubernetes.operator.job.upgrade.last-state-fallback.enabled=true")
    fixed = pipeline.upgrade(job, "--output", "json", *fallback, *READINESS)
    assert fixed.returncode == 0, fixed
    assert f"Job {job} cannot take a savepoint: it is FAILED." in fixed.stderr  # never silent
    outcome = json.loads(fixed.stdout)
    assert outcome["result"] == "STABLE" and outcome["upgrade-mode"] == "last-state"
    assert outcome["restored-from"] == str(env.checkpoints / job)
    assert outcome["jid"] == job and outcome["rollback-jid"] is None
    running = outcome["new-jid"]
    cycle.wait_until_all_processed()  # the poison row too, by the fixed program

    # --no-rollback: a new program that fails is left as it is; resumed by hand
    pipeline.deploy(RAISES_AT_START)
    left = pipeline.upgrade(running, "--no-rollback", *READINESS)
    assert left.returncode == 1, left
    unstable = UNSTABLE.search(left.stdout)
    assert unstable and "version 2 cannot start" in unstable["reason"], left.stdout
    assert SUBMITTED.findall(left.stdout) == [unstable["new"]], "no rollback job"
    assert env.job(unstable["new"])["state"] == "FAILED"
    pipeline.deploy(ORIGINAL)
    resumed = cycle.start("-s", unstable["sp"])
    cycle.add_input(1)
    cycle.wait_until_all_processed()

    # output the new program committed is never undone: no rollback, it says why
    pipeline.deploy(COMMITS_THEN_FAILS)
    status, third = pipeline.upgrade_with_input_after_savepoint(resumed, *READINESS)
    assert status == 1, third
    unstable = UNSTABLE.search(third)
    assert unstable and "version 7 cannot write its counts" in unstable["reason"], third
    assert "after committing output (query raw batch" in unstable["reason"]
    assert SUBMITTED.findall(third) == [unstable["new"]], "no rollback job"
    env.wait_for_state(unstable["new"], ["FAILED"])
    pipeline.deploy(ORIGINAL)
    resumed = cycle.start("-s", unstable["dir"])
    cycle.wait_until_all_processed()

    # stateless: the new program starts empty (here into a new output, over all input)
    fresh = Cycle(env, pipeline.script)
    fresh.rows, fresh.output = cycle.rows, env.root / "out-stateless"
    stateless = env.run(
        "upgrade", "--upgrade-mode", "stateless", *READINESS, resumed, *fresh.args(), timeout=400
    )
    assert stateless.returncode == 0, stateless
    assert "runs with empty state and is stable." in stateless.stdout
    assert "Savepoint completed" not in stateless.stdout
    final = SUBMITTED.findall(stateless.stdout)[-1]
    fresh.wait_until_all_processed()
    listed = {j["jid"]: j for j in env.list_jobs()}
    assert listed[final]["restored-from"] is None and listed[resumed]["state"] == "CANCELED"
    env.run("cancel", final, check=True)
    cycle.check_exactly_once()
    fresh.check_exactly_once()
