"""What a client holding a request open may take of ``flinkish web``: long work runs on
threads of its own kind, never on the threads every other request is served on, and ends
when the server stops.

- :class:`Pool`: a kind of long work (following a log; an action that waits for a job's
  driver or starts a program) with threads of its own and a cap on how many run at once;
  past the cap the request is answered 503 at once instead of queueing behind the others.
  Starlette's shared threads (40) stay free for the requests that read and answer, so a
  few dozen clients following logs cannot stall the API.
- :class:`Stopping`: set when the server is asked to stop (SIGTERM, Ctrl-C); follows look
  at it between their reads and end, so the server's shutdown completes within
  ``flinkish.web.shutdown-timeout`` on the first signal.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter

from flinkish_cli.web.replies import FlinkError

T = TypeVar("T")

#: Actions that wait for a job's driver (a cancel) or start a program, run at once (and,
#: apart, upgrades streaming their events).
LONG_ACTIONS = 16


class Stopping:
    """Whether the server has been asked to stop."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class Pool:
    """Threads of their own for one kind of long work, ``size`` at once at most."""

    def __init__(self, what: str, size: int, key: str | None = None) -> None:
        self.what, self.size, self.key = what, size, key
        self.limiter = CapacityLimiter(size)
        self.held = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """One of the pool's places for the whole of a request; Flink's 503 when all are
        taken."""
        if self.held >= self.size:
            setting = f" ({self.key})" if self.key else ""
            raise FlinkError(
                503, f"flinkish web has {self.size} {self.what} under way{setting}; try again."
            )
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on one of the pool's threads."""
        return await anyio.to_thread.run_sync(function, *args, limiter=self.limiter)

    async def run_held(self, function: Callable[..., T], *args: Any) -> T:
        """:meth:`run` within a :meth:`slot`."""
        with self.slot():
            return await self.run(function, *args)
