"""The child-process protocol (:mod:`flinkish_cli.plan.child`) with real processes: a child
that starts a grandchild of its own (as a state read starts Spark's JVM) and never answers
is killed with its whole process group, by the parent at its timeout and by the child itself
past its deadline when no parent does it; an answer comes back whole whatever else the child
prints."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flinkish_cli.plan import child as child_module
from flinkish_cli.plan.child import DEADLINE_VARIABLE, run_child
from tests.fixtures.processes import wait_exited

#: A child module: it answers at once, or (``"hang"``) starts a grandchild that would sleep
#: for ten minutes, writes its pid, and never answers.
CHILD = """
import subprocess, sys, time
from flinkish_cli.plan.child import serve

def handle(request):
    print("what Spark prints")  # goes to standard error, never into the answer
    if request.get("hang"):
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(request["pid_file"], "w") as handle:
            handle.write(str(grandchild.pid))
        time.sleep(600)
    return {"ok": True, "echo": request["echo"]}

serve(handle)
"""


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "hanging_child.py").write_text(CHILD)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def _grandchild(pid_file: Path) -> int:
    assert pid_file.exists(), "the child did not start its grandchild"
    return int(pid_file.read_text())


def _gone(pid: int) -> None:
    """Until ``pid`` has exited (killed, should it live on)."""
    try:
        wait_exited(pid, timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_the_answer_comes_back_and_the_rest_goes_to_standard_error(
    child_env: dict[str, str],
) -> None:
    ended = run_child("hanging_child", {"echo": "é"}, 60, child_env)
    assert not ended.timed_out and ended.returncode == 0
    assert ended.answer == {"ok": True, "echo": "é"}
    assert ended.last_line() == "what Spark prints"


def test_a_timed_out_child_is_killed_with_its_whole_group(
    child_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child_module, "CHILD_GRACE", 600.0)  # the parent's kill, not its own
    pid_file = tmp_path / "grandchild.pid"
    ended = run_child("hanging_child", {"hang": True, "pid_file": str(pid_file)}, 5, child_env)
    assert ended.timed_out and ended.answer is None
    assert ended.returncode == -9  # the child itself, killed
    _gone(_grandchild(pid_file))  # and what it started


def test_a_child_past_its_deadline_kills_its_own_group(
    child_env: dict[str, str], tmp_path: Path
) -> None:
    """No parent kills it (one killed itself would not): the child's own deadline does."""
    pid_file = tmp_path / "grandchild.pid"
    child = subprocess.Popen(
        [sys.executable, "-m", "hanging_child"],
        env={**child_env, DEADLINE_VARIABLE: "3"},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        child.communicate(json.dumps({"hang": True, "pid_file": str(pid_file)}), timeout=60)
    finally:
        if child.poll() is None:  # its deadline did not end it: the test does
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -9
    _gone(_grandchild(pid_file))
