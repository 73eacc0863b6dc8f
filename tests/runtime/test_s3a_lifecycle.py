"""Spark's own checkpoints on S3, through Hadoop's S3A file system, against a real S3 server.

The S3 server is moto's, on loopback (``s3_server``). The counting job's checkpoint
directory is ``s3://bucket/...``: flinkish ships S3A (hadoop-aws of Spark's Hadoop and its AWS
SDK, resolved with Maven) by itself, Flink's ``s3.*`` keys reach it as ``fs.s3a.*``, and the
queries' offsets, commits and state are objects in the bucket, listed and compared. Input and
the exactly-once file sink are on local disk, where the ground truth is checked. The outage
test freezes a moto server of its own (``start_s3_server``), not the run's shared one.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.s3server import start_s3_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def _keys(s3_server, bucket: str, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
    client = s3_server.client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [entry["Key"][len(prefix) :] for entry in page.get("Contents", [])]
    return sorted(keys)


def test_run_savepoint_stop_resume_rescaled_with_checkpoints_on_s3a(
    flinkish_env: FlinkishEnv, s3_server, s3_bucket: str
) -> None:
    env, cycle = flinkish_env, Cycle(flinkish_env)
    env.write_conf(
        {
            **s3_server.flink_conf(),  # Flink's own keys: s3.endpoint, s3.access-key, ...
            "execution.checkpointing.dir": f"{s3_bucket}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{s3_bucket}/savepoints",
            "state.backend.type": "rocksdb",  # a savepoint resumes at another parallelism
            # moto's server answers the AWS SDK's "Expect: 100-continue" with a bare 100 that
            # the SDK takes for an error: S3A sends whole requests instead,
            "fs.s3a.connection.expect.continue": "false",
            # and the SDK's asynchronous upload of a local file (RocksDB's snapshot files)
            # never reaches it: S3A copies those through its ordinary output stream
            "fs.s3a.optimized.copy.from.local.enabled": "false",
        }
    )
    try:
        _lifecycle(env, cycle, s3_server, s3_bucket)
    finally:  # the fixture's clean-up looks for registries on local disk only
        for listed in env.list_jobs():
            if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                env.run("cancel", listed["jid"], timeout=120)


def _lifecycle(env: FlinkishEnv, cycle: Cycle, s3_server, s3_bucket: str) -> None:  # type: ignore[no-untyped-def]
    bucket = s3_bucket.removeprefix("s3://")
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed(timeout=300)
    target = f"{s3_bucket}/manual"
    first = savepoint_path(env.run("savepoint", job, target, check=True).stdout)
    assert first.startswith(f"{target}/savepoint-{job[:6]}-"), first
    cycle.add_input(2)
    cycle.wait_until_all_processed(timeout=300)
    second = savepoint_path(env.run("stop", "--savepointPath", target, job, check=True).stdout)
    assert env.job(job)["state"] == "FINISHED"

    # Spark wrote the queries' checkpoints to the bucket through S3A
    written = _keys(s3_server, bucket, f"checkpoints/{job}/")
    for query in ("counts", "raw"):
        assert any(k.startswith(f"{query}/offsets/") for k in written), written
        assert any(k.startswith(f"{query}/commits/") for k in written), written
    assert any(k.startswith("counts/state/") for k in written), written
    assert "_flinkish/status.json" in written
    for path in (first, second):
        assert "_metadata" in _keys(s3_server, bucket, path.removeprefix(s3_bucket + "/") + "/")

    cycle.check_reads_of(second)  # savepoint info, state ls and show, on S3

    # disposal: the first savepoint's objects are gone, the second's untouched
    kept = _keys(s3_server, bucket, "manual/")
    disposed = env.run("savepoint", "-d", first, check=True)
    assert "Traceback" not in disposed.stderr
    prefix = first.removeprefix(f"{s3_bucket}/manual/") + "/"
    assert _keys(s3_server, bucket, "manual/") == [k for k in kept if not k.startswith(prefix)]
    assert "_metadata" in _keys(s3_server, bucket, second.removeprefix(s3_bucket + "/") + "/")

    cycle.add_input(2)  # arrives while the job is stopped
    resumed = cycle.start("-s", second, "-p", "4")
    cycle.wait_until_all_processed(timeout=300)
    assert env.job(resumed)["state"] == "RUNNING"
    env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()
    resumed_keys = _keys(s3_server, bucket, f"checkpoints/{resumed}/")
    assert any(k.startswith("counts/commits/") for k in resumed_keys), resumed_keys
    # the secret key reached S3A, never the job's log
    for path in env.logs.rglob("*"):
        if path.is_file():
            assert s3_server.secret_key not in path.read_text(errors="replace"), path


def _unanswered_requests(port: int) -> int:
    """Connections to 127.0.0.1:``port`` whose request bytes wait unread on the server's side
    (``/proc/net/tcp``: established, receive queue not empty): what a client that sent a
    request to a store that does not answer leaves in the kernel."""
    local = f"0100007F:{port:04X}"
    waiting = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "01" and int(fields[4].split(":")[1], 16):
            waiting += 1
    return waiting


def test_s3_not_answering_under_a_running_job_then_back(flinkish_env: FlinkishEnv) -> None:
    """The S3 endpoint stops answering for 30 s under a running job whose checkpoints (and
    registry) are on S3 through S3A: the server of the test's own is frozen (SIGSTOP), so
    connections open and requests go unanswered, as in a network outage; then it answers
    again (SIGCONT) with every object it had. S3A's requests wait longer than that for an
    answer, so the job waits rather than failing over: no restart, its supervisor's and its
    driver's log lines say the registry answered late (the driver's missed heartbeats are not
    taken for a hang), and the input that arrived meanwhile is processed exactly once."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    with start_s3_server() as server:
        bucket = server.bucket()
        env.write_conf(
            {
                **server.flink_conf(),
                "execution.checkpointing.dir": f"{bucket}/checkpoints",
                "fs.s3a.connection.expect.continue": "false",  # as in the test above
                "fs.s3a.optimized.copy.from.local.enabled": "false",
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "60",
                "restart-strategy.fixed-delay.delay": "3 s",
            }
        )
        try:
            cycle.add_input(2)
            job = cycle.start()
            cycle.wait_until_all_processed(timeout=300)
            before = env.polled(job)
            server.process.send_signal(signal.SIGSTOP)
            try:
                cycle.add_input(2)  # the job's next batch meets the frozen store
                deadline = time.monotonic() + 120
                while not _unanswered_requests(server.address[1]):
                    assert time.monotonic() < deadline, "nothing asked S3 while it was frozen"
                    time.sleep(0.5)
                outage_over = time.monotonic() + 30  # the outage's length, not an assertion
                while time.monotonic() < outage_over:
                    time.sleep(1)
            finally:
                server.process.send_signal(signal.SIGCONT)
            cycle.add_input(1)
            cycle.wait_until_all_processed(timeout=420)
            deadline = time.monotonic() + 300
            while (listed := env.polled(job))["state"] != "RUNNING":
                assert listed["state"] == "RESTARTING", listed
                assert time.monotonic() < deadline, listed
                time.sleep(1)
            logs = "".join(
                p.read_text(errors="replace") for p in (env.root / "log").glob(f"*{job}*.log")
            )
            # S3A's requests wait for an answer longer than the outage (60 s each): the job
            # waited, and its supervisor says the store answered late instead of taking the
            # driver's missed heartbeats for a hang
            assert listed["restarts"] == before["restarts"], listed
            assert "The job registry took" in logs, logs[-3000:]
            assert "The heartbeat took" in logs, logs[-3000:]  # the driver's side says so too
            env.run("cancel", job, check=True)
        finally:
            with contextlib.suppress(Exception):
                server.process.send_signal(signal.SIGCONT)
                for listed in env.list_jobs():
                    if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                        env.run("cancel", listed["jid"], timeout=120)
    cycle.check_exactly_once()
