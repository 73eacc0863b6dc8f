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
from tests.fixtures.s3_faults import SlowDownProxy, partial_savepoints, s3_through
from tests.fixtures.s3server import start_s3_server
from tests.fixtures.store_lifecycle import (
    RESTARTS,
    RETENTION,
    kills_upgrades_and_retention,
    s3_store,
)
from tests.fixtures.upgrade_pipeline import Pipeline
from tests.storage.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def _keys(s3_server, bucket: str, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
    client = s3_server.client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [entry["Key"][len(prefix) :] for entry in page.get("Contents", [])]
    return sorted(keys)


def test_the_whole_lifecycle_with_checkpoints_on_s3a(
    flinkish_env: FlinkishEnv, s3_server, s3_bucket: str
) -> None:
    """run, savepoint, stop, savepoint -d, run -s -p 4; the resumed job's driver and then
    its JVM killed mid-batch; an upgrade that becomes stable and one that rolls back; every
    row exactly once, and the bucket's keys are what retention keeps."""
    env, pipeline = flinkish_env, Pipeline(flinkish_env)
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
            **RETENTION,
        }
    )
    try:
        _lifecycle(env, pipeline, s3_server, s3_bucket)
    finally:  # the fixture's clean-up looks for registries on local disk only
        for listed in env.list_jobs():
            if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                env.run("cancel", listed["jid"], timeout=120)


def _lifecycle(env: FlinkishEnv, pipeline: Pipeline, s3_server, s3_bucket: str) -> None:  # type: ignore[no-untyped-def]
    bucket, cycle = s3_bucket.removeprefix("s3://"), pipeline.cycle
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
    resumed = cycle.start("-s", second, "-p", "4", *RESTARTS)
    cycle.wait_until_all_processed(timeout=300)
    assert env.job(resumed)["state"] == "RUNNING"
    resumed_keys = _keys(s3_server, bucket, f"checkpoints/{resumed}/")
    assert any(k.startswith("counts/commits/") for k in resumed_keys), resumed_keys

    store = s3_store(s3_server.client(), bucket)
    kills_upgrades_and_retention(env, pipeline, store, job, resumed, f"{s3_bucket}/savepoints/")
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


def test_s3_not_answering_then_gone_past_s3as_retries_under_a_running_job(
    flinkish_env: FlinkishEnv,
) -> None:
    """Two outages of the S3 endpoint under a running job whose checkpoints (and registry)
    are on S3 through S3A, each 30 s, the job reaching S3 through a TCP proxy:

    - the server of the test's own frozen (SIGSTOP): connections open and requests go
      unanswered, as in a network outage; then it answers again (SIGCONT) with every object
      it had. S3A's requests wait longer than that for an answer (60 s), so the job waits
      rather than failing over: no restart, its supervisor's and its driver's log lines say
      the registry answered late (the driver's missed heartbeats are not taken for a hang);
    - the endpoint gone (the proxy resets every connection) for longer than S3A's retries,
      set short here: the batch's checkpoint write fails, the job fails over under its
      restart strategy, ``list`` shows the restart and its exception history the failed S3A
      call; S3 back, a restart resumes it from its checkpoint.

    The input that arrived during each outage is processed exactly once."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    with start_s3_server() as server, TcpProxy(server.address) as proxy:
        bucket = server.bucket()
        env.write_conf(
            {
                **s3_through(server, proxy.endpoint),
                "execution.checkpointing.dir": f"{bucket}/checkpoints",
                # S3A gives up on a refused connection within seconds (its defaults: minutes)
                "fs.s3a.attempts.maximum": "1",
                "fs.s3a.retry.limit": "2",
                "fs.s3a.retry.interval": "500ms",
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
                _outage(30)
            finally:
                server.process.send_signal(signal.SIGCONT)
            cycle.add_input(1)
            cycle.wait_until_all_processed(timeout=420)
            listed = _running_again(env, job)
            logs = "".join(
                p.read_text(errors="replace") for p in (env.root / "log").glob(f"*{job}*.log")
            )
            # S3A's requests wait for an answer longer than the outage (60 s each): the job
            # waited, and its supervisor says the store answered late instead of taking the
            # driver's missed heartbeats for a hang
            assert listed["restarts"] == before["restarts"], listed
            assert "The job registry took" in logs, logs[-3000:]
            assert "The heartbeat took" in logs, logs[-3000:]  # the driver's side says so too

            proxy.stop()
            try:
                cycle.add_input(2)  # the next batch's writes are refused, past S3A's retries
                deadline = time.monotonic() + 120
                while not proxy.refused:
                    assert time.monotonic() < deadline, "nothing asked S3 while it was gone"
                    time.sleep(0.5)
                _outage(30)
            finally:
                proxy.start()
            cycle.add_input(1)
            cycle.wait_until_all_processed(timeout=420)
            listed = _running_again(env, job)
            assert listed["restarts"] > before["restarts"], listed  # failed over, not waited
            causes = "\n".join(str(entry["cause"]) for entry in listed["exceptions"])
            # S3A's call that failed, on the job's checkpoint, and why
            assert f"on {bucket}/checkpoints/{job}/" in causes, causes[-3000:]
            assert "Unable to execute HTTP request: Connection reset" in causes, causes[-3000:]
            env.run("cancel", job, check=True)
        finally:
            with contextlib.suppress(Exception):
                server.process.send_signal(signal.SIGCONT)
                proxy.start()
                for listed in env.list_jobs():
                    if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                        env.run("cancel", listed["jid"], timeout=120)
            env.wait_until_processes_end()  # their registry goes with the server
    cycle.check_exactly_once()


def _outage(seconds: float) -> None:
    """Let an outage last ``seconds`` (its length, not an assertion)."""
    over = time.monotonic() + seconds
    while time.monotonic() < over:
        time.sleep(1)


def _running_again(env: FlinkishEnv, job: str) -> dict:
    """The job as listed once it is RUNNING again (RESTARTING meanwhile, nothing else)."""
    deadline = time.monotonic() + 300
    while (listed := env.polled(job))["state"] != "RUNNING":
        assert listed["state"] == "RESTARTING", listed
        assert time.monotonic() < deadline, listed
        time.sleep(1)
    return listed


def test_s3_answering_slowdown_under_a_running_job_and_its_savepoints(
    flinkish_env: FlinkishEnv, s3_server, s3_bucket: str
) -> None:
    """S3 throttles (503 SlowDown, from a real HTTP proxy in front of the server) under a job
    whose checkpoints and registry are on S3 through S3A: with a share of requests throttled,
    S3A's and boto3's retries absorb it, the job runs on without a restart and a savepoint
    completes whole. With the savepoint's prefix throttled past every retry, the savepoint
    fails in one line naming SlowDown, the job runs on, and its clean-up
    (a DeleteObjects of the bucket) removes what it wrote. S3 back: a stop's savepoint
    and its resume give every row exactly once."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    bucket = s3_bucket.removeprefix("s3://")
    with SlowDownProxy(s3_server.address) as proxy:
        env.write_conf(
            {
                **s3_through(s3_server, proxy.endpoint),
                "execution.checkpointing.dir": f"{s3_bucket}/checkpoints",
                "execution.checkpointing.savepoint-dir": f"{s3_bucket}/savepoints",
            }
        )
        try:
            cycle.add_input(2)
            job = cycle.start()
            cycle.wait_until_all_processed(timeout=300)
            before = env.polled(job)
            proxy.slow_down(every=3)  # a third of all requests: S3A's, flinkish's
            cycle.add_input(2)
            cycle.wait_until_all_processed(timeout=300)
            assert proxy.answered_to("hadoop"), proxy.answered[-5:]  # S3A met SlowDown
            sp = savepoint_path(env.run("savepoint", job, f"{s3_bucket}/manual", check=True).stdout)
            assert proxy.answered_to("flinkish"), proxy.answered[-5:]  # boto3 met it too
            assert "_metadata" in _keys(s3_server, bucket, sp.removeprefix(s3_bucket + "/") + "/")
            listed = env.polled(job)
            assert (listed["state"], listed["restarts"]) == ("RUNNING", before["restarts"])

            proxy.slow_down(prefix=f"/{bucket}/throttled/", after=2)  # past every retry
            failed = env.run("savepoint", job, f"{s3_bucket}/throttled")
            assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
            lines = failed.stderr.strip().splitlines()
            assert "SlowDown" in lines[0] and f"the S3 endpoint {proxy.endpoint}" in lines[0], lines
            assert len(lines) <= 2, lines  # the line, and its hint
            assert s3_server.secret_key not in failed.stderr + failed.stdout
            proxy.recover()
            # absent: its clean-up (one DeleteObjects of the bucket, not of the throttled
            # prefix) removed the files it had written
            assert partial_savepoints(s3_server.client(), bucket, "throttled/") == {}
            assert env.polled(job)["state"] == "RUNNING"

            cycle.add_input(1)
            cycle.wait_until_all_processed(timeout=300)
            stopped = savepoint_path(
                env.run("stop", "--savepointPath", f"{s3_bucket}/manual", job, check=True).stdout
            )
            cycle.add_input(1)
            resumed = cycle.start("-s", stopped)
            cycle.wait_until_all_processed(timeout=300)
            env.run("cancel", resumed, check=True)
        finally:
            for listed in env.list_jobs():
                if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                    env.run("cancel", listed["jid"], timeout=120)
    cycle.check_exactly_once()
