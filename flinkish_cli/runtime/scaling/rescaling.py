"""The driver's side of an in-place rescale it was started for: done, or given up.

A driver the supervisor started for a rescale (its plan's ``RestorePlan.rescale``; see
:mod:`flinkish_cli.registry.rescale_marker`) runs at the new parallelism (or, rolling back,
at the old one) with its queries' state repartitioned in place. :class:`RescaleWatch`,
called by the driver's watcher thread, judges it as an upgrade's new job is judged: the
rescale has **completed** (or, rolling back, has **rolled back**) once the program reached
its first wait and every query restored for the rescale has progress at this parallelism (a
batch committed after the one it resumed from, or Spark's report that it found no new
input). Then the marker and the rescale's restore markers go, and the outcome is recorded.
A rescale that is not stable within ``flinkish.upgrade.readiness.timeout``, or whose job
fails at the new parallelism (:meth:`RescaleWatch.failed`: the restart strategy is not
asked, as a failed upgrade is not restarted), is given up: the driver ends RESTARTING and
its supervisor rolls the rescale back to the old parallelism. A driver that dies meanwhile
is rolled back by the supervisor too. A rollback that fails is a failure as any other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.rescale_marker import RescaleMarker, clear_marker, read_marker
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import JobRegistry

log = logging.getLogger("flinkish.runtime")

#: How often the watch reads the marker (the watcher thread polls faster).
EVERY = 1.0


@dataclass
class RescaleWatch:
    """Completes (or gives up) the rescale this driver runs for; nothing otherwise."""

    plan: JobPlan
    registry: JobRegistry
    status: Callable[[], JobStatus]
    restored: Callable[[], dict[str, int]]  # query -> the batch it resumed after
    give_up: Callable[[str], None]  # ends the driver RESTARTING, for the rollback
    ended: Callable[[RescaleMarker, str], None]  # the outcome: COMPLETED or ROLLED_BACK
    readiness: float = 300.0  # seconds
    began: float = field(default_factory=time.monotonic)
    _done: bool = False
    _next: float = 0.0

    @property
    def rescale_id(self) -> str | None:
        restore = self.plan.restore
        return restore.rescale if restore is not None else None

    def watch(self) -> None:
        """One look (cheap when there is nothing to do)."""
        now = time.monotonic()
        if self._done or self.rescale_id is None or now < self._next:
            return
        self._next = now + EVERY
        marker = read_marker(self.registry, self.plan.job_id)
        if marker is None or marker.id != self.rescale_id or marker.stage == "SAVEPOINTED":
            self._done = True  # ended by an earlier driver of it
            return
        waiting = self._waiting_for()
        if waiting is None:
            self._end(marker)
        elif marker.stage == "RESTARTED" and now - self.began > self.readiness:
            self._done = True
            cause = (
                f"The rescale to parallelism {marker.to} did not become stable within "
                f"{self.readiness:.0f} s (it waited for {waiting}): rolling back to "
                f"{marker.from_}."
            )
            log.error("%s", cause)
            self.give_up(cause)

    def failed(self, cause: str) -> bool:
        """The job failed (``cause``, one line) while this driver runs at a rescale's new
        parallelism, before the rescale completed: give the rescale up at once (True), so
        its supervisor rolls it back. False otherwise (no rescale, one completed or given up
        already, or this driver is the rollback): the restart strategy decides."""
        if self._done or self.rescale_id is None:
            return False
        marker = read_marker(self.registry, self.plan.job_id)
        if marker is None or marker.id != self.rescale_id or marker.stage != "RESTARTED":
            return False
        self._done = True
        message = (
            f"The job failed at parallelism {marker.to} before the rescale completed "
            f"({cause}): rolling back to {marker.from_}."
        )
        log.error("%s", message)
        self.give_up(message)
        return True

    def _waiting_for(self) -> str | None:
        """What the rescale still waits for; None once it is stable."""
        status = self.status()
        if not status.queries_started:
            return "the program to start its queries"
        restored = self.restored()
        waiting = [name for name, batch in restored.items() if not _progressed(status, name, batch)]
        return f"a batch of {', '.join(sorted(waiting))}" if waiting else None

    def _end(self, marker: RescaleMarker) -> None:
        from flinkish_cli.storage import join

        self._done = True
        outcome = "COMPLETED" if marker.stage == "RESTARTED" else "ROLLED_BACK"
        try:
            self.ended(marker, outcome)
        except Exception as error:
            log.warning("Could not record the rescale's outcome: %s", error)
        markers = join(self.registry.meta_dir(self.plan.job_id), "restore", f"rescale-{marker.id}")
        try:
            self.registry.storage.delete_tree(markers)
            clear_marker(self.registry, self.plan.job_id)
        except Exception as error:
            log.warning("Could not clear the rescale's markers: %s", error)
        if outcome == "COMPLETED":
            log.info("Rescale to parallelism %s completed: the job is stable.", marker.to)
        else:
            log.warning("Rescale to parallelism %s rolled back to %s.", marker.to, marker.from_)


def _progressed(status: JobStatus, name: str, resumed_after: int) -> bool:
    query = status.queries.get(name)
    if query is None or not query.active:
        return False
    committed = query.last_committed_batch
    return (committed is not None and committed > resumed_after) or query.idle
