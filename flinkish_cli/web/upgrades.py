"""An upgrade that flinkish's CLI asked ``flinkish web`` to carry out
(``POST /flinkish/jars/:id/upgrade``), and its answer: the events of
:mod:`flinkish_cli.rest.wire`, streamed as they happen.

The upgrade runs in a thread of its own, not in a request's: it may wait minutes for the new
program to become stable, and it goes on to its end when the CLI that asked goes away (a
client that disconnects stops reading, never the upgrade), as Flink's operator finishes an
upgrade it began. :class:`UpgradesUnderWay` keeps those threads: a ``flinkish web`` asked to
stop (SIGTERM, Ctrl-C) waits for them in its shutdown, so no upgrade is left half done (the
old job stopped, the new one not yet started) by the server's restart. Asked a second time,
it stops at once, as uvicorn does.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.rest import wire

if TYPE_CHECKING:
    from flinkish_cli.client.upgrade.outcome import UpgradeOutcome

log = logging.getLogger("flinkish.web")


class UpgradeStream:
    """The upgrade's presenter on the server: each call becomes an event of the answer
    (:meth:`lines`), then the outcome or the error ends it."""

    def __init__(self, heartbeat: float = wire.HEARTBEAT_SECONDS) -> None:
        self.heartbeat = heartbeat
        self._events: queue.Queue[bytes | None] = queue.Queue()

    # -- the presenter (UpgradePresenter) --------------------------------------------------
    def savepoint(self, path: str) -> None:
        self._events.put(wire.event("savepoint", path))

    def submitted(self, job_id: str) -> None:
        self._events.put(wire.event("submitted", job_id))

    def notice(self, message: str) -> None:
        self._events.put(wire.event("notice", message))

    # -- carrying it out -------------------------------------------------------------------
    def start(self, upgrade: Callable[[], UpgradeOutcome], name: str) -> threading.Thread:
        """Run ``upgrade`` in its own (non-daemon) thread; its events are :meth:`lines`'s."""
        thread = threading.Thread(target=self._carry_out, args=(upgrade,), name=name)
        thread.start()
        return thread

    def _carry_out(self, upgrade: Callable[[], UpgradeOutcome]) -> None:
        try:
            outcome = upgrade()
        except FlinkishError as error:
            self._events.put(wire.event("error", wire.error_header(error)))
        except Exception as error:  # the server's bug: said to the CLI, logged whole here
            log.exception("The upgrade failed")
            failure = JobError(
                f"flinkish web failed while it carried out the upgrade ({type(error).__name__}: "
                f"{error}).",
                "flinkish web's log has the details; 'flinkish list -a' shows where the jobs are.",
            )
            self._events.put(wire.event("error", wire.error_header(failure)))
        else:
            self._events.put(wire.event("outcome", outcome.to_json()))
        finally:
            self._events.put(None)

    def lines(self) -> Iterator[bytes]:
        """The answer's lines as they come: the events, an empty line whenever nothing
        happened for :attr:`heartbeat` seconds, until the outcome or the error."""
        while True:
            try:
                line = self._events.get(timeout=self.heartbeat)
            except queue.Empty:
                yield b"\n"
                continue
            if line is None:
                return
            yield line


class UpgradesUnderWay:
    """The upgrades this server carries out; :meth:`wait` returns once they have all ended."""

    def __init__(self) -> None:
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def start(
        self, stream: UpgradeStream, upgrade: Callable[[], UpgradeOutcome], name: str
    ) -> threading.Thread:
        """:meth:`UpgradeStream.start`, kept until it ends."""
        thread = stream.start(upgrade, name)
        with self._lock:
            self._threads = {t for t in self._threads if t.is_alive()} | {thread}
        return thread

    def wait(self) -> None:
        """Return once no upgrade is under way (the server's shutdown)."""
        while True:
            with self._lock:
                alive = [t for t in self._threads if t.is_alive()]
            if not alive:
                return
            log.warning(
                "Waiting for %d upgrade(s) under way to end before stopping (%s); stop again "
                "to stop at once.",
                len(alive),
                ", ".join(t.name for t in alive),
            )
            for thread in alive:
                thread.join()


__all__ = ["UpgradeStream", "UpgradesUnderWay"]
