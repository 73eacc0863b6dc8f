"""A process that takes a real savepoint and SIGKILLs itself after its Nth change to the disk.

The fault injector of ``test_savepoint_kills.py``. It runs only in the child process the test
starts (a fork of a ``forkserver`` that has flinkish imported, so a kill point costs a few
milliseconds, not an interpreter start); the product code carries no test hook. In the child,
:class:`KillSwitch` wraps the ``os`` and ``open`` calls through which
:class:`~flinkish_cli.storage.LocalStorage` changes the disk -- creating a directory or a
file, writing, linking, renaming, ``fsync`` -- and counts them. Each one is a *kill point*:

- ``kill_after=0``: SIGKILL at the first change, before it is made (nothing on disk);
- ``kill_after=N``: the Nth change is made, then SIGKILL (nothing after it runs: no
  ``except``/``finally``, no clean-up, as when the kernel's OOM killer strikes);
- ``kill_after=None``: no kill; the run lists every change, so the test knows the points.

Every change is appended to a trace file (``<kind> <path>`` per line, written with the real
``os.write`` just before a kill, so the last line is the last change made), which names
what a kill point interrupted.
"""

from __future__ import annotations

import builtins
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# imported here, so that a forkserver preloading this module forks children that have them
from flinkish_cli.savepoints import create, integrity, layout, manifest  # noqa: F401
from flinkish_cli.storage import LocalStorage
from flinkish_cli.storage.settings import StorageSettings

#: The ``os`` functions through which LocalStorage changes the disk, and the kind each
#: change is listed as. ``os.open`` and ``open`` count only when they create or write.
WRAPPED = {
    "mkdir": "mkdir",
    "link": "link",
    "replace": "rename",
    "rename": "rename",
    "fsync": "fsync",
    "sendfile": "write",
    "write": "write",
    "unlink": "unlink",
    "rmdir": "rmdir",
}


@dataclass(frozen=True)
class KillSpec:
    """What one child does: take a savepoint named ``name`` of ``queries`` (name → checkpoint
    directory) into ``target_dir``, and die after change ``kill_after`` (None: never)."""

    queries: dict[str, str]
    target_dir: str
    name: str
    job_id: str
    trace: str
    kill_after: int | None
    links: bool = True


class KillSwitch:
    """Counts the changes the process makes to the disk and SIGKILLs it at the chosen one."""

    def __init__(self, kill_after: int | None, trace: str) -> None:
        self.kill_after = kill_after
        self.count = 0
        self._lock = threading.RLock()
        self._write = os.write
        self._trace = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def install(self) -> None:
        """Wrap the ``os`` functions of :data:`WRAPPED`, ``os.open`` and ``open`` (for good:
        this process ends with the savepoint)."""
        for name, kind in WRAPPED.items():
            setattr(os, name, self._wrap(getattr(os, name), kind))
        real_open, real_builtin_open = os.open, builtins.open

        def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
                return self._change("create", str(path), lambda: real_open(path, flags, *args))
            return real_open(path, flags, *args, **kwargs)

        def builtin_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if any(c in mode for c in "wax+") and not isinstance(file, int):
                return self._change(
                    "create", str(file), lambda: real_builtin_open(file, mode, *args, **kwargs)
                )
            return real_builtin_open(file, mode, *args, **kwargs)

        os.open = os_open  # type: ignore[assignment]
        builtins.open = builtin_open

    def _wrap(self, function: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            target = args[1] if kind in ("link", "rename") else args[0]
            if isinstance(target, int):  # a descriptor: name the file it is open on
                try:
                    target = os.readlink(f"/proc/self/fd/{target}")
                except OSError:
                    target = f"fd {target}"
            return self._change(kind, str(target), lambda: function(*args, **kwargs))

        return wrapped

    def _change(self, kind: str, path: str, make: Callable[[], Any]) -> Any:
        with self._lock:  # one change at a time, so the count names one state of the disk
            if self.kill_after == 0:
                self._die()
            result = make()
            if kind == "write" and not result:
                return result  # nothing written (the end of a sendfile loop)
            self.count += 1
            self._write(self._trace, f"{kind} {path}\n".encode())
            if self.count == self.kill_after:
                self._die()
            return result

    @staticmethod
    def _die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)
        signal.pause()  # SIGKILL is delivered before this returns


def take_savepoint_and_die(spec: KillSpec) -> None:
    """The child: take the savepoint through the real LocalStorage, the switch installed.

    One worker copies and syncs, so the changes come in the same order on every run and a
    kill point names the same state on disk each time. ``spec.links`` False copies every
    file as between two file systems (a temporary file, its content, a rename) instead of
    hard-linking it.
    """
    create.new_savepoint_name = lambda _job_id: spec.name  # the parent knows the path
    settings = StorageSettings(max_workers=1)
    source = LocalStorage(spec.target_dir, settings)
    if not spec.links:
        source._links_work = False  # as after an EXDEV: copy instead of linking
    target = LocalStorage(spec.target_dir, settings)
    switch = KillSwitch(spec.kill_after, spec.trace)
    switch.install()
    create.take_savepoint(
        source, spec.queries, target, spec.target_dir, spec.job_id, "kills", "4.1.0"
    )
