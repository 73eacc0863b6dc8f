"""A job's whole life with its checkpoints, savepoints and registry on a real NameNode.

The HDFS is ``scripts/start-cluster.sh --hdfs`` (``hdfs_cluster``, one for the run). The
counting job checkpoints to ``hdfs://127.0.0.1:PORT/...`` through Spark's own Hadoop client;
the command line and ``flinkish web`` read the registry there through the NameNode's WebHDFS;
the files are checked with Hadoop's own shell. Its input and its exactly-once file sink are on
local disk, where the ground truth is checked (:class:`~tests.fixtures.cycle.Cycle`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.hdfs import Hdfs
from tests.fixtures.store_lifecycle import (
    RESTARTS,
    RETENTION,
    kills_upgrades_and_retention,
    webhdfs_store,
)
from tests.fixtures.upgrade_pipeline import Pipeline
from tests.fixtures.web_server import running_web

pytestmark = pytest.mark.spark


@contextlib.contextmanager
def _on_hdfs(env: FlinkishEnv, hdfs: Hdfs, **extra: str) -> Iterator[str]:
    """The test's configuration with every store on ``hdfs`` under a fresh root (yielded);
    on the way out every job of the test still running is cancelled, and killed if that
    fails (the fixture's own clean-up looks for registries on local disk only)."""
    root = f"flinkish-{uuid.uuid4().hex[:8]}"
    env.write_conf(
        {
            "execution.checkpointing.dir": hdfs.url(f"{root}/checkpoints"),
            "execution.checkpointing.savepoint-dir": hdfs.url(f"{root}/savepoints"),
            "flink.hadoop.dfs.namenode.http-address": f"127.0.0.1:{hdfs.http_port}",
            "state.backend.type": "rocksdb",  # a savepoint resumes at another parallelism
            **extra,
        }
    )
    try:
        yield root
    finally:
        with contextlib.suppress(Exception):
            for job in env.list_jobs():
                if job["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                    env.run("cancel", job["jid"], timeout=120)
        _kill_processes_of(env)


#: What a job's log says when it fails over: its driver's restart of the program, or the
#: supervisor's of the driver.
FAILED_OVER = re.compile(r"Restarting (the driver )?in [0-9]")


def _kill_processes_of(env: FlinkishEnv) -> None:
    """Kill what is left of the test's jobs: processes whose command line or environment
    names the test's configuration directory."""
    needle = str(env.conf_dir).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            if needle in environ and b"flinkish" in command:
                os.kill(int(entry), signal.SIGKILL)


def _wait_for_state(env: FlinkishEnv, job: str, state: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(AssertionError):  # the registry unreachable for a moment
            listed = env.job(job)
            if listed["state"] == state:
                return listed
        assert time.monotonic() < deadline, f"{job} not {state} within {timeout} s"
        time.sleep(1)


@pytest.mark.timeout(1200)
def test_the_whole_lifecycle_on_hdfs(flinkish_env: FlinkishEnv, hdfs_cluster: Hdfs) -> None:
    """run -d, savepoint to hdfs://, stop --savepointPath hdfs://, run -s hdfs:// -p 4: every
    row reaches the sink once, the counts are the ground truth; the checkpoints, savepoints and
    registry are files on the NameNode; ``flinkish list`` and ``flinkish web`` read them;
    ``savepoint info``, ``state ls`` and ``state show`` read the HDFS savepoint through
    WebHDFS, and ``savepoint -d`` removes exactly its files. Then the resumed job's driver
    and its JVM are killed mid-batch, an upgrade becomes stable and another rolls back:
    every row once, and the NameNode's files are what retention keeps."""
    env, pipeline, hdfs = flinkish_env, Pipeline(flinkish_env), hdfs_cluster
    cycle = pipeline.cycle
    with _on_hdfs(env, hdfs, **RETENTION) as root:
        cycle.add_input(3)
        job = cycle.start()
        cycle.wait_until_all_processed()
        target = hdfs.url(f"{root}/manual")
        first = savepoint_path(env.run("savepoint", job, target, check=True).stdout)
        assert first.startswith(f"{target}/savepoint-{job[:6]}-"), first
        assert env.job(job)["state"] == "RUNNING"
        cycle.add_input(2)
        cycle.wait_until_all_processed()
        stopped = env.run("stop", "--savepointPath", target, job, check=True).stdout
        second = savepoint_path(stopped)
        assert env.job(job)["state"] == "FINISHED"

        # the NameNode holds the job's checkpoints, registry entry and both savepoints
        files = hdfs.ls(root)
        for name in (
            f"checkpoints/{job}/_flinkish/status.json",
            f"checkpoints/{job}/counts/offsets/",
            f"checkpoints/{job}/counts/commits/",
            f"checkpoints/{job}/raw/offsets/",
            f"{first.removeprefix(hdfs.url(root) + '/')}/_metadata",
            f"{second.removeprefix(hdfs.url(root) + '/')}/_metadata",
        ):
            assert name in files, (name, files)
        assert any(f.startswith(f"checkpoints/{job}/counts/state/") for f in files), files
        cycle.check_reads_of(second)  # savepoint info, state ls and show, on HDFS

        # disposal: the first savepoint's files are gone, nothing else is, and the job's
        # savepoint history marks that one savepoint disposed
        disposed = env.run("savepoint", "-d", first, check=True)
        assert "Traceback" not in disposed.stderr
        gone = first.removeprefix(hdfs.url(root) + "/") + "/"
        history = f"checkpoints/{job}/_flinkish/savepoints/"
        after = hdfs.ls(root)
        assert [f for f in after if not f.startswith(history)] == [
            f for f in files if not f.startswith((gone, history))
        ]
        entries = [f for f in after if f.startswith(history)]
        assert len(entries) == len([f for f in files if f.startswith(history)]), entries
        assert len([f for f in entries if f.endswith(".DISPOSED.json")]) == 1, entries
        assert f"{second.removeprefix(hdfs.url(root) + '/')}/_metadata" in after

        cycle.add_input(2)  # arrives while the job is stopped
        resumed = cycle.start("-s", second, "-p", "4", *RESTARTS)
        cycle.wait_until_all_processed()
        listed = env.job(resumed)
        assert listed["state"] == "RUNNING"
        with running_web(env) as web:
            overview = web.get("/jobs/overview").json()["jobs"]
        states = {entry["jid"]: entry["state"] for entry in overview}
        assert states == {job: "FINISHED", resumed: "RUNNING"}, states

        store = webhdfs_store(hdfs.http_port, root)
        savepoints = hdfs.url(f"{root}/savepoints/")
        kills_upgrades_and_retention(env, pipeline, store, job, resumed, savepoints)


def test_a_namenode_restart_under_a_running_job_restarts_it_exactly_once(
    flinkish_env: FlinkishEnv, hdfs_cluster: Hdfs
) -> None:
    """The NameNode (and DataNode) stop under a running job and start again on the same files
    and port: the job's next checkpoint write fails, so the job fails over and, under its
    restart strategy, starts again from its latest checkpoint once HDFS answers; the input
    that arrived meanwhile is processed exactly once."""
    env, cycle, hdfs = flinkish_env, Cycle(flinkish_env), hdfs_cluster
    restarts = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "60",
        "restart-strategy.fixed-delay.delay": "3 s",
    }
    with _on_hdfs(env, hdfs, **restarts):
        cycle.add_input(2)
        job = cycle.start()
        cycle.wait_until_all_processed()
        hdfs.stop()
        try:
            cycle.add_input(2)  # the job sees it while HDFS is down
            # HDFS stays down until the job has failed over: its status writes fail at once
            # (and are retried), its query fails once HDFS's client gives up on a checkpoint
            # write, and the job's restart strategy says so in its log
            deadline = time.monotonic() + 240
            while not FAILED_OVER.search(
                "".join(
                    p.read_text(errors="replace") for p in (env.root / "log").glob(f"*{job}*.log")
                )
            ):
                assert time.monotonic() < deadline, "the job never failed over on the NameNode"
                time.sleep(1)
        finally:
            hdfs.start()
        cycle.add_input(1)
        cycle.wait_until_all_processed(timeout=300)
        listed = _wait_for_state(env, job, "RUNNING")
        assert listed["restarts"] >= 1, listed  # failed over, not waited
        # the exception history says why: HDFS's client could not reach the NameNode
        causes = "\n".join(str(entry["cause"]) for entry in listed["exceptions"])
        assert f":{hdfs.port} failed on" in causes, causes[-2000:]  # Call From ... to ...
        env.run("cancel", job, check=True)
        cycle.check_exactly_once()
