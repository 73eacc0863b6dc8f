"""Storage faults during a running job's savepoint, through the CLI as users run it: a full
disk, the S3 endpoint gone during the upload (of a savepoint, and of a stop's), a damaged
checkpoint file; and ``--claimMode claim`` of a running job's checkpoint. Each case: one
clear error (exit 1, no traceback), the job unharmed or ended with a cause, nothing
half-written that validates, and a retry or resume that gives every row exactly once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv
from tests.fixtures.s3_faults import (
    assert_incomplete_refused,
    cut_off_once_written,
    partial_savepoints,
    s3_through,
)
from tests.storage.tcp_proxy import TcpProxy
from tests.storage.tmpfs import fill, small_tmpfs

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


def _error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def test_full_disk_during_a_savepoint_then_a_retry(flinkish_env: FlinkishEnv) -> None:
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed()
    with small_tmpfs(env.root / "small", "2m") as disk:
        filler = fill(disk, 16 * 1024)
        message = _error(env.run("savepoint", job, str(disk / "sp")))
        assert "No space left on the device to write" in message
        assert str(disk / "sp") in message
        assert env.job(job)["state"] == "RUNNING", "a failed savepoint leaves the job running"
        left = list((disk / "sp").glob("savepoint-*")) if (disk / "sp").exists() else []
        assert left == [], "the partial savepoint was removed"
        filler.unlink()
        path = savepoint_path(env.run("savepoint", job, str(disk / "sp"), check=True).stdout)
        assert (Path(path) / "_metadata").is_file()
        cycle.add_input(1)
        cycle.wait_until_all_processed()
        stopped = savepoint_path(env.run("stop", job, check=True).stdout)
    cycle.add_input(2)
    resumed = cycle.start("-s", stopped)
    cycle.wait_until_all_processed()
    env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()


def test_s3_endpoint_gone_during_a_savepoint_then_a_retry(
    flinkish_env: FlinkishEnv, s3_server, s3_bucket: str
) -> None:
    env, cycle = flinkish_env, Cycle(flinkish_env)
    with TcpProxy(s3_server.address) as proxy:
        env.write_conf(s3_through(s3_server, proxy.endpoint))  # the job's S3: the proxy only
        cycle.add_input(3)
        job = cycle.start()
        cycle.wait_until_all_processed()
        target = f"{s3_bucket}/savepoints"
        proxy.delay, proxy.piece = 0.05, 4096  # slow enough to stop it in the middle
        bucket = s3_bucket.removeprefix("s3://")
        direct = s3_server.client()  # the test's own view of S3, not through the proxy
        # S3 cut off once the savepoint wrote its first object: a half-written savepoint is
        # left behind, which nothing may take for a whole one
        with cut_off_once_written(direct, bucket, "savepoints/", proxy.stop):
            message = _error(env.run("savepoint", job, target))
        assert f"the S3 endpoint {proxy.endpoint}" in message, message
        assert s3_server.secret_key not in message
        assert env.job(job)["state"] == "RUNNING"
        proxy.delay = 0.0
        proxy.start()
        partial = partial_savepoints(direct, bucket, "savepoints/")
        assert len(partial) == 1, partial  # the clean-up could not delete it while S3 was gone
        for name in partial:
            assert_incomplete_refused(env, f"{target}/{name}")
        path = savepoint_path(env.run("savepoint", job, target, check=True).stdout)
        env.run("cancel", job, check=True)
        cycle.add_input(1)
        resumed = cycle.start("-s", path)
        cycle.wait_until_all_processed()
        env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()


def test_a_running_jobs_checkpoint_claimed_or_damaged(flinkish_env: FlinkishEnv) -> None:
    """A running job's checkpoint: ``--claimMode claim`` of it refused while the job runs;
    one of its files damaged: its savepoint, its claim and its resume refused, each in one
    error; repaired once the job was cancelled, claimed and resumed: every row exactly once.
    (One job for both cases: each job is a driver start.)"""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed()
    jobs_before = {p.name for p in env.checkpoints.iterdir()}
    source = str(env.checkpoints / job)
    args = ["run", "-d", "-s", source, "--claimMode", "claim", COUNTS_JOB]
    refused = _error(env.run(*args, "--input", str(cycle.inputs), "--output", "o2"))
    assert f"Cannot claim {source}: it belongs to job {job}" in refused
    assert "which is RUNNING" in refused and "--claimMode no_claim" in refused
    assert {p.name for p in env.checkpoints.iterdir()} == jobs_before, "nothing started"

    commit = env.checkpoints / job / "counts" / "commits" / "0"
    original = commit.read_bytes()
    commit.write_bytes(original[: len(original) // 2])  # truncated: its .crc says otherwise
    message = _error(env.run("savepoint", job))
    assert "The checkpoint of query 'counts'" in message and "commits/0" in message
    assert "No savepoint was written" in message
    assert list(env.savepoints.glob("savepoint-*")) == []
    assert env.job(job)["state"] == "RUNNING"

    refused = _error(
        env.run("run", "-d", "-s", str(env.checkpoints / job), "--claimMode", "claim",
                COUNTS_JOB, "--input", "x", "--output", "y")
    )  # fmt: skip
    assert f"belongs to job {job}" in refused or "commits/0" in refused
    env.run("cancel", job, check=True)
    resume = ["-s", str(env.checkpoints / job)]
    refused = _error(env.run("run", "-d", *resume, COUNTS_JOB, "--input", "x", "--output", "y"))
    assert "commits/0" in refused and "Nothing was started" in refused
    commit.write_bytes(original)  # repaired: the retained checkpoint resumes
    cycle.add_input(2)
    resumed = cycle.start(*resume, "--claimMode", "claim")  # the job is gone: it may be claimed
    cycle.wait_until_all_processed()
    env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()


def test_a_stop_whose_savepoint_fails_leaves_the_job_running(flinkish_env: FlinkishEnv) -> None:
    """As Flink's (FLINK-21030): ``stop --savepointPath`` onto a full disk says why it failed,
    and the job runs on from its latest checkpoint (its driver restarted) instead of ending
    FAILED without a savepoint; the input that arrives then is processed, and a stop to a
    writable target ends it with a savepoint: every row once."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(2)
    job = cycle.start()
    cycle.wait_until_all_processed()
    first_driver = env.driver_pid(job)
    with small_tmpfs(env.root / "small", "2m") as disk:
        fill(disk, 16 * 1024)
        message = _error(env.run("stop", "--savepointPath", str(disk / "sp"), job))
        assert "No space left on the device to write" in message, message
        assert f"Cannot stop job {job}: its savepoint failed: " in message, message
        assert "The job runs on from its latest checkpoint" in message, message
        left = list((disk / "sp").glob("savepoint-*")) if (disk / "sp").exists() else []
        assert left == [], "the partial savepoint was removed"
    deadline = time.monotonic() + 180  # a driver of its own again, RUNNING
    while (listed := env.polled(job))["state"] != "RUNNING" or env.driver_pid(job) == first_driver:
        assert listed["state"] in ("RUNNING", "RESTARTING"), listed
        assert time.monotonic() < deadline, listed
        time.sleep(0.5)
    assert listed["last-savepoint"] is None or listed["last-savepoint"]["state"] != "COMPLETED"
    cycle.add_input(2)  # the job that runs on reads it
    cycle.wait_until_all_processed()
    stopped = savepoint_path(env.run("stop", "--savepointPath", str(env.savepoints), job,
                                     check=True).stdout)  # fmt: skip
    assert env.job(job)["state"] == "FINISHED"
    assert (Path(stopped) / "_metadata").is_file()
    cycle.check_exactly_once()


def test_a_stop_whose_s3_savepoint_is_cut_off_leaves_the_job_running(
    flinkish_env: FlinkishEnv, s3_server, s3_bucket: str
) -> None:
    """As Flink's (FLINK-21030), with a real store fault: ``stop --savepointPath s3://...``
    while the S3 endpoint goes away in the middle of the savepoint. The stop exits 1 with
    one line saying the savepoint failed and why; the job runs on from its latest checkpoint
    (RUNNING again, its driver restarted) and keeps committing batches; the half-written
    savepoint left on S3 is refused by ``savepoint info`` and ``run -s``; a later stop to the
    same target, S3 back, ends the job with a whole savepoint, and ``run -s`` of it gives
    every row exactly once."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    with TcpProxy(s3_server.address) as proxy:
        env.write_conf(s3_through(s3_server, proxy.endpoint))  # the job's S3: the proxy only
        cycle.add_input(3)
        job = cycle.start()
        cycle.wait_until_all_processed()
        first_driver = env.driver_pid(job)
        target = f"{s3_bucket}/stops"
        bucket = s3_bucket.removeprefix("s3://")
        direct = s3_server.client()  # the test's own view of S3, not through the proxy
        proxy.delay, proxy.piece = 0.05, 4096  # slow enough to cut it off in the middle
        with cut_off_once_written(direct, bucket, "stops/", proxy.stop):
            result = env.run("stop", "--savepointPath", target, job)
        message = _error(result)
        lines = [line for line in message.splitlines() if line.strip()]
        assert "savepoint failed" in lines[0], message
        assert f"the S3 endpoint {proxy.endpoint}" in lines[0], message
        assert "runs on from its latest checkpoint" in lines[0], message
        assert s3_server.secret_key not in message + result.stdout
        assert len(lines) <= 2, message  # the line, and its hint

        deadline = time.monotonic() + 180  # a driver of its own again, RUNNING
        while (listed := env.polled(job))["state"] != "RUNNING" or env.driver_pid(
            job
        ) == first_driver:
            assert listed["state"] in ("RUNNING", "RESTARTING"), listed
            assert time.monotonic() < deadline, listed
            time.sleep(0.5)
        assert env.job(job)["state"] == "RUNNING"  # as `flinkish list` shows it
        committed = listed["queries"]["counts"]["last-committed-batch"]
        cycle.add_input(2)  # the job that runs on reads it
        cycle.wait_until_all_processed()
        env.wait_for_batches(job, "counts", committed + 1)

        proxy.delay = 0.0
        proxy.start()
        partial = partial_savepoints(direct, bucket, "stops/")
        assert len(partial) == 1, partial  # its clean-up could not delete it with S3 gone
        for name, keys in partial.items():
            assert not any(k.endswith("/_metadata") for k in keys), keys  # never marked whole
            assert_incomplete_refused(env, f"{target}/{name}")

        stopped = savepoint_path(env.run("stop", "--savepointPath", target, job, check=True).stdout)
        assert stopped.startswith(f"{target}/savepoint-"), stopped
        assert env.job(job)["state"] == "FINISHED"
        cycle.add_input(1)
        resumed = cycle.start("-s", stopped)
        cycle.wait_until_all_processed()
        env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()
