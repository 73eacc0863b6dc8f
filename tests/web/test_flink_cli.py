"""Apache Flink's own CLI (``bin/flink`` from the ``apache-flink`` wheel, in a virtual
environment of its own) drives real flinkish jobs through ``flinkish web``: ``list``,
``savepoint``, ``checkpoint``, ``stop --savepointPath`` and ``cancel`` with ``-m host:port``,
with Flink's output lines and exit statuses, and every row reaches the file sink once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle
from tests.fixtures.flink_cli import run_flink
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import running_web

pytestmark = pytest.mark.spark

SAVEPOINT = re.compile(r"^Savepoint completed\. Path: (\S+)$", re.MULTILINE)


_flink = run_flink


def test_flinks_cli_lists_savepoints_stops_and_cancels_flinkish_jobs(
    flinkish_env: FlinkishEnv, flink
) -> None:
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(2)
    job = cycle.start()
    cycle.wait_until_all_processed()
    with running_web(env) as web:
        m = ("-m", web.address)

        listed = _flink(flink, "list", *m)
        assert listed.returncode == 0, listed
        assert "------------------ Running/Restarting Jobs -------------------" in listed.stdout
        assert re.search(rf"^\d\d\.\d\d\.\d{{4}} \d\d:\d\d:\d\d : {job} : counts_job \(RUNNING\)$",
                         listed.stdout, re.M), listed.stdout  # fmt: skip

        target = env.root / "flink-savepoints"
        taken = _flink(flink, "savepoint", *m, job, str(target))
        assert taken.returncode == 0, taken
        first = SAVEPOINT.search(taken.stdout).group(1)  # type: ignore[union-attr]
        assert first.startswith(f"{target}/savepoint-{job[:6]}-")
        assert (Path(first) / "_metadata").is_file()
        assert env.job(job)["state"] == "RUNNING"

        cycle.add_input(1)
        cycle.wait_until_all_processed()
        stopped = _flink(flink, "stop", *m, "--savepointPath", str(target), job)
        assert stopped.returncode == 0, stopped
        assert f'Suspending job "{job}" with a CANONICAL savepoint.' in stopped.stdout
        final = SAVEPOINT.search(stopped.stdout).group(1)  # type: ignore[union-attr]
        env.wait_for_state(job, ["FINISHED"])
        # the driver kept its batches for the dashboard's charts, the last ones included
        kept = json.loads((env.checkpoints / job / "_flinkish" / "series.json").read_text())
        drawn = web.get(f"/flinkish/jobs/{job}/series").json()
        assert kept["queries"]["counts"] and kept["queries"] == drawn["queries"]
        everything = _flink(flink, "list", "-a", *m)
        assert re.search(rf" : {job} : counts_job \(FINISHED\)$", everything.stdout, re.M)

        refused = _flink(flink, "savepoint", *m, job)
        assert refused.returncode == 1 and "it is FINISHED" in refused.stdout + refused.stderr

        cycle.add_input(1)
        resumed = cycle.start("-s", final)
        cycle.wait_until_all_processed()
        checkpointed = _flink(flink, "checkpoint", *m, resumed)
        assert checkpointed.returncode == 0, checkpointed
        assert re.search(
            rf"^Checkpoint \d+ for job {resumed} completed\.$", checkpointed.stdout, re.M
        )
        cancelled = _flink(flink, "cancel", *m, resumed)
        assert cancelled.returncode == 0, cancelled
        assert f"Cancelled job {resumed}." in cancelled.stdout
        env.wait_for_state(resumed, ["CANCELED"])
    history = env.run("savepoint", "list", job, "--output", "json", check=True).stdout
    assert first in history and final in history
    cycle.check_exactly_once()
