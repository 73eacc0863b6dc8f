"""Rolling a log by size, as Flink's log4j rolling appender rolls its files: when
``flinkish-<JobID>.log`` passes ``flinkish.log.max-file-size`` its content moves to
``.log.1`` (the older ones to ``.2``, ``.3``...) and at most ``env.log.max`` old files are
kept, Flink's meaning.

A job's log has several writers, each with the file open for appending: the supervisor and
``spark-submit`` (their standard error), the driver's JVM (log4j's file appender) and the
Python driver (its logging and standard error). None of them can reopen a renamed file, so
the log keeps its inode and loses its beginning instead:

- **Collapse** (Linux's ``fallocate(FALLOC_FL_COLLAPSE_RANGE)``, on ext4 and XFS): the
  file's first whole blocks are copied to ``.1``, then removed from the file in one step
  that writers wait for. Nothing is lost and nothing doubled; a line may be split between
  the end of ``.1`` and the start of the log (the files read in order are the log, exact).
- **Copy and truncate** where the file system cannot collapse (logrotate's copytruncate):
  the copy reads until it has caught up with the writers and waits for a half-written line,
  then truncates at once. A line written in that instant is lost (copytruncate's caveat).

Whoever holds the file's lock rolls: the supervisor and the driver each run a
:class:`LogRoller`, so the log rolls while either lives, and never twice at once.
:func:`follow` reads a log as it grows and across its rolls, with no gap and no double: a
new ``.1`` means a roll, which it waits out (the lock) and then reads from ``.1`` what it
had not read.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger("flinkish.logs")

#: How often a roller looks at the log's size (one ``stat`` each time).
CHECK_SECONDS = 1.0
#: How long a copy-and-truncate roll waits for a line that is half written.
LINE_WAIT_SECONDS = 0.5
_CHUNK = 1 << 20
_COLLAPSE_RANGE = 0x08  # FALLOC_FL_COLLAPSE_RANGE, linux/falloc.h


def rolled(path: str, number: int) -> str:
    """The ``number``-th old file of the log at ``path`` (1 is the newest)."""
    return f"{path}.{number}"


def roll_if_larger(path: str, max_bytes: int, keep: int) -> bool:
    """Roll the log at ``path`` if it holds more than ``max_bytes``; True if it rolled."""
    try:
        if os.stat(path).st_size <= max_bytes:
            return False
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size <= max_bytes:  # another process rolled it meanwhile
            return False
        _shift(path, keep)
        if keep == 0:
            os.truncate(path, 0)
            return True
        cut = size - size % os.fstat(fd).st_blksize
        with _new_file(rolled(path, 1), os.fstat(fd).st_mode & 0o777) as out:
            copied = _append_from(fd, out, 0, cut)
        if copied == cut and cut > 0 and _collapse(fd, cut):
            return True
        with open(rolled(path, 1), "ab") as out_file:  # the rest, then truncate
            _catch_up_and_truncate(fd, path, out_file.fileno(), copied)
        return True
    finally:
        os.close(fd)  # releases the lock


def _shift(path: str, keep: int) -> None:
    """``.keep`` goes, ``.n`` becomes ``.n+1``: room for a new ``.1``."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(rolled(path, max(keep, 1)))
    for number in range(keep - 1, 0, -1):
        with contextlib.suppress(FileNotFoundError):
            os.replace(rolled(path, number), rolled(path, number + 1))


@contextlib.contextmanager
def _new_file(target: str, mode: int) -> Iterator[int]:
    """A file written under another name and renamed to ``target`` when done: a reader
    never finds half of it."""
    partial = target + ".part"
    out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        yield out
    finally:
        os.close(out)
    os.replace(partial, target)


def _append_from(source: int, out: int, offset: int, end: int | None = None) -> int:
    """Write ``source`` from ``offset`` to ``end`` (or its end) into ``out``; the new offset."""
    while end is None or offset < end:
        want = _CHUNK if end is None else min(_CHUNK, end - offset)
        chunk = os.pread(source, want, offset)
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            view = view[os.write(out, view) :]
        offset += len(chunk)
    return offset


def _collapse(fd: int, length: int) -> bool:
    """Remove the file's first ``length`` bytes in place; False where the file system
    cannot (then nothing changed)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    except (OSError, AttributeError):
        return False
    if libc.fallocate(fd, _COLLAPSE_RANGE, 0, length) == 0:
        return True
    code = ctypes.get_errno()
    if code not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.EPERM):
        log.debug("Collapsing the log failed: %s", os.strerror(code))
    return False


def _catch_up_and_truncate(fd: int, path: str, out: int, offset: int) -> None:
    """Copy what the writers appended since ``offset`` into ``out`` until a read finds
    nothing new and the copy ends a line, then truncate the log at once."""
    deadline = time.monotonic() + LINE_WAIT_SECONDS
    while True:
        caught = _append_from(fd, out, offset)
        if caught == offset and (_ends_a_line(fd, offset) or time.monotonic() > deadline):
            os.truncate(path, 0)  # waits for a write under way: it is whole, or not there
            return
        if caught == offset:
            time.sleep(0.001)  # a write is half visible: let it finish its line
        offset = caught


def _ends_a_line(fd: int, offset: int) -> bool:
    return offset == 0 or os.pread(fd, 1, offset - 1) == b"\n"


# -- following ---------------------------------------------------------------------------------
def _identity(path: str) -> tuple[int, int] | None:
    with contextlib.suppress(OSError):
        found = os.stat(path)
        return found.st_ino, found.st_dev
    return None


def follow(
    fd: int,
    path: str,
    offset: int,
    more: Callable[[], bool],
    poll: float = 0.3,
    ticks: bool = False,
) -> Iterator[bytes]:
    """The bytes of the log at ``path`` (open as ``fd``) from ``offset`` on, across rolls,
    while ``more()`` says the writers may still write (checked when nothing is new), then
    what is left. With ``ticks``, an empty chunk after each ``poll`` that found nothing new,
    so a reader can stop between reads (a server whose client went away)."""
    newest = rolled(path, 1)
    known = _identity(newest)
    while True:
        now = _identity(newest)
        if now != known:  # rolled: wait for the roll to end, then read what moved to .1
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                known = _identity(newest)
                moved, length = _rest_of(newest, offset)
                if moved:
                    yield moved
                offset = max(offset - length, 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            continue
        chunk = os.pread(fd, 65536, offset)
        if _identity(newest) != known:
            continue  # a roll began around that read: what it read may be the new log
        if chunk:
            offset += len(chunk)
            yield chunk
            continue
        if os.fstat(fd).st_size < offset:  # emptied with no old file kept (env.log.max 0)
            offset = 0
            continue
        if not more():
            while rest := os.pread(fd, 65536, offset):
                offset += len(rest)
                yield rest
            return
        time.sleep(poll)
        if ticks:
            yield b""


def _rest_of(path: str, offset: int) -> tuple[bytes, int]:
    """What the old file ``path`` holds past ``offset``, and its length (b"", 0 if it is
    missing or not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"", 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"", 0
        parts = []
        position = offset
        while position < info.st_size and (chunk := os.pread(fd, _CHUNK, position)):
            parts.append(chunk)
            position += len(chunk)
        return b"".join(parts), info.st_size
    finally:
        os.close(fd)


class LogRoller:
    """Rolls one log file from a daemon thread while its process lives."""

    @classmethod
    def configured(cls, path: str, config: Any) -> LogRoller:
        """A roller with the configuration's ``flinkish.log.max-file-size``/``env.log.max``."""
        size, keep = config.get("flinkish.log.max-file-size"), config.get("env.log.max")
        return cls(path, int(size), int(keep))

    def __init__(self, path: str, max_bytes: int, keep: int, interval: float = CHECK_SECONDS):
        self.path, self.max_bytes, self.keep, self.interval = path, max_bytes, keep, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-roller", daemon=True)

    def start(self) -> LogRoller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                roll_if_larger(self.path, self.max_bytes, self.keep)
            except OSError as error:  # a full disk, a removed directory: try again later
                log.debug("Could not roll %s: %s", self.path, error)


def roll_own_stderr(config: Any) -> LogRoller | None:
    """For a server run in the background with its standard error appended to a file
    (``>> web.out 2>&1``, as ``start-cluster.sh`` starts ``flinkish web``): roll that file.
    Nothing when standard error is a terminal, a pipe, or a file not opened for appending
    (cutting one that is written at an offset would leave a hole)."""
    try:
        if not fcntl.fcntl(2, fcntl.F_GETFL) & os.O_APPEND:
            return None
        target = os.readlink("/proc/self/fd/2")
        if not os.path.isfile(target):
            return None
    except OSError:
        return None
    return LogRoller.configured(target, config).start()
