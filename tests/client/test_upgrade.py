"""``flinkish upgrade`` end to end, as a CI pipeline runs it, on real Spark.

The pipeline deploys each version of the counting job over the same path (``app/``), then
runs ``flinkish upgrade <JobID> app/counts_job.py ...`` and reads its lines and exit status.
Three broken versions (one raises at start, one fails its first batch, one never starts its
queries) must each roll back to the previous program, which runs from the copy the registry
kept although ``app/`` now holds the broken one; a good version must become stable. Through
all of it, every input row reaches Spark's file sink exactly once and the counts equal the
ground truth.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import FLINKISH, JOBS, FlinkishEnv, write_events

pytestmark = pytest.mark.spark

SUBMITTED = re.compile(r"^Job has been submitted with JobID ([0-9a-f]{32})$", re.MULTILINE)
ROLLED_BACK = re.compile(
    r"^Upgrade of job (?P<old>[0-9a-f]{32}) rolled back: job (?P<new>[0-9a-f]{32}) \(.*?\) "
    r"(?P<reason>.+); job (?P<back>[0-9a-f]{32}) runs the previous program \((?P<prog>.+)\) "
    r"from savepoint (?P<sp>\S+)\.$",
    re.MULTILINE,
)
STABLE = re.compile(
    r"^Upgrade of job (?P<old>[0-9a-f]{32}) completed: job (?P<new>[0-9a-f]{32}) \(.*?\) runs "
    r"from savepoint (?P<sp>\S+) and is stable\.$",
    re.MULTILINE,
)

ORIGINAL = (JOBS / "counts" / "counts_job.py").read_text()
RAISES_AT_START = 'raise RuntimeError("version 2 cannot start: no such table")\n' + ORIGINAL
FAILS_FIRST_BATCH = ORIGINAL.replace(
    "from helpers import tag\n",
    "def tag(key):\n    raise ValueError('version 3 cannot tag ' + key)\n",
)
NEVER_STARTS = (
    "import time\n"
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    "time.sleep(3600)  # waits on something that never comes; no query starts\n"
)
GOOD = ORIGINAL.replace('appName("counts")', 'appName("counts v5")')
#: A version that fails on a poison row (its fix is the original program).
POISON = ORIGINAL.replace(
    "from helpers import tag\n",
    "from helpers import tag as _tag\n\n\n"
    "def tag(key):\n"
    "    if key == 'poison':\n"
    "        raise ValueError('cannot tag poison')\n"
    "    return _tag(key)\n",
)
#: A version whose ``counts`` query fails its first batch only after ``raw`` committed its
#: own: the new program has written output a rollback would have to undo.
COMMITS_THEN_FAILS = ORIGINAL.replace(
    "    def write_counts(batch, batch_id: int) -> None:\n",
    "    import os, time\n"
    "    sink_log = f'{args.output}/raw/_spark_metadata'\n"
    "    before = set(os.listdir(sink_log))\n\n"
    "    def write_counts(batch, batch_id: int) -> None:\n"
    "        deadline = time.time() + 120\n"
    "        while time.time() < deadline and not set(os.listdir(sink_log)) - before:\n"
    "            time.sleep(0.2)\n"
    "        raise RuntimeError('version 7 cannot write its counts')\n",
)
UNSTABLE = re.compile(
    r"^Upgrade of job (?P<old>[0-9a-f]{32}) is not stable: job (?P<new>[0-9a-f]{32}) \(.*?\) "
    r"(?P<reason>.+); it is left to its restart strategy \(it started from savepoint "
    r"(?P<sp>\S+); once it has ended, resume from its checkpoints with 'flinkish run -s "
    r"(?P<dir>\S+) \.\.\.'\)\.$",
    re.MULTILINE,
)


CI_SCRIPT = Path(__file__).parents[2] / "examples" / "ci" / "upgrade.sh"
#: Generous for a loaded machine; a failure is seen at once, never waits for it.
READINESS = ("-D", "flinkish.upgrade.readiness.timeout=2 min")


class Pipeline:
    """The CI side: a deploy directory, the job's input and output, and ``upgrade``."""

    def __init__(self, env: FlinkishEnv) -> None:
        self.env = env
        self.app = env.root / "app"
        shutil.copytree(JOBS / "counts", self.app, ignore=shutil.ignore_patterns("__pycache__"))
        self.script = str(self.app / "counts_job.py")
        self.cycle = Cycle(env, self.script)

    def deploy(self, source: str) -> None:
        (self.app / "counts_job.py").write_text(source)

    def upgrade_args(self, job: str, *options: str) -> list[str]:
        return ["upgrade", *options, job, *self.cycle.args()]

    def upgrade(self, job: str, *options: str) -> subprocess.CompletedProcess[str]:
        return self.env.run(*self.upgrade_args(job, *options), timeout=400)

    def deploy_script(self, job: str) -> tuple[subprocess.CompletedProcess[str], str]:
        """The README's CI script (examples/ci/upgrade.sh) upgrading ``job``: its run, and
        the JobID it recorded as running afterwards."""
        jobid_file = self.env.root / "running.jobid"
        jobid_file.write_text(job + "\n")
        environ = {**self.env.environ(), "PATH": f"{Path(FLINKISH).parent}:{os.environ['PATH']}"}
        result = subprocess.run(
            [str(CI_SCRIPT), str(jobid_file), *self.cycle.args()],
            env=environ,
            cwd=self.env.root,
            capture_output=True,
            text=True,
            timeout=400,
        )
        return result, jobid_file.read_text().strip()

    def upgrade_with_input_after_savepoint(self, job: str, *options: str) -> tuple[int, str]:
        """``upgrade``, with new input written once the old job's savepoint completed (the
        new program's first batch then has rows): its exit status and standard output."""
        upgrading = self.env.popen(*self.upgrade_args(job, *options))
        assert upgrading.stdout is not None and upgrading.stderr is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith("Savepoint completed."):
            line = upgrading.stdout.readline()
            assert line, ("".join(lines), upgrading.wait(), upgrading.stderr.read())
            lines.append(line)
        self.cycle.add_input(1)
        rest, errors = upgrading.communicate(timeout=400)
        return upgrading.returncode, "".join(lines) + rest + errors


def _refused(env: FlinkishEnv, pipeline: Pipeline, job: str, *args: str, says: str) -> None:
    """An upgrade refused before anything is touched: one message, exit 1, the old job
    RUNNING in the same driver, no new job, no savepoint."""
    pid = env.driver_pid(job)
    jobs_before = {p.name for p in env.checkpoints.iterdir()}
    result = env.run(*args, check=False)
    assert result.returncode == 1, result
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert env.job(job)["state"] == "RUNNING" and env.driver_pid(job) == pid
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
    first, recorded = pipeline.deploy_script(job)  # the README's CI script
    assert first.returncode == 1, first
    assert "Rolled back: job" in first.stderr and "this deployment failed" in first.stderr
    rolled = ROLLED_BACK.search(first.stdout)
    assert rolled and recorded == rolled["back"], first.stdout
    assert rolled["old"] == job and "version 2 cannot start" in rolled["reason"]
    assert SUBMITTED.findall(first.stdout) == [rolled["new"], rolled["back"]]
    assert savepoint_path(first.stdout) == rolled["sp"]
    assert rolled["prog"].endswith("app/counts_job.py")
    back = rolled["back"]
    assert env.job(back)["state"] == "RUNNING"
    links = {j["jid"]: j for j in env.list_jobs()}
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
    assert env.job(final)["state"] == "RUNNING"
    assert env.job(final)["upgraded_from"] == back

    # the savepoint history follows the job across its upgrades: four, one per upgrade
    listed = env.run("savepoint", "list", final, "--output", "json", check=True).stdout
    upgrades = [r for r in json.loads(listed)["savepoints"] if r["trigger"] == "UPGRADE"]
    assert len(upgrades) == 4 and upgrades[0]["job_id"] == back
    assert all(
        r["state"] == "COMPLETED" and Path(r["path"], "_metadata").is_file() for r in upgrades
    )
    assert upgrades[-1]["job_id"] == job

    env.run("cancel", final, check=True)
    cycle.check_exactly_once()


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
    assert env.job(final)["restored-from"] is None and env.job(resumed)["state"] == "CANCELED"
    env.run("cancel", final, check=True)
    cycle.check_exactly_once()
    fresh.check_exactly_once()
