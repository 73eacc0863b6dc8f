"""The private run directory: its properties file readable by its owner only, escaped right."""

import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from flinkish_cli.plan.job import PLAN_CONF_KEY, Entry, JobPlan
from flinkish_cli.plan.rundir import (
    OWNERS_FILE,
    TMP_DIR_PREFIX,
    empty_dir,
    make_run_dir,
    make_tmp_dir,
    parse_properties,
    process_runs,
    properties_text,
    replace_property,
    sweep_tmp_dirs,
    write_private,
)
from tests.fixtures.processes import child_until_stdin_closes, wait_exited


def _parse_java_properties(text: str) -> dict[str, str]:
    """A reference reader of java.util.Properties' escapes (for the forms we write)."""
    result = {}
    for line in text.splitlines():
        key, value, current, escaped, in_key = [], [], None, False, True
        current = key
        for char in line:
            if escaped:
                current.append({"n": "\n", "r": "\r", "t": "\t"}.get(char, char))
                escaped = False
            elif char == "\\":
                escaped = True
            elif in_key and char == "=":
                in_key, current = False, value
            else:
                current.append(char)
        decoded = "".join(value)
        while "\\u" in decoded:  # not produced for ASCII
            break
        result["".join(key)] = decoded
    return result


def test_values_with_special_characters_survive() -> None:
    values = {
        "spark.a": "x=y:z#!",
        "spark.b": " leading space",
        "spark.c": "back\\slash",
        "spark.d": "new\nline\ttab",
        "spark.flinkish.plan": "eyJqb2JfaWQiOiAiYWJjIn0=",
    }
    assert _parse_java_properties(properties_text(values)) == values


def test_non_ascii_is_unicode_escaped() -> None:
    assert properties_text({"k": "é"}) == "k=\\u00e9\n"


def test_run_dir_and_private_file_modes(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "log", "f" * 32)
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    secret = run_dir / "spark.properties"
    write_private(secret, "spark.hadoop.fs.s3a.secret.key=abc\n")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_properties_round_trip_and_the_plan_is_replaced() -> None:
    plan = JobPlan(
        job_id="a" * 32,
        name="job",
        entry=Entry("file", "/x/job.py"),
        checkpoint_root="/tmp/c",
        flink_conf={},
        master="local[2]",
    )
    values = {
        "spark.hadoop.fs.s3a.secret.key": "se=cr:et #1\\ ünï",
        PLAN_CONF_KEY: plan.encode(),
        "spark.app.name": " leading space",
    }
    text = properties_text(values)
    assert parse_properties(text) == values
    plan.attempt = 3
    replaced = parse_properties(replace_property(text, PLAN_CONF_KEY, plan.encode()))
    assert JobPlan.decode(replaced[PLAN_CONF_KEY]).attempt == 3
    assert replaced["spark.hadoop.fs.s3a.secret.key"] == values["spark.hadoop.fs.s3a.secret.key"]


# -- the job's temporary directory ---------------------------------------------------------
#: A supervisor's part, in a process of its own: makes the job's temporary directory, starts
#: a "driver" (a sleeping child) that owns it too, prints the directory and the driver's pid.
_SUPERVISOR = """
import subprocess, sys, time
from flinkish_cli.plan.rundir import claim_tmp_dir, make_tmp_dir
path = make_tmp_dir("a" * 32)
driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
claim_tmp_dir(path, [__import__("os").getpid(), driver.pid])
(path / "blockmgr-1").mkdir()
print(path, driver.pid, flush=True)
time.sleep(600)
"""


def _killed(process: subprocess.Popen[str] | int) -> None:
    pid = process if isinstance(process, int) else process.pid
    os.kill(pid, signal.SIGKILL)
    if not isinstance(process, int):
        process.wait()


def test_a_killed_supervisors_directory_goes_once_its_driver_has_gone_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL for a supervisor: its driver runs on in the directory, which stays; once the
    driver has gone too, the next job's start removes it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again, as a new process does
    supervisor = subprocess.Popen(
        [sys.executable, "-c", _SUPERVISOR], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert supervisor.stdout is not None
    left, driver = supervisor.stdout.readline().split()
    left_behind = Path(left)
    assert left_behind.parent == tmp_path and (left_behind / "blockmgr-1").is_dir()
    _killed(supervisor)

    ours = make_tmp_dir("b" * 32)  # the next job, while the killed one's driver runs
    assert (left_behind / "blockmgr-1").is_dir(), "a running driver's directory was removed"
    assert sweep_tmp_dirs(tmp_path) == []
    _killed(int(driver))
    wait_exited(int(driver))

    assert sweep_tmp_dirs(tmp_path) == [left_behind]
    assert not left_behind.exists()
    assert ours.is_dir(), "this process's own directory is not a dead job's"
    empty_dir(ours)
    assert [p.name for p in ours.iterdir()] == [OWNERS_FILE], "emptying keeps its owners"


def test_the_sweep_leaves_what_is_not_a_dead_jobs(tmp_path: Path) -> None:
    """A directory being made (no owners yet), another program's ``flinkish-*`` file, and a
    directory whose owner's pid now belongs to another process."""
    being_made = tmp_path / f"{TMP_DIR_PREFIX}{'c' * 32}-x1"
    being_made.mkdir()
    (tmp_path / f"{TMP_DIR_PREFIX}notes.txt").write_text("mine")
    reused = tmp_path / f"{TMP_DIR_PREFIX}{'d' * 32}-x2"
    reused.mkdir()
    (reused / OWNERS_FILE).write_text(f"{os.getpid()} 1\n")  # this pid, another start time
    unreadable = tmp_path / f"{TMP_DIR_PREFIX}{'e' * 32}-x3"
    unreadable.mkdir()
    (unreadable / OWNERS_FILE).write_text("not a pid\n")
    assert sorted(sweep_tmp_dirs(tmp_path)) == sorted([reused, unreadable])
    assert being_made.is_dir() and (tmp_path / f"{TMP_DIR_PREFIX}notes.txt").is_file()


def test_a_process_runs_until_it_exits_reaped_or_not() -> None:
    with child_until_stdin_closes() as child:
        assert process_runs(child.pid) and process_runs(os.getpid())
        child.stdin.close()  # type: ignore[union-attr]
        wait_exited(child.pid)  # exited, not reaped yet
        assert not process_runs(child.pid)  # a zombie has exited
    assert not process_runs(child.pid)
