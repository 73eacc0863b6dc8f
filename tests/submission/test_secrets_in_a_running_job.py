"""A running job never shows its secrets: not in any process's command line or environment
(what ``ps`` and /proc show other users), the CLI's output, the job's log or its status."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import (
    JOBS,
    FlinkishEnv,
    job_id_of,
    session_of,
    write_events,
)

pytestmark = pytest.mark.spark

SECRET = "s3cr3t-Val-9f2b7c41"
ACCESS = "AKIAFLINKISHTEST77"


def _job_processes(session: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if session_of(int(entry.name)) == session:
                    pids.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return pids


def test_s3_keys_never_reach_ps_logs_or_status(flinkish_env: FlinkishEnv) -> None:
    flinkish_env.write_conf({"s3.access-key": ACCESS, "s3.secret-key": SECRET})
    inputs = flinkish_env.root / "in"
    write_events(inputs, [{"key": "a", "value": 1, "seq": 1}])
    submitted = flinkish_env.run(
        "run",
        "-d",
        str(JOBS / "counts" / "counts_job.py"),
        *("--input", str(inputs), "--output", str(flinkish_env.root / "out")),
        check=True,
    )
    job = job_id_of(submitted.stdout)
    flinkish_env.wait_for_batches(job, "raw", at_least=0)
    listed = flinkish_env.run("list", "-a", check=True)
    pid = flinkish_env.driver_pid(job)
    processes = _job_processes(session_of(pid))
    assert pid in processes and len(processes) >= 2  # the Python driver and Spark's JVM
    seen = [submitted.stdout, submitted.stderr, listed.stdout, listed.stderr]
    for process in processes:
        for part in ("cmdline", "environ"):
            try:
                seen.append(Path(f"/proc/{process}/{part}").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    seen.append(subprocess.run(["ps", "axww"], capture_output=True, text=True).stdout)
    flinkish_env.run("cancel", job, check=True)
    flinkish_env.wait_for_state(job, {"CANCELED"})
    for path in [*flinkish_env.logs.rglob("*"), *(flinkish_env.checkpoints / job).rglob("*")]:
        if path.is_file():
            seen.append(path.read_bytes().decode(errors="replace"))
    leaks = [text[:200] for text in seen if SECRET in text or ACCESS in text]
    assert not leaks, leaks
    assert not any(p.name == "spark.properties" for p in flinkish_env.logs.rglob("*")), (
        "the private properties file outlived the job's start"
    )
