"""State reads for ``flinkish web``: each in a child process, one at a time per job, cached
until the job commits another batch, bounded in time. The child here is the real one
(``python -m flinkish_cli.state``) where what it is asked needs no Spark; the cache and the
one-at-a-time rule are checked at the seam, with a double of the child."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.client.state_reads import StateReads
from flinkish_cli.config import Configuration
from flinkish_cli.errors import StateError, StateNotFoundError

JOB = "d4" * 16


class CountingChild:
    """A double of the child process: counts its runs, answers after ``delay``."""

    def __init__(self, delay: float = 0.0) -> None:
        self.runs = 0
        self.running = 0
        self.most = 0
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any], job_id: str) -> dict[str, Any]:
        with self.lock:
            self.runs += 1
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.delay)  # a read under way (not an assertion's wait)
        with self.lock:
            self.running -= 1
        return {"read": self.runs, "request": request}


def test_an_answer_is_kept_until_the_job_commits_another_batch(tmp_path: Path) -> None:
    reads = StateReads(Configuration.from_flat({}))
    child = CountingChild()
    reads._run = child  # type: ignore[method-assign]
    first = reads.read(JOB, {"counts": 3}, {"action": "ls"})
    assert reads.read(JOB, {"counts": 3}, {"action": "ls"}) == first
    assert child.runs == 1
    assert reads.read(JOB, {"counts": 4}, {"action": "ls"})["read"] == 2
    assert reads.read(JOB, {"counts": 4}, {"action": "show", "limit": 5})["read"] == 3
    assert first["request"]["source"] == JOB


def test_reads_of_one_job_run_one_at_a_time(tmp_path: Path) -> None:
    reads = StateReads(Configuration.from_flat({}))
    child = CountingChild(delay=0.3)
    reads._run = child  # type: ignore[method-assign]
    threads = [
        threading.Thread(target=reads.read, args=(JOB, {"q": 1}, {"action": "ls"}))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert child.runs == 1 and child.most == 1  # the others waited, then found the answer


def test_the_childs_refusals_come_back_as_the_errors_they_were(tmp_path: Path) -> None:
    config = Configuration.from_flat({"execution.checkpointing.dir": str(tmp_path)})
    reads = StateReads(config)
    with pytest.raises(StateNotFoundError) as missing:
        reads.read(JOB, {}, {"action": "ls"})
    assert missing.value.message == f"Job {JOB} not found in {tmp_path}."
    assert missing.value.hint and "flinkish list -a" in missing.value.hint


def test_a_read_past_its_time_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = StateReads(Configuration.from_flat({}), timeout=0.5)
    monkeypatch.setattr(sys, "executable", _sleeper(tmp_path))  # the child never answers
    started = time.monotonic()
    with pytest.raises(StateError, match=r"took longer than 0 s and was stopped"):
        reads.read(JOB, {}, {"action": "ls"})
    assert time.monotonic() - started < 30


def _sleeper(tmp_path: Path) -> str:
    """An executable that ignores its arguments and sleeps (a child that never answers)."""
    script = tmp_path / "sleeper"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    script.chmod(0o755)
    return str(script)
