"""What the supervisor waits out instead of counting it against its driver: the registry's
store down or slow (an S3 endpoint or a NameNode that does not answer for a while), and a
silent yarn-application driver whose application YARN still runs (YARN's next attempt
comes, and writes the job's status again). And, before a yarn-application driver reports,
the application YARN has accepted for it: recorded in the job's status at once, and ended
with the job when its driver never reports.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("flinkish.supervisor")

#: How often a registry that does not answer is asked again.
POLL = 0.5
#: A registry read that took longer than this (s) was an outage of its store: the driver's
#: heartbeat, written to the same store, gets a full timeout from the answer.
SLOW_REGISTRY = 5.0
#: How often a supervisor asks the ResourceManager whether a silent driver's application runs.
YARN_POLL = 5.0
#: How often it asks for the application YARN accepted, until it has one.
ACCEPT_POLL = 1.0


@dataclass
class StoreWatch:
    """The job's status as the registry last gave it, and whether its store answers now."""

    registry: Any
    job_id: str
    last: Any = None
    down: bool = False
    #: when the registry last answered again after an outage (heartbeats count from then)
    back: float = 0.0

    def find(self, wait: bool, stopping: Callable[[], bool]) -> Any:
        """The job's status in the registry (None when it has none). While the registry's
        store does not answer, the supervisor outlives the outage, as its driver does: said
        once, then, with ``wait``, asked again until it answers (or ``stopping()``), else the
        status it last read."""
        from flinkish_cli.errors import StorageError

        while True:
            began = time.monotonic()
            try:
                status = self.registry.find(self.job_id)
            except StorageError as error:
                if not self.down:
                    self.down = True
                    log.warning("The job registry does not answer (%s); waiting for it.", error)
                if not wait or stopping():
                    return self.last
                time.sleep(POLL)
                continue
            if self.down:
                self.down = False
                self.back = time.time()
                log.info("The job registry answers again.")
            elif (took := time.monotonic() - began) > SLOW_REGISTRY:
                # a store that stopped answering and then answered (an S3 endpoint that did
                # not respond for a while): the driver's heartbeats waited as this read did
                self.back = time.time()
                log.warning(
                    "The job registry took %.0f s to answer; the driver's heartbeat is "
                    "counted from its answer.",
                    took,
                )
            self.last = status
            return status


@dataclass
class YarnWatch:
    """Whether YARN still runs a silent driver's application, asked every :data:`YARN_POLL`
    seconds, for a job whose drivers YARN restarts (``yarn_restarts``: yarn-application)."""

    yarn_restarts: bool = False
    asked: float = -YARN_POLL
    live: bool = False
    looked: float = -ACCEPT_POLL

    def record_accepted(self, registry: Any, status: Any, reported: bool) -> None:
        """Before this attempt's driver has reported: the application YARN accepted for the
        job (found by its tag, :func:`flinkish_cli.spark.yarn.tagged_application`), recorded
        in the job's status as soon as YARN has it, its state unchanged (CREATED for a new
        job): ``list`` shows it beside the JobID and ``run -d`` returns. The supervisor writes
        the status while no driver runs; a driver that reported meanwhile keeps its own."""
        from flinkish_cli.registry import status_writer
        from flinkish_cli.spark import yarn

        now = time.monotonic()
        if not self.yarn_restarts or reported or status is None or now - self.looked < ACCEPT_POLL:
            return
        self.looked = now
        app_id = yarn.tagged_application(status.job_id, status.yarn_application)
        if app_id is None:
            return
        try:
            fresh = registry.find(status.job_id)
            if fresh is None or fresh.pid != status.pid:
                return  # the driver reported: it records the application itself
            fresh.yarn_application = app_id
            status_writer.record_supervised(registry, fresh, os.getpid())
        except Exception as error:
            log.warning(
                "Could not record YARN application %s in the job's status: %s", app_id, error
            )
            return
        log.info("YARN accepted the job's application %s.", app_id)

    def end_unstarted(self, status: Any) -> None:
        """A yarn-application driver that did not report in time (the job fails): the
        application YARN accepted for it ends too, so that none is left queued, or starting
        a driver after the job has ended. Ending ``spark-submit`` does not end it."""
        from flinkish_cli.errors import UsageError
        from flinkish_cli.spark import yarn

        if not self.yarn_restarts or status is None or not status.yarn_application:
            return
        try:
            state = yarn.kill(status.yarn_application)
        except (OSError, ValueError, UsageError) as error:
            log.warning("Could not end YARN application %s: %s", status.yarn_application, error)
            return
        log.warning("YARN application %s ended (%s).", status.yarn_application, state)

    def attempt_coming(self, status: Any) -> bool:
        """A silent yarn-application driver whose application YARN still runs: its
        ApplicationMaster died and YARN starts the next attempt (``yarn.application-attempts``),
        whose driver writes the status again. YARN, not a heartbeat, judges that driver's
        life; the ResourceManager is asked every few seconds."""
        from flinkish_cli.spark import yarn

        if not self.yarn_restarts or not status.yarn_application:
            return False
        now = time.monotonic()
        if now - self.asked < YARN_POLL:
            return self.live
        self.asked = now
        live = yarn.is_live(status.yarn_application)
        if live and not self.live:
            log.warning(
                "No heartbeat from the driver, and YARN still runs %s: waiting for its next "
                "attempt.",
                status.yarn_application,
            )
        self.live = live
        return live
