"""``flinkish run`` on embedded local Spark: attached, detached, BATCH, and bad input."""

from __future__ import annotations

import collections
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import (
    COUNTS_JOB,
    JOBS,
    FlinkishEnv,
    job_id_of,
    read_json_dir,
    write_events,
)

pytestmark = pytest.mark.spark


def _rows(start: int, n: int, keys: int = 5) -> list[dict]:
    return [{"key": f"k{i % keys}", "value": i, "seq": i} for i in range(start, start + n)]


def _final_counts(output: Path) -> dict[str, int]:
    """The last count written for each key (batches overwrite themselves idempotently)."""
    latest: dict[str, tuple[int, int]] = {}
    for batch_dir in (output / "counts").glob("batch=*"):
        batch = int(batch_dir.name.split("=")[1])
        for row in read_json_dir(batch_dir):
            if row["key"] not in latest or latest[row["key"]][0] < batch:
                latest[row["key"]] = (batch, row["count"])
    return {key: count for key, (_, count) in latest.items()}


def test_attached_batch_run_processes_everything_and_finishes(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    rows = []
    for start in range(0, 40, 10):  # 4 files: 2 batches of each query (2 files a trigger)
        rows += _rows(start, 10)
        write_events(inputs, _rows(start, 10))
    output = flinkish_env.root / "out"
    result = flinkish_env.run(
        "run",
        "-D",
        "execution.runtime-mode=BATCH",
        COUNTS_JOB,
        "--input",
        str(inputs),
        "--output",
        str(output),
        check=True,
    )
    job_id = job_id_of(result.stdout)
    assert len(job_id) == 32
    lines = result.stdout.splitlines()
    end = lines.index("Program execution finished")
    assert lines[end + 1] == f"Job with JobID {job_id} has finished."
    assert lines[end + 2].startswith("Job Runtime: ") and lines[end + 2].endswith(" ms")
    # flinkish's line per micro-batch goes to standard error, off Flink's lines
    assert " query=" not in result.stdout
    batch_lines = [line for line in result.stderr.splitlines() if " query=" in line]
    assert any("query=counts batch=0 " in line for line in batch_lines)
    assert "Traceback" not in result.stderr and "INFO" not in result.stdout
    # every input row exactly once in the raw sink; counts equal the ground truth
    raw = read_json_dir(output / "raw")
    assert sorted(r["seq"] for r in raw) == list(range(40))
    assert {r["tag"] for r in raw} == {f"tagged-k{i}" for i in range(5)}
    truth = collections.Counter(r["key"] for r in rows)
    assert _final_counts(output) == dict(truth)
    # checkpoints are stable per query under <execution.checkpointing.dir>/<JobID>/
    job_dir = flinkish_env.checkpoints / job_id
    assert (job_dir / "counts" / "commits").is_dir()
    assert (job_dir / "raw" / "commits").is_dir()
    job = flinkish_env.job(job_id)
    assert job["state"] == "FINISHED"
    assert job["name"] == "counts_job"
    # the full driver log is kept, and `logs` prints it
    logs = flinkish_env.run("logs", job_id, check=True)
    assert "MicroBatchExecution" in logs.stdout


def test_detached_streaming_job_is_listed_and_cancelled(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, _rows(0, 10))
    output = flinkish_env.root / "out"
    result = flinkish_env.run(
        "run", "-d", COUNTS_JOB, "--input", str(inputs), "--output", str(output), check=True
    )
    job_id = job_id_of(result.stdout)
    assert result.stdout.strip().splitlines()[-1] == f"Job has been submitted with JobID {job_id}"
    listing = flinkish_env.run("list", check=True).stdout
    assert f" : {job_id} : counts_job (RUNNING)" in listing
    assert "Running/Restarting Jobs" in listing
    flinkish_env.wait_for_batches(job_id, "counts", 0)
    cancel = flinkish_env.run("cancel", job_id, check=True)
    assert f"Cancelled job {job_id}." in cancel.stdout
    assert flinkish_env.job(job_id)["state"] == "CANCELED"
    assert job_id not in flinkish_env.run("list", check=True).stdout
    terminated = flinkish_env.run("list", "-a", check=True).stdout
    assert f" : {job_id} : counts_job (CANCELED)" in terminated
    again = flinkish_env.run("cancel", job_id, check=False)
    assert "it is CANCELED" in again.stderr and "Traceback" not in again.stderr


def test_job_that_raises_at_start_fails_with_its_cause(flinkish_env: FlinkishEnv) -> None:
    result = flinkish_env.run("run", "-d", str(JOBS / "raises_at_start.py"), check=False)
    assert result.returncode == 1
    assert "ValueError: the lookup table is missing" in result.stderr
    assert "raises_at_start.py:6" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Job has been submitted" not in result.stdout


def test_udf_failure_is_reported_in_a_few_lines(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, _rows(0, 3))
    result = flinkish_env.run(
        "run",
        str(JOBS / "fails_in_batch.py"),
        str(inputs),
        str(flinkish_env.root / "out"),
        check=False,
    )
    assert result.returncode == 1
    assert "negative price" in result.stderr
    assert "\tat org.apache" not in result.stderr
    assert len(result.stderr.splitlines()) < 15


def test_batch_mode_waits_for_every_query(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    sizes = {"small": 1, "medium": 3, "large": 6}
    for name, files in sizes.items():
        for index in range(files):
            write_events(inputs / name, _rows(index * 10, 10))
    output = flinkish_env.root / "out"
    flinkish_env.run(
        "run",
        "-D",
        "execution.runtime-mode=BATCH",
        str(JOBS / "three_queries.py"),
        str(inputs),
        str(output),
        check=True,
    )
    for name, files in sizes.items():
        assert len(read_json_dir(output / name)) == files * 10, name


def test_a_parallelism_is_that_many_tasks_after_a_shuffle_even_for_a_small_batch(
    flinkish_env: FlinkishEnv,
) -> None:
    """``-p 3``: a lookup after a repartition runs in 3 tasks (Spark's adaptive execution
    would merge a small batch's shuffle partitions into one, one row at a time)."""
    inputs, output = flinkish_env.root / "in", flinkish_env.root / "out"
    write_events(inputs, _rows(0, 60, keys=30))
    flinkish_env.run(
        "run", "-p", "3", str(JOBS / "partitions_job.py"),
        str(inputs), str(output), str(flinkish_env.root / "cp"), check=True,
    )  # fmt: skip
    rows = read_json_dir(output)
    assert sorted(row["seq"] for row in rows) == list(range(60))
    assert {row["partition"] for row in rows} == {0, 1, 2}


def test_attached_sigterm_stops_the_job_gracefully(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, _rows(0, 10))
    process = flinkish_env.popen(
        "run", COUNTS_JOB, "--input", str(inputs), "--output", str(flinkish_env.root / "out")
    )
    job_id = None
    deadline = time.monotonic() + 120
    while job_id is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("Job has been submitted with JobID"):
            job_id = line.split()[-1]
    assert job_id
    flinkish_env.wait_for_batches(job_id, "counts", 0)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode != 0
    assert "Stopped by SIGTERM" in err
    assert flinkish_env.job(job_id)["state"] == "CANCELED"


def test_killed_driver_does_not_stay_running(flinkish_env: FlinkishEnv) -> None:
    flinkish_env.write_conf({"heartbeat.timeout": "15 s"})  # generous: a loaded machine stalls
    inputs = flinkish_env.root / "in"
    write_events(inputs, _rows(0, 10))
    job_id = flinkish_env.run_counts_detached(inputs, flinkish_env.root / "o")
    status = json.loads(
        (flinkish_env.checkpoints / job_id / "_flinkish" / "status.json").read_text()
    )
    os.killpg(os.getpgid(status["pid"]), signal.SIGKILL)
    job = flinkish_env.wait_for_state(job_id, {"FAILED"}, timeout=30)
    # the supervisor, in a process group of its own, names the signal; a job whose supervisor
    # died with it is found by its heartbeat
    assert "signal 9" in job["failure-cause"] or "heartbeat" in job["failure-cause"], job


def test_python_module_with_py_files(flinkish_env: FlinkishEnv) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, _rows(0, 6, keys=2))
    output = flinkish_env.root / "out"
    result = flinkish_env.run(
        "run",
        "-D",
        "execution.runtime-mode=BATCH",
        "-pym",
        "pipelines.copy_job",
        "-pyfs",
        str(JOBS / "modjob"),
        str(inputs),
        str(output),
        check=True,
    )
    assert "has finished" in result.stdout
    rows = read_json_dir(output)
    assert sorted(r["seq"] for r in rows) == list(range(6))
    assert {r["key"] for r in rows} == {"K0", "K1"}
