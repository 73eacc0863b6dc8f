"""Savepoints end to end on real Spark: trigger, stop, resume, on local disk and S3 (a
rescale from a savepoint, RocksDB's, is in ``tests/runtime/test_driver_failover.py``).

The job counts rows per key (a stateful query) and copies every row to Spark's exactly-once
file sink. After each cycle, every count equals the ground truth computed from the input and
the sink holds every input row exactly once.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import (
    COUNTS_JOB,
    JOBS,
    POLL_EVERY,
    FlinkishEnv,
    job_id_of,
    write_events,
)
from tests.fixtures.long_form import GATE_SKIPS, LONG_FORM
from tests.fixtures.savepoint_files import assert_whole

pytestmark = pytest.mark.spark


def _wait_for_history(env: FlinkishEnv, job: str, enough, timeout: float = 120) -> list[dict]:
    """The job's savepoint history (``savepoint list --output json``) once ``enough`` of it."""
    deadline = time.monotonic() + timeout
    while True:
        listed = env.run("savepoint", "list", job, "--output", "json", check=True).stdout
        records = json.loads(listed)["savepoints"]
        if enough(records):
            return records
        assert time.monotonic() < deadline, records
        time.sleep(POLL_EVERY)


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _resume_refused(env: FlinkishEnv, savepoint: str, *options: str):
    """``run -d -s savepoint`` that must be refused before anything starts."""
    args = ("run", "-d", "-s", savepoint, *options, COUNTS_JOB, "--input", "x", "--output", "y")
    return env.run(*args, check=False)


def _job_dirs(env: FlinkishEnv) -> set[str]:
    return {p.name for p in env.checkpoints.iterdir()} if env.checkpoints.exists() else set()


def _check_resumed_counts(env: FlinkishEnv, job: str, stopped_at: dict[str, int]) -> None:
    """The REST API and the metrics count a resumed job's own committed batches: those after
    the batches of the savepoint it resumed from (``stopped_at``), Flink's completed count."""
    from tests.fixtures.web_server import running_web

    with running_web(env) as web:
        for _attempt in range(5):  # the job is idle, all its input processed: a batch is rare
            before = env.job(job)["queries"]
            counts = web.get(f"/jobs/{job}/checkpoints").json()["counts"]
            metrics = web.get("/metrics").body.decode()
            if env.job(job)["queries"] == before:
                break
    expected = sum(
        query["last-committed-batch"] - stopped_at[name]
        for name, query in before.items()
        if query["last-committed-batch"] is not None
    )
    assert expected > 0 and counts["completed"] == expected, (counts, before, stopped_at)
    sample = f'flink_jobmanager_job_numberOfCompletedCheckpoints{{job_id="{job}",'
    line = next(line for line in metrics.splitlines() if line.startswith(sample))
    assert line.endswith(f"}} {expected}.0"), line


def test_savepoint_stop_resume_cycle_on_local_disk(flinkish_env: FlinkishEnv) -> None:
    """Trigger, checkpoint, stop with drain, resume with periodic savepoints and retention;
    then the savepoints left behind are refused where resuming them would be wrong: the older
    one into the sink that moved on, damaged, incomplete and mismatched copies."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed()

    taken = env.run("savepoint", job, check=True).stdout
    first = savepoint_path(taken)
    assert re.fullmatch(rf".*/savepoint-{job[:6]}-[0-9a-f]{{12}}", first), first
    assert (Path(first) / "_metadata").is_file()
    assert env.job(job)["state"] == "RUNNING", "a savepoint leaves the job running"

    cycle.add_input(2)
    cycle.wait_until_all_processed()
    checkpoint = env.run("checkpoint", job, check=True)
    assert re.search(rf"^Checkpoint \d+ for job {job} completed\.$", checkpoint.stdout, re.M)
    assert f"Checkpoint directory: {env.checkpoints / job} (" in checkpoint.stderr
    assert re.search(r"counts at batch \d+", checkpoint.stderr)
    cycle.add_input(1)  # --drain processes it before the savepoint: nothing left to wait for
    stopped = env.run("stop", "--drain", job, check=True).stdout
    assert len(cycle.raw()) == len(cycle.rows), "drained before the savepoint"
    second = savepoint_path(stopped)
    assert env.job(job)["state"] == "FINISHED"
    before = _digest(Path(second))
    # the savepoint history, newest first, as a CI script reads it
    history = json.loads(env.run("savepoint", "list", job, "--output", "json", check=True).stdout)
    records = history["savepoints"]
    assert [(r["trigger"], r["state"], r["path"]) for r in records] == [
        ("STOP", "COMPLETED", second),
        ("MANUAL", "COMPLETED", first),
    ]
    for record in records:
        assert record["job_id"] == job and set(record["batches"]) == {"counts", "raw"}
        on_disk = sum(f.stat().st_size for f in Path(record["path"]).rglob("*") if f.is_file())
        assert 0 < record["size"] <= on_disk  # its files, without the manifest
    assert records[0]["batches"]["raw"] >= records[1]["batches"]["raw"]
    assert env.job(job)["last-savepoint"] == records[0], "its newest, as savepoint list shows it"
    stopped_at = records[0]["batches"]

    cycle.add_input(2)  # arrives while the job is stopped
    periodic = ("-D", "flinkish.savepoint.periodic.interval=1 s")
    retained = ("-D", "kubernetes.operator.savepoint.history.max.count=2")  # the operator's key
    resumed = cycle.start("-s", second, *periodic, *retained)
    cycle.wait_until_all_processed()
    # the resumed job takes periodic savepoints while it runs; retention keeps two
    records = _wait_for_history(
        env, resumed, lambda rs: sum(r["state"] == "DISPOSED" for r in rs) >= 2
    )
    assert {r["trigger"] for r in records} == {"PERIODIC"}
    kept = [r["path"] for r in records if r["state"] == "COMPLETED"]
    gone = [r["path"] for r in records if r["state"] == "DISPOSED"]
    assert len(kept) >= 2 and all(Path(p, "_metadata").is_file() for p in kept[:2])
    assert not any(Path(p).exists() for p in gone)
    assert records[0]["state"] == "COMPLETED", "the newest is never disposed"
    last = env.job(resumed)["last-savepoint"]  # periodic savepoints go on meanwhile
    assert last["state"] == "COMPLETED" and last["record_id"] >= records[0]["record_id"]
    assert env.job(resumed)["state"] == "RUNNING"
    _check_resumed_counts(env, resumed, stopped_at)
    env.run("cancel", resumed, check=True)
    cycle.check_exactly_once()
    assert _digest(Path(second)) == before, "no_claim never modifies the savepoint"

    # savepoint info shows queries, batches, operators and state rows
    info = env.run("savepoint", "info", second, "--output", "json", check=True).stdout
    document = json.loads(info)
    queries = {q["name"]: q for q in document["queries"]}
    assert set(queries) == {"counts", "raw"}
    counts_op = queries["counts"]["stateful-operators"][0]
    assert counts_op["partitions"] == 2
    assert counts_op["rows"] == {"default": 7}
    assert queries["raw"]["stateful-operators"] == []

    # a hashmap savepoint cannot be rescaled: said clearly, nothing started
    dirs = _job_dirs(env)
    refused = _resume_refused(env, second, "-p", "4")
    assert "Rescaling needs state.backend.type: rocksdb" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _job_dirs(env) == dirs

    # restoring from the first savepoint is still possible (it was never modified)
    assert env.run("savepoint", "info", "--no-rows", first, check=True).returncode == 0

    # The savepoints the cycle left serve the refusals below: each scenario needs a stopped
    # counting job's savepoints, and a job of its own would be the same job started again.
    _an_older_savepoint_into_a_file_sink_that_moved_on_is_refused(env, cycle, first)
    _damaged_incomplete_and_mismatched_savepoints_are_refused(env, job, Path(second))


def _an_older_savepoint_into_a_file_sink_that_moved_on_is_refused(
    env: FlinkishEnv, cycle: Cycle, older: str
) -> None:
    """Spark's file sink skips batch ids it already holds: resuming an older savepoint into
    the output the job wrote after it would lose input, so the job refuses, naming both.

    ``older`` was taken before the job (and the job resumed after it) wrote more batches to
    the sink; both jobs have ended."""
    held_before = sorted(p.name for p in (cycle.output / "raw" / "_spark_metadata").iterdir())
    refused = env.run("run", "-d", "-s", older, *cycle.args(), check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "would skip batches" in refused.stderr and "Traceback" not in refused.stderr
    assert "latest savepoint" in refused.stderr
    held_after = sorted(p.name for p in (cycle.output / "raw" / "_spark_metadata").iterdir())
    assert held_after == held_before, "the sink's output is untouched"


def _damaged_incomplete_and_mismatched_savepoints_are_refused(
    env: FlinkishEnv, job: str, path: Path
) -> None:
    """``path`` is the savepoint ``stop`` took of ``job`` (the counting job, hashmap state)."""
    assert "it is FINISHED" in env.run("savepoint", job, check=False).stderr

    damaged = env.savepoints / "savepoint-aaaaaa-000000000001"
    shutil.copytree(path, damaged)
    state_file = next(p for p in damaged.rglob("*.delta") if p.stat().st_size > 0)
    content = state_file.read_bytes()
    state_file.write_bytes(content[:-1] + bytes([content[-1] ^ 0xFF]))  # same size, new bytes
    incomplete = env.savepoints / "savepoint-aaaaaa-000000000002"
    shutil.copytree(path, incomplete)
    (incomplete / "_metadata").unlink()

    dirs = _job_dirs(env)
    for bad, message in (
        (damaged, "is damaged"),
        (incomplete, "is not a complete savepoint"),
        (env.root / "nowhere", "does not exist"),
    ):
        result = env.run(
            "run", "-d", "-s", str(bad), COUNTS_JOB, "--input", "x", "--output", "y", check=False
        )
        assert result.returncode != 0 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert _job_dirs(env) == dirs, "nothing started"

    # a job whose queries do not match the savepoint fails at its first wait (its execute()),
    # before it counts as RUNNING: run -d says why and exits 1
    for name in ("small", "medium", "large"):
        write_events(env.root / "in3" / name, [{"key": "a", "value": 1, "seq": 1}])
    other = env.run(
        "run",
        "-d",
        "-s",
        str(path),
        str(JOBS / "three_queries.py"),
        str(env.root / "in3"),
        str(env.root / "out3"),
        check=False,
    )
    assert "which the job did not start" in other.stderr, other.stderr
    assert "--allowNonRestoredState" in other.stderr
    allowed = env.run(
        "run",
        "-d",
        "-n",
        "-s",
        str(path),
        str(JOBS / "three_queries.py"),
        str(env.root / "in3"),
        str(env.root / "out3"),
        check=True,
    )
    env.run("cancel", job_id_of(allowed.stdout), check=True)

    # dispose refuses what is not a savepoint and deletes what is
    not_one = env.root / "precious"
    not_one.mkdir()
    (not_one / "data").write_text("keep me")
    refused = env.run("savepoint", "-d", str(not_one), check=False)
    assert "is not a savepoint" in refused.stderr and (not_one / "data").exists()
    assert "no _metadata" in env.run("savepoint", "-d", str(incomplete), check=False).stderr
    assert incomplete.exists()
    env.run("savepoint", "-d", str(path), check=True)
    assert not path.exists()
    listed = json.loads(env.run("savepoint", "list", "--output", "json", check=True).stdout)
    [disposed] = [r for r in listed["savepoints"] if r["path"] == str(path)]
    assert (disposed["trigger"], disposed["state"]) == ("STOP", "DISPOSED")


def test_savepoints_on_s3_and_restore_from_s3(flinkish_env: FlinkishEnv, s3_server, s3_bucket):
    """Savepoints on S3 through a job's life: one triggered there; an upgrade whose savepoint
    goes there, whose new program restores from it and takes periodic savepoints there,
    which retention disposes of on S3; a stop whose savepoint goes there. Each is in the
    history, every row reached the sink once, and the secret key is nowhere on disk. (The
    upgrade is the stop and resume through S3: one driver start fewer than doing both.)"""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    env.write_conf(s3_server.flink_conf())
    cycle.add_input(2)
    job = cycle.start()
    cycle.wait_until_all_processed()
    target = f"{s3_bucket}/savepoints"
    first = savepoint_path(env.run("savepoint", job, target, check=True).stdout)
    assert first.startswith(f"{target}/savepoint-{job[:6]}-")
    history = json.loads(env.run("savepoint", "list", "--output", "json", check=True).stdout)
    [record] = history["savepoints"]  # a savepoint on S3, recorded in the registry
    assert (record["path"], record["state"], record["trigger"]) == (first, "COMPLETED", "MANUAL")
    assert record["size"] > 0
    cycle.add_input(1)
    cycle.wait_until_all_processed()
    # an upgrade through S3: its savepoint goes there, the new program restores from it, and
    # then takes periodic savepoints there too, which retention disposes of on S3
    periodic = [
        *("-D", f"execution.checkpointing.savepoint-dir={target}/periodic"),
        *("-D", "flinkish.savepoint.periodic.interval=1 s"),
        *("-D", "flinkish.savepoint.history.max-count=2"),
    ]
    upgraded = env.run(
        "upgrade", "--savepointPath", target, *periodic, job, *cycle.args(), check=True
    )
    through = savepoint_path(upgraded.stdout)
    assert through.startswith(f"{target}/savepoint-{job[:6]}-")
    assert re.search(
        rf"^Upgrade of job {job} completed: .* from savepoint {through} ", upgraded.stdout, re.M
    )
    cycle.add_input(2)  # arrives after the upgrade's savepoint: the new program reads it
    cycle.wait_until_all_processed()
    newest = job_id_of(upgraded.stdout)
    _wait_for_history(
        env, newest, lambda rs: any(r["state"] == "DISPOSED" for r in rs), timeout=180
    )
    # the stop's savepoint on S3; its retention pass is done when it answers, and no periodic
    # savepoint follows it: the history and the bucket read below are final
    last = savepoint_path(env.run("stop", "--savepointPath", target, newest, check=True).stdout)
    assert last.startswith(f"{target}/savepoint-{newest[:6]}-")
    bucket = s3_bucket.removeprefix("s3://")
    client = s3_server.client()
    client.head_object(Bucket=bucket, Key=f"{last.removeprefix(s3_bucket + '/')}/_metadata")
    records = _wait_for_history(env, newest, lambda rs: True)
    assert (records[0]["path"], records[0]["trigger"]) == (last, "STOP")
    periodic_records = [r for r in records if r["trigger"] == "PERIODIC"]
    assert periodic_records[0]["state"] == "COMPLETED", "the newest is never disposed"
    stored = {
        o["Key"]
        for o in client.list_objects_v2(Bucket=bucket, Prefix="savepoints/periodic/")["Contents"]
    }
    for record in periodic_records:
        manifest = f"{record['path'].removeprefix(s3_bucket + '/')}/_metadata"
        assert (manifest in stored) == (record["state"] == "COMPLETED"), record
    assert through in {r["path"] for r in records if r["trigger"] == "UPGRADE"}  # the lineage
    cycle.check_exactly_once()
    info = env.run("savepoint", "info", "--no-rows", first, check=True).stdout
    assert "counts" in info and "raw" in info
    # the secret key reaches Spark but is never written where others can read it
    secret = s3_server.secret_key
    for path in list(env.logs.rglob("*")) + list(env.checkpoints.rglob("*.json")):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    assert secret not in env.run("config", check=True).stdout


@pytest.mark.skipif(not LONG_FORM, reason=GATE_SKIPS)
def test_driver_killed_during_a_savepoint_leaves_nothing_that_validates(
    flinkish_env: FlinkishEnv,
) -> None:
    """The long form's: the gate kills a savepoint's driver with Spark once its manifest is
    there (``tests/runtime/test_driver_failover.py``; the long form's further rounds anywhere
    in its copy) and kills the savepoint's own process after every change it makes, without
    Spark (``tests/savepoints/test_savepoint_kills.py``). This one kills the job's whole
    session as the savepoint's directory appears."""
    from tests.fixtures.flinkish_env import kill_session, session_of

    env, cycle = flinkish_env, Cycle(flinkish_env)
    env.write_conf({"heartbeat.timeout": "10 s"})
    cycle.add_input(3)
    job = cycle.start()
    cycle.wait_until_all_processed()
    session = session_of(env.driver_pid(job))
    waiting = env.popen("savepoint", job)
    deadline = time.monotonic() + 60
    while not list(env.savepoints.glob("savepoint-*")):  # the copy has begun: kill now
        assert time.monotonic() < deadline, "the savepoint never started"
        time.sleep(0.005)
    assert kill_session(session)
    out, err = waiting.communicate(timeout=120)
    directories = list(env.savepoints.glob("savepoint-*"))
    assert len(directories) == 1, directories  # a killed driver cleans nothing up
    directory = directories[0]
    check = env.run("savepoint", "info", "--no-rows", str(directory))
    if waiting.returncode == 0:  # the copy was done just before the kill: a whole savepoint
        assert f"Savepoint completed. Path: {directory}" in out.splitlines(), out
    else:
        assert "Traceback" not in err and err.startswith("ERROR: "), err
    # Judged by the savepoint itself, not by the command's answer (a driver killed after
    # the manifest's rename and before it answered leaves a whole savepoint, unanswered):
    if check.returncode == 0:
        assert_whole(directory, "the savepoint the killed driver left")
    else:
        assert "is not a complete savepoint" in check.stderr, check.stderr
        refused = _resume_refused(env, str(directory))
        assert "is not a complete savepoint" in refused.stderr
    env.wait_for_state(job, {"FAILED"}, timeout=60)
