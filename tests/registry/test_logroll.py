"""A log rolled while several processes append to it (the supervisor, ``spark-submit``,
the driver's JVM and its Python side all do), and ``flinkish logs -f`` following across the
roll: real files, real processes, no doubles."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from flinkish_cli.registry.logroll import LogRoller, roll_if_larger, rolled
from flinkish_cli.registry.logs import stream_log
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry

JOB = "a0" * 16

#: A writer like the driver's: its own file handle, appending numbered lines.
WRITER = """
import sys, time
name, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "a", buffering=1) as out:
    for n in range(count):
        out.write(f"{name} {n:06d} " + "x" * 60 + "\\n")
        if n % 50 == 0:
            time.sleep(0.001)
"""


def test_old_files_are_bounded_by_env_log_max(tmp_path: Path) -> None:
    log = tmp_path / "flinkish-job.log"
    for round_ in range(6):
        log.write_text(f"round {round_}\n" + "y" * 2000 + "\n")
        assert roll_if_larger(str(log), 1024, keep=3)
        assert log.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "flinkish-job.log", "flinkish-job.log.1", "flinkish-job.log.2", "flinkish-job.log.3",
    ]  # fmt: skip
    assert [Path(rolled(str(log), n)).read_text()[:7] for n in (1, 2, 3)] == [
        "round 5", "round 4", "round 3",
    ]  # fmt: skip
    assert not roll_if_larger(str(log), 1024, keep=3)  # small enough: nothing to do
    log.write_text("z" * 2000)
    assert roll_if_larger(str(log), 1024, keep=0) and not Path(rolled(str(log), 1)).exists()


def _roll_under_writers(log: Path, count: int) -> tuple[list[str], int]:
    """Three processes append ``count`` numbered lines each while the log rolls at 16 KB;
    every line of the log and its old files after, and how many rolls there were."""
    log.touch()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, name, str(log), str(count)])
        for name in ("supervisor", "jvm", "driver")
    ]
    rolls = 0
    while any(w.poll() is None for w in writers):
        rolls += roll_if_larger(str(log), 16 * 1024, keep=1000)
    rolls += roll_if_larger(str(log), 16 * 1024, keep=1000)
    assert all(w.returncode == 0 for w in writers) and rolls >= 3
    return "".join(_text(log, 1000)).splitlines(), rolls


def _text(log: Path, keep: int) -> list[str]:
    paths = [Path(rolled(str(log), n)) for n in range(keep, 0, -1)] + [log]
    return [p.read_text() for p in paths if p.exists()]


def _numbers(lines: list[str], name: str) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith(name + " ")]


def test_rolling_under_three_appending_processes_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    """On ext4 or XFS (where the log's head is collapsed away): every line once, in order."""
    lines, _ = _roll_under_writers(tmp_path / "flinkish-job.log", 6000)
    pattern = re.compile(r"^(supervisor|jvm|driver) (\d{6}) x{60}$")
    assert all(pattern.match(line) for line in lines)  # no torn or interleaved line
    for name in ("supervisor", "jvm", "driver"):
        assert _numbers(lines, name) == list(range(6000))


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no tmpfs at /dev/shm")
def test_where_the_file_system_cannot_collapse_lines_stay_whole(tmp_path: Path) -> None:
    """tmpfs cannot collapse a range: copy and truncate, lines whole and in order, never
    twice; a line written in the instant of a truncation may be lost (copytruncate)."""
    directory = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        lines, _ = _roll_under_writers(directory / "flinkish-job.log", 3000)
    finally:
        shutil.rmtree(directory)
    pattern = re.compile(r"^(supervisor|jvm|driver) (\d{6}) x{60}$")
    assert all(pattern.match(line) for line in lines)
    for name in ("supervisor", "jvm", "driver"):
        numbers = _numbers(lines, name)
        assert numbers == sorted(set(numbers)) and len(numbers) > 3000 * 0.9


@pytest.mark.timeout(60)
def test_logs_follow_reads_across_a_roll_without_a_gap_or_a_double(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    status = JobStatus(job_id=JOB, name="orders", state=JobState.RUNNING, pid=1)
    status.host = socket.gethostname()
    registry.write(status)
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    log = log_dir / f"flinkish-{JOB}.log"
    log.write_text("".join(f"before {n}\n" for n in range(100)))
    chunks = stream_log(registry, JOB, str(log_dir), follow=True)
    assert next(chunks).startswith("before 0\n")
    roller = LogRoller(str(log), 2048, keep=2, interval=0.05).start()

    def write() -> None:  # slower than the roller: every line lands in one of the files
        with open(log, "a", buffering=1) as out:
            for n in range(400):
                out.write(f"during {n:04d}\n")
                time.sleep(0.002)
        time.sleep(0.3)
        status.state = JobState.FINISHED
        registry.write(status)

    writer = threading.Thread(target=write)
    writer.start()
    followed = "".join(chunks)
    writer.join()
    roller.stop()
    assert Path(rolled(str(log), 2)).exists()  # it rolled more than once meanwhile
    assert followed.splitlines() == [f"during {n:04d}" for n in range(400)]
