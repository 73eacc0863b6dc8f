"""The job's run directory: its private files, their names and formats.

Every job gets a private run directory (mode 0700) under its log directory, written by the
CLI (:mod:`flinkish_cli.submission.launcher`) and read by the job's supervisor and driver
(:mod:`flinkish_cli.runtime`):

- ``spark.properties`` (mode 0600): every Spark setting, secrets included, in Java's
  properties format (:func:`properties_text` writes it, :func:`parse_properties` reads it),
  read by ``spark-submit --properties-file`` or by a session job's client. Nothing secret goes
  on a command line. The driver deletes it as soon as it has read it; the supervisor writes it
  again for a restarted driver and deletes it whenever a driver exits.
- ``log4j2.properties``: sends Spark's log to the job's log file instead of the console
  (named by ``-Dlog4j.configurationFile``: the run directory is not on the class path).
- ``supervisor.json`` / ``supervisor.pid``: what the job's supervisor runs, and its pid.
- ``job.zip`` and other packages shipped with ``--py-files``.

Besides it, the job's **temporary directory** (:func:`make_tmp_dir`), on the system's
temporary file system as Flink's ``io.tmp.dirs`` default is: the supervisor makes it, gives
it to each driver as ``TMPDIR`` and, for its JVM, ``java.io.tmpdir`` (so Spark's scratch
directories, RocksDB's and lz4's native libraries and the Python workers' files go there),
empties it before each restart and removes it with the job. A driver killed with SIGKILL (by
the kernel's OOM killer, by a user) leaves its temporary files behind; a job restarted for
months would fill the disk with them. A supervisor killed with SIGKILL cannot remove the
directory: it names its **owners** (``.owners``: the supervisor and its current driver, each
as pid and start time, so a reused pid is no owner) and the next job started on the machine
removes the directories of the same user whose owners have all gone
(:func:`sweep_tmp_dirs`).

This module imports nothing of flinkish's: every layer may use it. Every command reads its
names (the sweep of dead runs), so ``shutil`` and ``tempfile`` are imported by the functions
that use them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

#: A run directory is ``<log dir>/.run-<JobID>``.
RUN_DIR_PREFIX = ".run-"
PROPERTIES_FILE = "spark.properties"
LOG4J2_FILE = "log4j2.properties"
SPEC_FILE = "supervisor.json"
PID_FILE = "supervisor.pid"
#: What the CLI runs (``python -m``) to supervise a job, and what a live supervisor's command
#: line names (:mod:`flinkish_cli.runtime.supervisor`).
SUPERVISOR_MODULE = "flinkish_cli.runtime.supervisor"


@dataclass
class SupervisorSpec:
    """What the supervisor needs, written as ``supervisor.json`` (no secrets: those stay in the
    properties file)."""

    argv: list[str]
    env: dict[str, str]
    job_id: str
    checkpoint_root: str
    log_path: str
    restarts_here: bool = True  # False: the cluster manager restarts the driver (YARN)
    watch_pid: int | None = None  # -sae: cancel the job when this process (the CLI) is gone
    client: bool = False  # the process is a session cluster job's client (no JVM of its own)
    cds_missing: str | None = None  # the class-data sharing archive to make (see .cds)

    def write(self, run_dir: Path) -> None:
        path = run_dir / SPEC_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(self), handle)

    @classmethod
    def read(cls, run_dir: Path) -> SupervisorSpec:
        return cls(**json.loads((run_dir / SPEC_FILE).read_text(encoding="utf-8")))


def make_run_dir(base: Path, job_id: str) -> Path:
    """Create the job's private run directory under ``base``."""
    base.mkdir(parents=True, exist_ok=True)
    run_dir = base / f"{RUN_DIR_PREFIX}{job_id}"
    run_dir.mkdir(mode=0o700)
    os.chmod(run_dir, 0o700)
    return run_dir


#: A job's temporary directory is ``<system temp>/flinkish-<JobID>-<random>`` (mode 0700).
TMP_DIR_PREFIX = "flinkish-"


#: In a job's temporary directory: the processes that use it, one ``<pid> <start time>`` a line.
OWNERS_FILE = ".owners"


def make_tmp_dir(job_id: str) -> Path:
    """Create the job's private temporary directory under the system's temporary directory
    (``TMPDIR``): a name no other user can guess or take first, owned by this process. The
    directories that dead jobs left there go first (:func:`sweep_tmp_dirs`)."""
    import tempfile

    base = Path(tempfile.gettempdir())
    sweep_tmp_dirs(base)
    path = Path(tempfile.mkdtemp(prefix=f"{TMP_DIR_PREFIX}{job_id}-", dir=base))
    claim_tmp_dir(path, [os.getpid()])
    return path


def claim_tmp_dir(path: Path, pids: list[int]) -> None:
    """Name ``pids`` as the processes that use ``path`` (replacing the owners named before)."""
    text = "".join(f"{pid} {_started(pid)}\n" for pid in pids)
    partial = path / f"{OWNERS_FILE}.{os.getpid()}.tmp"
    partial.write_text(text)
    os.replace(partial, path / OWNERS_FILE)


def sweep_tmp_dirs(base: Path) -> list[Path]:
    """Remove this user's job temporary directories under ``base`` whose owners have all
    exited (a supervisor killed with SIGKILL, and its driver); the ones removed. A directory
    without its owners file (being made, or made by another program) is left alone."""
    import shutil

    removed = []
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for entry in entries:
            if not entry.name.startswith(TMP_DIR_PREFIX):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                    continue
                owners = (Path(entry.path) / OWNERS_FILE).read_text().split("\n")
                if any(_alive(line) for line in owners if line.strip()):
                    continue
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


def process_stat(pid: int) -> tuple[str, str] | None:
    """The process's state letter (``Z``: it has exited, its parent has not reaped it) and
    start time (clock ticks since boot), from ``/proc``; None where ``/proc`` does not say
    (the process has gone, or the system has no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], fields[19]


def process_runs(pid: int) -> bool:
    """Whether the process ``pid`` runs: it exists and has not exited (a zombie, which its
    parent has not reaped, as under a container's init that reaps nothing, has exited); a
    process of another user counts as running."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, OverflowError):
        return False
    found = process_stat(pid)
    return found is None or found[0] != "Z"


def _started(pid: int) -> str:
    """The process's start time, or ``-`` where the system does not say."""
    found = process_stat(pid)
    return found[1] if found is not None else "-"


def _alive(owner: str) -> bool:
    """Whether the process ``<pid> <start time>`` still runs: not a zombie, and not another
    process with its pid (where ``/proc`` says nothing, a live pid counts)."""
    try:
        pid_text, started = owner.split()
        pid = int(pid_text)
        os.kill(pid, 0)
    except PermissionError:
        return True  # someone's process: not ours to judge
    except (ValueError, OSError):
        return False
    found = process_stat(pid)
    if found is None:
        return True
    state, now = found
    return state != "Z" and started in (now, "-")


def empty_dir(path: Path) -> None:
    """Remove everything in ``path`` (what an ended driver left) but its owners file,
    keeping ``path``."""
    import shutil

    with os.scandir(path) as entries:
        for entry in entries:
            if entry.name == OWNERS_FILE:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def properties_text(properties: Mapping[str, str]) -> str:
    """Java properties file content, escaped so that any value survives."""
    return "".join(f"{_escape(k, True)}={_escape(v, False)}\n" for k, v in properties.items())


def _escape(text: str, key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "=:#!" or (char == " " and (key or index == 0)):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) > 126 or ord(char) < 32:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """The keys and values of a properties file flinkish wrote (one ``key=value`` a line)."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = _split_escaped(line)
        values[_unescape(key)] = _unescape(value)
    return values


def replace_property(text: str, key: str, value: str) -> str:
    """``text`` with ``key``'s value replaced (the value must need no escaping)."""
    lines = []
    for line in text.splitlines():
        if _unescape(_split_escaped(line)[0]) == key:
            line = f"{key}={value}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _split_escaped(line: str) -> tuple[str, str, str]:
    index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        if line[index] == "=":
            return line[:index], "=", line[index + 1 :]
        index += 1
    return line, "", ""


def _unescape(text: str) -> str:
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            if nxt == "u" and index + 5 < len(text):
                out.append(chr(int(text[index + 2 : index + 6], 16)))
                index += 6
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(nxt, nxt))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)
