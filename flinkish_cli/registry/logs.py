"""Reading a job's driver log: ``<env.log.dir>/flinkish-<JobID>.log`` (and, following it
across a roll, its newest old file ``.1``: :mod:`.logroll`), and nothing else.

The path is built from this shell's configuration (``env.log.dir``) and a validated JobID,
never taken from the job's status file: a status file lives on shared storage and may be
damaged or written by someone else, so its ``log_path`` is only *shown*, to say where the
log was when it is on another host. What is opened is checked:

- a symbolic link at the log's path is followed only when it resolves to a file inside
  ``env.log.dir`` (a log directory that is itself a link, to a bigger disk say, is fine);
  a link that leads anywhere else is refused, without saying where it points;
- only a regular file is read (a named pipe or a device is refused, and opening never
  blocks), and the file actually opened is checked again against the directory, so a link
  swapped in between the check and the open cannot lead out of it either.
"""

from __future__ import annotations

import codecs
import os
import socket
import stat
import time
from collections import deque
from collections.abc import Generator
from typing import TextIO

from flinkish_cli.errors import JobError
from flinkish_cli.plan.rundir import process_runs
from flinkish_cli.registry import logroll
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry

FOLLOW_POLL_SECONDS = 0.3
#: Once a followed job has ended, ``logs -f`` reads on while its supervisor (which writes the
#: driver's last lines and its own after the job's end is recorded) still runs on this host,
#: at most this long.
WRITER_GRACE_SECONDS = 10.0


def log_path(log_dir: str, job_id: str) -> str:
    """``<log_dir>/flinkish-<JobID>.log`` (absolute; ``~`` expanded)."""
    directory = os.path.abspath(os.path.expanduser(str(log_dir)))
    return os.path.join(directory, f"flinkish-{parse_job_id(job_id)}.log")


def _inside(path: str, directory: str) -> bool:
    return os.path.dirname(path) == directory or path.startswith(directory.rstrip("/") + "/")


def open_log(log_dir: str, job_id: str) -> TextIO | None:
    """The job's own log, open for reading as text; None when this machine has none.

    Raises :class:`JobError` when the path holds something that is not the job's log: a
    link leading out of ``log_dir``, a directory, a pipe or a device.
    """
    path = log_path(log_dir, job_id)
    if not os.path.lexists(path):
        return None
    real_dir = os.path.realpath(os.path.dirname(path))
    real = os.path.realpath(path)
    if not _inside(real, real_dir):
        raise _refused(path, "is a symbolic link that leads out of env.log.dir")
    if not os.path.exists(real):
        return None  # a dangling link inside the directory: no log (yet)
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise JobError(f"Cannot read the log {path}: {error.strerror}.") from error
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise _refused(path, f"is {kind}")
        opened = _opened_path(fd)
        if opened is not None and not _inside(opened, real_dir):
            raise _refused(path, "was replaced by a link that leads out of env.log.dir")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r", encoding="utf-8", errors="replace")
    except BaseException:
        os.close(fd)
        raise


def _opened_path(fd: int) -> str | None:
    """The path of the file behind ``fd`` as the kernel sees it (Linux), else None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _refused(path: str, why: str) -> JobError:
    return JobError(
        f"{path} {why}; flinkish shows only a job's own log file there.",
        "Remove or replace it: the driver writes a regular file flinkish-<JobID>.log in "
        "env.log.dir.",
    )


def _printable(text: str) -> str:
    """``text`` (read from a status file) without control characters, for a message."""
    return "".join(c if c.isprintable() else "?" for c in text)[:300]


def _status(registry: JobRegistry, job_id: str) -> tuple[JobStatus | None, JobError | None]:
    try:
        return registry.find(job_id), None
    except JobError as error:  # an unreadable status must not hide the log
        return None, error


def stream_log(
    registry: JobRegistry,
    job_id: str,
    log_dir: str,
    follow: bool = False,
    last_lines: int | None = None,
    ticks: bool = False,
) -> Generator[str, None, None]:
    """Yield the job's log; with ``follow``, keep yielding until the job has ended and its
    supervisor on this host has exited (at most :data:`WRITER_GRACE_SECONDS` after the end),
    across rolls (:mod:`.logroll`): when the log was emptied into ``.1``, the rest of what was
    not read yet comes from ``.1``, then the new log from its start.

    The log is read even when the job's status is missing or unreadable (a follow then
    stops at the end of the file, since nothing says the job still runs). With ``ticks``, a
    follow yields an empty chunk whenever a look found nothing new (:func:`.logroll.follow`).
    """
    job_id = parse_job_id(job_id)
    status, unreadable = _status(registry, job_id)
    handle = open_log(log_dir, job_id)
    if handle is None:
        raise _no_log(registry, job_id, log_dir, status, unreadable)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with handle:
        raw = handle.buffer
        if last_lines is not None:
            yield decoder.decode(b"".join(deque(raw, maxlen=last_lines)))
        else:
            yield from (decoder.decode(c) for c in iter(lambda: raw.read(65536), b""))
        if status is None or not follow:
            return

        ended_at: float | None = None

        def running() -> bool:
            nonlocal ended_at
            current, _ = _status(registry, job_id)
            if current is None:
                return False
            if not current.effective_state().is_terminal:
                return True
            ended_at = time.monotonic() if ended_at is None else ended_at
            return time.monotonic() - ended_at < WRITER_GRACE_SECONDS and _writer_runs(current)

        path = log_path(log_dir, job_id)
        following = logroll.follow(
            raw.fileno(), path, raw.tell(), running, FOLLOW_POLL_SECONDS, ticks
        )
        for chunk in following:
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)


def _writer_runs(status: JobStatus) -> bool:
    """Whether the job's supervisor, the last writer of its log, still runs on this host (an
    exited one that nobody reaped, as under a container's init that reaps nothing, does not)."""
    pid = status.supervisor_pid
    return bool(pid and pid > 0 and status.host == socket.gethostname() and process_runs(pid))


def _no_log(
    registry: JobRegistry,
    job_id: str,
    log_dir: str,
    status: JobStatus | None,
    unreadable: JobError | None,
) -> JobError:
    path = log_path(log_dir, job_id)
    if status is None:
        if unreadable is not None:
            return JobError(f"{unreadable.message} It has no log at {path} either.")
        return JobError(
            f"No job with JobID {job_id} under {registry.storage.describe()}, and no log at "
            f"{path}.",
            "Check the JobID with 'flinkish list -a', and that this shell uses the same "
            "configuration (execution.checkpointing.dir, env.log.dir) as the job.",
        )
    recorded = _printable(status.log_path) if status.log_path else None
    host = _printable(status.host) if status.host else None
    if host and host != socket.gethostname():
        where = f" (at {recorded})" if recorded else ""
        return JobError(
            f"The log of job {job_id} is on host {host}{where}, not on this machine.",
            f"Logs stay on the machine that ran the driver; run 'flinkish logs {job_id}' there.",
        )
    if recorded is None:
        return JobError(
            f"Job {job_id} has no log on this machine: its driver ran in the cluster "
            f"({_printable(status.master or 'cluster deploy mode')}).",
            "See the cluster manager's logs for the driver (Spark's UI, 'yarn logs', "
            "'kubectl logs').",
        )
    hint = "The log may have been removed."
    if recorded != path:
        hint = (
            f"The job's driver wrote {recorded}: this shell's env.log.dir is not the job's; "
            "run with the job's configuration."
        )
    return JobError(f"Job {job_id} has no log at {path}.", hint)
