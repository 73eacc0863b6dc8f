"""Following an attached job: its completed batches, its state, its printed output.

:func:`follow` yields what is new in the job's status each time it changes, until the job
ends. It reads the same registry ``flinkish list`` reads, so it works wherever the driver runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from flinkish_cli.registry.status import JobState, JobStatus, Progress
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.submission.launcher import Launched, tail_cause

POLL_SECONDS = 0.5
#: How long a follower given a ``brisk`` interval looks that often, before ``poll``: a short
#: job's end is seen sooner, and a long one costs no more than before.
BRISK_SECONDS = 30.0


@dataclass
class Update:
    """What changed since the last update."""

    status: JobStatus
    batches: list[tuple[str, Progress]] = field(default_factory=list)


def follow(
    registry: JobRegistry,
    job_id: str,
    launched: Launched | None,
    poll: float = POLL_SECONDS,
    brisk: float | None = None,
) -> Iterator[Update]:
    """Yield updates until the job is in a terminal state (or its driver is gone), looking
    every ``poll`` seconds (every ``brisk`` seconds for the first :data:`BRISK_SECONDS`)."""
    seen: dict[str, int] = {}
    brisk_until = time.monotonic() + BRISK_SECONDS
    while True:
        status = registry.find(job_id)
        exited = launched is not None and launched.process.poll() is not None
        if status is not None:
            batches = []
            for name, query in status.queries.items():
                for progress in query.recent:
                    if progress.batch_id > seen.get(name, -1):
                        batches.append((name, progress))
                        seen[name] = progress.batch_id
            batches.sort(key=lambda item: (item[1].timestamp, item[0]))
            if exited and not status.state.is_terminal:
                status = registry.find(job_id) or status
                if not status.state.is_terminal:
                    status.state = JobState.FAILED
                    status.failure_cause = (
                        "The job's driver exited without recording an end state.\n"
                        + tail_cause(launched.log_path)  # type: ignore[union-attr]
                    )
            yield Update(status, batches)
            if status.state.is_terminal:
                return
            if (launched is None or exited) and status.effective_state().is_terminal:
                return  # a driver out of sight: its heartbeat decides
        time.sleep(brisk if brisk is not None and time.monotonic() < brisk_until else poll)


def pass_output(stream: IO[bytes], log_path: Path, show: Callable[[str], None]) -> threading.Thread:
    """Copy the driver's standard output to the job's log and to ``show``, line by line."""

    def copy() -> None:
        with open(log_path, "ab") as log:
            for raw in iter(stream.readline, b""):
                log.write(raw)
                log.flush()
                show(raw.decode(errors="replace").rstrip("\n"))

    thread = threading.Thread(target=copy, name="flinkish-output", daemon=True)
    thread.start()
    return thread
