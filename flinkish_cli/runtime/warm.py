"""Warm runners: a session-cluster job's supervisor and client started before the job exists.

This module owns the protocol and the spares' side of it; the server's pool is
:class:`~flinkish_cli.submission.warm_runner.WarmRunner`. ``flinkish web`` (when it takes
programs, ``web.submit.enable``, and ``flinkish.web.submit.warm-runner`` is on) keeps **one
spare**, a ``WarmRunner``:

1. The spare is ``python -m flinkish_cli.runtime.supervisor --warm``, started ahead of time
   in a session of its own with the environment a submitted job gets (the server's
   :data:`~flinkish_cli.submission.upload.KEPT_ENVIRONMENT`: none of its secrets), its
   standard input a pipe from the server, its standard output discarded and its standard
   error the server's (until it has a job). It
   imports what a supervisor needs and starts **its spare client**,
   ``python <entry>/flinkish_connect_client.py --warm`` (:func:`connect_client_file`), in a
   session of its own, its standard input a pipe from the supervisor. The client imports
   pyspark's Connect client (pandas, pyarrow, grpc) and flinkish's runtime; it opens no
   session (a job's session carries the job's own settings). Both then block, each reading
   one line from its standard input: a run directory.
2. A job's ``launch()`` writes the run directory's files as for any job and, instead of
   starting a cold supervisor, ``WarmRunner.take`` hands the spare that run directory (one
   line, then end of file), when the job is a session-cluster job whose output goes to its
   log (every job submitted through flinkish web) and whose environment is the spare's;
   otherwise the job starts cold, as before. A spare that dies while it waits is replaced
   (``WarmRunner._watch``; one that died young only when the next job comes); with no
   spare alive, one is started and handed the job at once (never slower than a cold start).
   The next spare starts once the job has started (``WarmRunner.refill_after``: RUNNING or
   ended, at most ``REFILL_TIMEOUT`` seconds later), so that its imports do not
   compete with the job's start for the CPU.
3. The spare supervisor (:func:`serve_one_job`) points its standard input at ``/dev/null``
   and its output at the job's log, as ``launch()`` would have, then runs the job as any
   supervisor does. Its first driver attempt hands the spare client the run directory
   (:func:`hand_client`, when the job's client command is the spare's); the client
   (:func:`client_wait`) points its input and output as the supervisor did, applies the
   job's ``spec.env`` and runs :func:`~flinkish_cli.runtime.driver.driver.main_connect` on it.
   Later attempts (restarts) start cold clients, as for any job; a spare client the job
   cannot use is killed.

A spare serves exactly one job and holds nothing of it before it is handed the run
directory. End of file before a line (the server stopped, even killed with SIGKILL, or the
supervisor died) ends a spare quietly, so spares never outlive what started them. A job's
processes are its own, as for a cold start: a spare or job that dies takes no other with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("flinkish.warm")

#: The argument of the supervisor and the client that makes them spares.
WARM_FLAG = "--warm"
#: The line in a job's log that says its client was a warm one.
WARM_CLIENT_LINE = "Driver attempt %d: process %d (a warm client)."

#: What a spare supervisor imports ahead of a job (what :meth:`Supervisor.load` and its
#: first attempt need).
SUPERVISOR_IMPORTS = (
    "flinkish_cli.config",
    "flinkish_cli.plan.job",
    "flinkish_cli.registry.store",
    "flinkish_cli.registry.status",
    "flinkish_cli.registry.control",
    "flinkish_cli.registry.logroll",
    "flinkish_cli.runtime.driver.driver",
    "flinkish_cli.runtime.restart",
    "flinkish_cli.storage",
)
#: What a spare client imports ahead of a job: pyspark's Connect client and flinkish's
#: runtime (what :func:`~flinkish_cli.runtime.driver.driver.main_connect` imports).
CLIENT_IMPORTS = (
    "pandas",
    "pyarrow",
    "pyspark.sql.connect.session",
    "flinkish_cli.config",
    "flinkish_cli.registry.store",
    "flinkish_cli.runtime.flavours.session",
    "flinkish_cli.runtime.driver.job",
    "flinkish_cli.runtime.queries.hooks",
    "flinkish_cli.runtime.driver.attempts",
)


def connect_client_file() -> str:
    """The main file of a session cluster job's client process."""
    return str(Path(__file__).resolve().parent / "entry" / "flinkish_connect_client.py")


def supervisor_command(python: str | None = None) -> list[str]:
    """A spare supervisor's command line."""
    from flinkish_cli.plan.rundir import SUPERVISOR_MODULE

    return [python or sys.executable, "-m", SUPERVISOR_MODULE, WARM_FLAG]


def client_command(python: str | None = None) -> list[str]:
    """A spare client's command line; a job's client command starts with the same two words."""
    return [python or sys.executable, connect_client_file(), WARM_FLAG]


# -- both sides ----------------------------------------------------------------------------
def send_line(process: subprocess.Popen[bytes], line: str) -> bool:
    """Write one line to ``process`` and close its input; False when it is gone."""
    stdin = process.stdin
    if stdin is None or process.poll() is not None:
        return False
    try:
        stdin.write(line.encode() + b"\n")
        stdin.close()
    except (BrokenPipeError, ValueError, OSError):
        return False
    return True


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process``'s whole process group (a spare and what it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.wait(timeout=10)


def end_spare(process: subprocess.Popen[bytes]) -> None:
    """End of file ends a waiting spare (and its client); killed when it lingers."""
    with contextlib.suppress(OSError, ValueError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        kill_group(process)


# -- the spare's side -----------------------------------------------------------------------
def read_run_dir(stream: int = 0) -> Path | None:
    """The run directory a spare is given (one line on ``stream``); None at end of file."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(stream, 4096)
        if not chunk:
            break
        data += chunk
    line = data.decode().strip()
    return Path(line) if line else None


def point_streams(log_path: str) -> None:
    """Standard input from ``/dev/null``, standard output and error appended to the job's
    log: what ``launch()`` gives a detached job's supervisor, and the supervisor its driver."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # as open("ab")
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)


def _preload(modules: tuple[str, ...]) -> None:
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as error:  # the job imports it again and meets the error there
            print(f"flinkish warm runner: could not import {name}: {error}", file=sys.stderr)


def serve_one_job(
    client: list[str] | None = None,
    read: Callable[[], Path | None] = read_run_dir,
) -> tuple[Path, subprocess.Popen[bytes] | None] | None:
    """A spare supervisor: start the spare client, import ahead, wait for a run directory,
    and point this process's streams at its job's log. The run directory and the spare
    client (None when it could not start); None at end of file (no job: exit)."""
    from flinkish_cli.plan.rundir import SupervisorSpec

    spare: subprocess.Popen[bytes] | None = None
    try:
        spare = subprocess.Popen(
            client or client_command(),
            stdin=subprocess.PIPE,
            start_new_session=True,  # as a cold client: the supervisor kills its group
        )
    except OSError as error:
        print(f"flinkish warm runner: no warm client: {error}", file=sys.stderr)
    _preload(SUPERVISOR_IMPORTS)
    run_dir = read()
    if run_dir is None:
        if spare is not None:
            end_spare(spare)
        return None
    try:
        point_streams(SupervisorSpec.read(run_dir).log_path)
    except Exception as error:  # Supervisor.load meets it too, and fails the job's start
        print(f"flinkish warm runner: {run_dir}: {error}", file=sys.stderr)
    return run_dir, spare


def hand_client(spare: subprocess.Popen[bytes], argv: list[str]) -> subprocess.Popen[bytes] | None:
    """The spare client as the job's first client process, given the run directory of the
    job's client command ``argv``; None (and the spare killed) when that command is not the
    spare's (another Python) or the spare died."""
    if argv[:2] == client_command()[:2] and len(argv) == 3 and send_line(spare, argv[2]):
        return spare
    kill_group(spare)
    return None


def client_wait(read: Callable[[], Path | None] = read_run_dir) -> Path | None:
    """A spare client: import ahead, wait for a run directory, then take its job's streams
    and environment as a cold client inherits them. The run directory; None at end of file."""
    _preload(CLIENT_IMPORTS)
    run_dir = read()
    if run_dir is None:
        return None
    from flinkish_cli.plan.rundir import SupervisorSpec

    spec = SupervisorSpec.read(run_dir)
    point_streams(spec.log_path)
    os.environ.update(spec.env)
    sys.argv[1:] = [str(run_dir)]
    return run_dir
