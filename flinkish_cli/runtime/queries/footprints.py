"""The driver measures what each query's checkpoint takes on storage, every
``flinkish.checkpoint.size.interval``, and records it in the job's status.

Who and how often: the job's driver (or session-cluster client), on a thread of its own so
that a slow listing never delays a heartbeat or a control request; once an interval (1 min by
default; 0 turns it off). Each measurement is a listing of the query's checkpoint and of its
file sink's ``_spark_metadata`` (:func:`flinkish_cli.registry.footprint.measure`): names and
sizes, never a file's content, so on S3 it costs one LIST request per thousand files. The
result goes into the query's :class:`~flinkish_cli.registry.status.QueryStatus` and out with
the next status write, where ``flinkish info <JobID>``, ``flinkish web`` and ``/metrics``
read it from the registry like everything else.

A part that grows with age (a file source's log, a file sink's log) is named in the job's log
when it passes 1 MiB and each time it doubles, with what to do about it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from flinkish_cli.registry import footprint
from flinkish_cli.runtime.status_keeper import StatusKeeper

log = logging.getLogger("flinkish.runtime")

#: A growing part is first named in the log at this size, then each time it doubles.
WARN_FROM = 1 << 20

#: What to measure per query: (storage of its checkpoint, the checkpoint, (storage, output)
#: of its file sink or None).
Target = tuple[Any, str, tuple[Any, str] | None]


class FootprintWatch:
    """Measures the queries' checkpoints every ``interval`` seconds, until ``done``."""

    def __init__(
        self,
        keeper: StatusKeeper,
        targets: Callable[[], dict[str, Target]],
        interval: float,
        job_id: str,
    ) -> None:
        self.keeper = keeper
        self.targets = targets  # JobQueries.footprint_targets
        self.interval = interval
        self.job_id = job_id
        self._warned: dict[tuple[str, str], int] = {}
        self._failing = False

    def run(self, done: threading.Event) -> None:
        while not done.wait(self.interval):
            self.measure_all()

    def measure_all(self) -> None:
        """Measure every query's checkpoint once and record it (a failure is one line in the
        log, and the previous figures stay)."""
        measured = False
        for name, (storage, checkpoint, sink) in self.targets().items():
            try:
                found = footprint.measure(storage, checkpoint, sink)
            except Exception as error:  # storage down: the job runs on, figures stay
                if not self._failing:
                    log.warning("Could not measure the checkpoint of query '%s': %s", name, error)
                self._failing = True
                continue
            self._failing = False
            with self.keeper.lock:
                entry = self.keeper.status.queries.get(name)
                if entry is None or entry.checkpoint != checkpoint:
                    continue
                entry.footprint = found
            measured = True
            self._tell(name, found)
        if measured:
            self.keeper.changed()

    def _tell(self, name: str, found: footprint.Footprint) -> None:
        for part, size in found.growing():
            last = self._warned.get((name, part.name), 0)
            if size.bytes >= max(WARN_FROM, 2 * last):
                self._warned[(name, part.name)] = size.bytes
                log.warning(
                    "Query '%s': %s takes %s in %d files and grows for as long as the query "
                    "runs (%s). What to do: %s. See 'flinkish info %s'.",
                    name,
                    part.name,
                    _mib(size.bytes),
                    size.files,
                    part.what,
                    part.advice,
                    self.job_id,
                )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"
