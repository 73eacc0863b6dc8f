"""Flink's command lines against live jobs, driven the way a cron script drives ``bin/flink``.

Each test is a bash snippet run with ``bash -c`` (``flinkish`` on the PATH, the job's
configuration in FLINK_CONF_DIR), parsing output with grep, awk and sed and checking ``$?``,
as scripts written for Flink do. Two streaming jobs are shared by the whole module (Spark
takes long to start on a loaded machine); each ends in the last test that uses it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import (
    COUNTS_JOB,
    FlinkishEnv,
    _kill_leftover_jobs,
    read_json_dir,
    write_events,
)

pytestmark = pytest.mark.spark

BIN = str(Path(sys.executable).parent)
RUN_DETACHED = (
    "flinkish run -d {job} --input {input} --output {output} | awk '/JobID/{{print $NF}}'"
)


@dataclass
class Live:
    """The module's configuration and its live jobs: ``a`` for the tests that leave it
    running, ``b`` and ``c`` each for the one test that ends it (no test depends on another's
    effects or on their order)."""

    env: FlinkishEnv
    a: str
    b: str
    c: str

    def sh(self, script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run a bash snippet as a cron job would (set -u; the caller checks ``$?``)."""
        environ = self.env.environ()
        environ["PATH"] = f"{BIN}:{environ.get('PATH', '/usr/bin:/bin')}"
        environ.update(A=self.a, B=self.b, C=self.c, COUNTS_JOB=COUNTS_JOB)
        return subprocess.run(
            ["bash", "-c", "set -u\n" + script],
            cwd=self.env.root,
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def values(self, script: str) -> dict[str, str]:
        """Run a snippet that prints ``name=value`` lines; the values (asserting exit 0)."""
        result = self.sh(script)
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        pairs = (line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        return {name: value for name, value in pairs}


def _rows(start: int, n: int) -> list[dict]:
    return [{"key": f"k{i % 3}", "value": i, "seq": i} for i in range(start, start + n)]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("conformance")
    env = FlinkishEnv.under(root)
    for name in ("a", "b", "c"):
        for start in range(0, 30, 10):
            write_events(root / f"in-{name}", _rows(start, 10))
    shell = Live(env, "", "", "")
    starts = {
        name: subprocess.Popen(
            [
                "bash",
                "-c",
                "set -o pipefail; "
                + RUN_DETACHED.format(job=COUNTS_JOB, input=f"in-{name}", output=f"out-{name}"),
            ],
            cwd=root,
            env={**env.environ(), "PATH": f"{BIN}:{env.environ().get('PATH', '/usr/bin:/bin')}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b", "c")
    }
    try:
        ids = {}
        for name, process in starts.items():
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
            ids[name] = out.strip()
            assert len(ids[name]) == 32, (out, err)
        shell.a, shell.b, shell.c = ids["a"], ids["b"], ids["c"]
        for job_id in ids.values():
            env.wait_for_batches(job_id, "raw", 0)
        yield shell
    finally:
        _kill_leftover_jobs(env)


def test_list_as_a_cron_script_reads_it(live: Live) -> None:
    found = live.values(
        """
        flinkish list -r > list.out; echo "rc=$?"
        echo "running=$(grep -c RUNNING list.out)"
        echo "with_m=$(flinkish list -m local[2] -r | grep -c RUNNING)"
        flinkish list -m 127.0.0.1:1 -r >/dev/null 2>&1; echo "no_endpoint=$?"
        echo "a=$(flinkish list | grep " : $A : " | awk -F' : ' '{print $3}')"
        echo "header=$(flinkish list | sed -n 2p)"
        flinkish list -s | tail -1 | sed 's/^/scheduled=/'
        echo "terminated=$(flinkish list -a | grep -c 'Terminated Jobs')"
        flinkish list -z /flink/ns >/dev/null 2>&1; echo "with_z=$?"
        flinkish lsit >/dev/null 2>&1; echo "typo=$?"
        """
    )
    assert found["running"] == "3" and found["rc"] == "0" and found["with_m"] == "3"
    assert found["no_endpoint"] == "1"  # -m host:port is the REST endpoint: nothing there
    assert found["a"] == "counts_job (RUNNING)"
    assert found["header"] == "------------------ Running/Restarting Jobs -------------------"
    assert found["scheduled"] == "No scheduled jobs."
    assert found["terminated"] == "0"  # -a prints nothing for an empty terminated section
    assert found["with_z"] == "0" and found["typo"] == "1"


def test_savepoint_then_dispose(live: Live) -> None:
    found = live.values(
        """
        SP=$(flinkish savepoint -m local[2] $A | sed -n 's/^Savepoint completed. Path: //p')
        echo "sp=$SP"
        test -f "$SP/_metadata" && echo "complete=yes"
        flinkish savepoint info --no-rows "$SP" | grep -c "^Savepoint " | sed 's/^/info=/'
        flinkish savepoint -d "$SP" > dispose.out; echo "dispose_rc=$?"
        sed -n 1p dispose.out | sed 's/^/first=/'
        tail -1 dispose.out | sed 's/^/last=/'
        test -e "$SP" || echo "gone=yes"
        flinkish savepoint -d "$SP" 2>/dev/null; echo "again_rc=$?"
        """
    )
    sp = found["sp"]
    assert Path(sp).parent == live.env.savepoints and found.get("complete") == "yes"
    assert found["info"] == "1"
    assert found["dispose_rc"] == "0" and found.get("gone") == "yes"
    assert found["first"] == f"Disposing savepoint '{sp}'."
    assert found["last"] == f"Savepoint '{sp}' disposed."
    assert found["again_rc"] == "1"


def test_relative_savepoint_target_is_the_callers(live: Live) -> None:
    found = live.values(
        """
        mkdir -p cron && cd cron
        echo "sp=$(flinkish savepoint $A ./sp | sed -n 's/.*Path: //p')"
        """
    )
    assert Path(found["sp"]).parent == live.env.root / "cron" / "sp"
    assert (Path(found["sp"]) / "_metadata").is_file()


def test_detached_savepoint_returns_a_trigger_id(live: Live) -> None:
    target = live.env.root / "detached"
    found = live.values(
        """
        OUT=$(flinkish savepoint -detached $A detached); echo "rc=$?"
        echo "$OUT" | sed -n 1p | sed 's/^/first=/'
        echo "id=$(echo "$OUT" | awk '/triggerId/{print $NF}')"
        """
    )
    assert found["rc"] == "0"
    assert found["first"] == f"Triggering savepoint in detached mode for job {live.a}."
    assert found["id"]
    deadline = time.monotonic() + 120
    while not list(target.glob("savepoint-*/_metadata")):
        assert time.monotonic() < deadline, "the detached savepoint was never taken"
        time.sleep(0.5)


def test_checkpoint_number(live: Live) -> None:
    write_events(live.env.root / "in-a", _rows(100, 5))
    found = live.values(
        """
        flinkish checkpoint $A > checkpoint.out
        echo "n=$(sed -n 's/^Checkpoint \\([0-9]*\\) for job .*\\.$/\\1/p' checkpoint.out)"
        echo "full=$(flinkish checkpoint -full $A | grep -c '^Checkpoint(FULL) [0-9]* for job')"
        """
    )
    committed = live.env.job(live.a)["queries"]
    assert int(found["n"]) >= 1
    assert int(found["n"]) <= max(q["last-committed-batch"] for q in committed.values()) + 1
    assert found["full"] == "1"


def test_stop_with_default_directory_and_drain(live: Live) -> None:
    write_events(live.env.root / "in-b", _rows(200, 5))
    found = live.values(
        """
        OUT=$(flinkish stop -p -d $B); echo "rc=$?"
        echo "$OUT" | sed -n 1p | sed 's/^/first=/'
        echo "sp=$(echo "$OUT" | sed -n 's/^Savepoint completed. Path: //p')"
        echo "finished=$(flinkish list -a | grep " : $B : " | grep -c FINISHED)"
        flinkish cancel $B 2> cancel.err; echo "cancel_rc=$?"
        """
    )
    assert found["rc"] == "0"
    assert found["first"] == f'Draining job "{live.b}" with a CANONICAL savepoint.'
    assert Path(found["sp"]).parent == live.env.savepoints
    assert found["finished"] == "1" and found["cancel_rc"] == "1"
    assert "it is FINISHED" in (live.env.root / "cancel.err").read_text()
    # drained: every row written so far was processed before the savepoint
    written = read_json_dir(live.env.root / "in-b")
    assert len(read_json_dir(live.env.root / "out-b" / "raw")) == len(written)


def test_cancel_with_savepoint_resume_and_detached_stop(live: Live) -> None:
    found = live.values(
        """
        mkdir -p cron2 && cd cron2
        OUT=$(flinkish cancel -s ./sp $C); echo "rc=$?"
        echo "$OUT" | sed -n 1p | sed 's/^/deprecation=/'
        SP=$(echo "$OUT" | sed -n "s/^Cancelled job $C. Savepoint stored in \\(.*\\)\\.$/\\1/p")
        echo "sp=$SP"
        echo "canceled=$(flinkish list -a | grep " : $C : " | grep -c CANCELED)"
        RESUMED=$(flinkish run -d -s "$SP" $COUNTS_JOB --input ../in-c --output ../out-resumed \\
            | awk '/JobID/{print $NF}')
        echo "resumed=$RESUMED"
        """
    )
    assert found["rc"] == "0"
    assert found["deprecation"].startswith("DEPRECATION WARNING: Cancelling a job with savepoint")
    assert Path(found["sp"]).parent == live.env.root / "cron2" / "sp"
    resumed = found["resumed"]
    assert found["canceled"] == "1" and len(resumed) == 32
    _wait_until_active(live, resumed)
    stopped = live.values(
        f"echo tid=$(flinkish stop -detached -p {resumed} | awk '/triggerId/{{print $NF}}')"
    )
    assert stopped["tid"]
    job = live.env.wait_for_state(resumed, {"FINISHED"}, timeout=180)
    assert job["restored-from"] == found["sp"]
    assert list(live.env.savepoints.glob(f"savepoint-{resumed[:6]}-*/_metadata"))


def _wait_until_active(live: Live, job_id: str, timeout: float = 180) -> None:
    """Until every query of the job runs (a cron script stops a job long after it started)."""
    deadline = time.monotonic() + timeout
    while True:
        queries = live.env.polled(job_id)["queries"]
        if queries and all(q["active"] for q in queries.values()):
            return
        assert time.monotonic() < deadline, f"the queries of {job_id} never all ran: {queries}"
        time.sleep(0.5)
