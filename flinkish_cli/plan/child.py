"""The child-process protocol: one JSON request on standard input, one JSON answer on
standard output, in a process group of its own, bounded in time on both sides.

Some work runs in a child process of its own: the planning of a restore's state check
(``python -m flinkish_cli.planning.state_check``), a state read for ``flinkish web``
(``python -m flinkish_cli.state``) and a session job's offline repartition
(``python -m flinkish_cli.runtime.flavours.offline_repartition``). Each starts a local
Spark, whose JVM must go with it, and each request may carry secrets, which never go on a
command line.

- The parent (:func:`run_child`) starts ``python -m <module>`` in a new session (its own
  process group: the child, its JVM and whatever else it starts), writes the request, and
  waits at most ``timeout`` seconds. When the time is up, when the wait is interrupted, and
  after the answer (what is left of Spark's JVM while it shuts down), it kills the whole
  group.
- The child (:func:`serve`) reads the request, keeps its standard output for the answer
  alone (whatever else is printed, Spark's output included, goes to standard error), and
  kills its own group :data:`CHILD_GRACE` seconds after the parent's timeout, should the
  parent be gone (killed) and unable to.

This module imports nothing of flinkish's: every layer may use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: The child's own bound, in seconds from its start: the parent's timeout and
#: :data:`CHILD_GRACE` (in the environment: the request is the caller's).
DEADLINE_VARIABLE = "FLINKISH_CHILD_DEADLINE"
#: How much longer than the parent's timeout the child lets itself run.
CHILD_GRACE = 10.0
#: How long the parent waits for a killed child's last output.
KILLED_WAIT = 5.0


@dataclass(frozen=True)
class ChildAnswer:
    """How a child ended: its answer (None when it wrote no JSON object), its exit status,
    its standard error, and whether the parent stopped it at its timeout."""

    answer: dict[str, Any] | None
    returncode: int
    stderr: str
    timed_out: bool = False

    def last_line(self) -> str:
        """The last line the child wrote on standard error (its crash, usually); "" if none."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def run_child(
    module: str,
    request: Mapping[str, Any],
    timeout: float,
    environment: Mapping[str, str] | None = None,
) -> ChildAnswer:
    """Run ``python -m module`` with ``request`` on its standard input, in a process group of
    its own (with ``environment``, else this process's); its answer. The group is killed
    when the answer is in, when ``timeout`` seconds have passed (then ``timed_out``), and
    when the wait is interrupted (the exception goes on)."""
    env = dict(os.environ if environment is None else environment)
    env[DEADLINE_VARIABLE] = f"{timeout + CHILD_GRACE:.3f}"
    child = subprocess.Popen(
        [sys.executable, "-m", module],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(json.dumps(dict(request)), timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child)
        err = _rest(child)
        return ChildAnswer(None, child.returncode, err, timed_out=True)
    except BaseException:
        kill_group(child)
        child.wait()
        raise
    kill_group(child)  # what the child left behind (Spark's JVM, while it shuts down)
    return ChildAnswer(_answer(out), child.returncode, err or "")


def kill_group(child: subprocess.Popen[str]) -> None:
    """End the child's process group: its own session, started for it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)


def _rest(child: subprocess.Popen[str]) -> str:
    """What a killed child wrote on standard error, once it has gone: waited for at most
    :data:`KILLED_WAIT` seconds (a process outside its group may hold its pipes)."""
    try:
        return child.communicate(timeout=KILLED_WAIT)[1] or ""
    except subprocess.TimeoutExpired:
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        child.kill()
        child.wait()
        return ""


def _answer(out: str) -> dict[str, Any] | None:
    try:
        answer = json.loads(out)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def serve(handle: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """The child's side: read the request, answer it with ``handle``, write the answer; the
    answer. Standard output carries the answer only (fd 1 goes to standard error while
    ``handle`` runs). Past its deadline (:data:`DEADLINE_VARIABLE`: the parent's timeout and
    :data:`CHILD_GRACE`), the child kills its own process group."""
    deadline = os.environ.get(DEADLINE_VARIABLE)
    if deadline:
        timer = threading.Timer(float(deadline), _kill_own_group)
        timer.daemon = True
        timer.start()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    answer = handle(json.load(sys.stdin))
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return answer


def _kill_own_group() -> None:
    if os.getpgid(0) == os.getpid():  # started by run_child: the group is the child's own
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
