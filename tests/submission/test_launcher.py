"""The sweep of run directories whose supervisor is gone (their properties file holds secrets)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from flinkish_cli.plan.rundir import PID_FILE, SUPERVISOR_MODULE
from flinkish_cli.submission.launcher import sweep_run_dirs


def _run_dir(base: Path, job: str, age: float, pid: int | None = None) -> Path:
    run_dir = base / f".run-{job}"
    run_dir.mkdir()
    (run_dir / "spark.properties").write_text("spark.hadoop.fs.s3a.secret.key=s\n")
    if pid is not None:
        (run_dir / PID_FILE).write_text(str(pid))
    past = time.time() - age
    os.utime(run_dir, (past, past))
    return run_dir


def _until_exec_done(pid: int) -> None:
    """Popen can return before the kernel has set the new program's command line (vfork)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    deadline = time.monotonic() + 10
    while b"supervisor" not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_sweep_removes_run_dirs_whose_supervisor_is_gone(tmp_path: Path) -> None:
    orphan = _run_dir(tmp_path, "a" * 32, age=600, pid=999_999_999)  # no such process
    fresh = _run_dir(tmp_path, "b" * 32, age=0)  # a job being prepared right now
    # a live supervisor, and one an older flinkish started under the module's old name
    sleepers = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", name])
        for name in (SUPERVISOR_MODULE, "flinkish_cli.submission.supervisor")
    ]
    try:
        alive = []
        for job, sleeper in zip("cd", sleepers, strict=True):
            _until_exec_done(sleeper.pid)
            alive.append(_run_dir(tmp_path, job * 32, age=600, pid=sleeper.pid))
        removed = sweep_run_dirs(tmp_path)
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    assert removed == [orphan]
    assert not orphan.exists() and fresh.exists() and all(a.exists() for a in alive)
    assert sweep_run_dirs(tmp_path / "missing") == []


def test_the_next_command_sweeps_a_killed_jobs_properties_file(flinkish_env) -> None:
    """A supervisor killed with its driver before Spark read the private properties file: the
    next flinkish command, whatever it is, removes the file with its secrets."""
    flinkish_env.logs.mkdir(parents=True, exist_ok=True)
    orphan = _run_dir(flinkish_env.logs, "d" * 32, age=600, pid=999_999_999)
    flinkish_env.run("list", check=True)
    assert not orphan.exists()


def test_sweep_removes_the_run_dir_of_a_supervisor_that_exited_unreaped(tmp_path: Path) -> None:
    """An exited process nobody has waited for (a zombie) has no command line either."""
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat = Path(f"/proc/{exited.pid}/stat")
        deadline = time.monotonic() + 30
        while stat.read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.05)
        dead = _run_dir(tmp_path, "d" * 32, age=600, pid=exited.pid)
        assert sweep_run_dirs(tmp_path) == [dead]
    finally:
        exited.wait()
