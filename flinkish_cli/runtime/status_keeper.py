"""The job's status inside its driver: one lock, and a heartbeat that writes it.

:class:`StatusKeeper` holds the :class:`~flinkish_cli.registry.status.JobStatus` that the
driver's threads update under :attr:`StatusKeeper.lock`, and writes it to the registry
(:func:`~flinkish_cli.registry.status_writer.publish_driver_status`) on every heartbeat
(``heartbeat.interval``) and as soon as something changed (a completed micro-batch, a state).
Writes are ordered, and the lock is held only to take a snapshot, never during a write, so a
slow storage never blocks the job.

It also keeps the job's longer series of batches for charts
(:mod:`flinkish_cli.registry.series`), continued from the one in the registry: the status's
recent batches are folded into it on every write, and it is written at most once a heartbeat
interval (and when the job ends), so a fast trigger does not double the writes.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from flinkish_cli.plan.job import JobPlan
from flinkish_cli.plan.rundir import PID_FILE
from flinkish_cli.registry import series as series_file
from flinkish_cli.registry import status_writer
from flinkish_cli.registry.control import POLL_SECONDS
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry

log = logging.getLogger("flinkish.runtime")


class StatusKeeper:
    """The job's status, its lock, and the heartbeat that writes it."""

    def __init__(self, plan: JobPlan, registry: JobRegistry) -> None:
        self.plan = plan
        self.registry = registry
        status = registry.find(plan.job_id) or JobStatus(job_id=plan.job_id, name=plan.name)
        status.host = socket.gethostname()
        status.pid = os.getpid()
        status.supervisor_pid = _supervisor_pid(plan)
        status.log_path = plan.log_path
        status.heartbeat_timeout = plan.heartbeat_timeout_s
        status.master = plan.master
        status.mode = plan.runtime_mode
        status.parallelism = plan.parallelism
        self.status = status
        self.lock = threading.RLock()
        self._dirty = threading.Event()
        self._write_lock = threading.Lock()
        self.series = series_file.read(registry, plan.job_id)
        self._series_written = 0.0
        self._series_pending = False

    @property
    def state(self) -> JobState:
        return self.status.state

    def changed(self) -> None:
        """Something changed: the heartbeat thread writes the status at its next look."""
        self._dirty.set()

    def flush(self) -> None:
        """Write the status now (with a fresh heartbeat), and the series when due."""
        with self._write_lock:
            with self.lock:
                self.status.heartbeat = time.time()
                self._dirty.clear()
                snapshot = JobStatus.from_json(self.status.to_json())
            try:
                status_writer.publish_driver_status(self.registry, snapshot)
            except Exception as error:  # never let the registry take the job down
                log.warning("Could not write the job's status: %s", error)
            self._write_series(snapshot)

    def _write_series(self, snapshot: JobStatus) -> None:
        self._series_pending |= self.series.merge(snapshot)
        due = time.time() - self._series_written >= self.plan.heartbeat_interval_s
        if self._series_pending and (due or snapshot.state.is_terminal):
            try:
                series_file.write(self.registry, snapshot.job_id, self.series)
                self._series_written = time.time()
                self._series_pending = False
            except Exception as error:  # charts are not worth the job
                log.warning("Could not write the job's series: %s", error)

    def set_state(self, state: JobState, cause: str | None = None) -> None:
        """Record ``state`` (and its cause) and write it at once."""
        with self.lock:
            self.status.state = state
            if cause is not None:
                self.status.failure_cause = cause
            if state.is_terminal:
                self.status.end_time = time.time()
        self.flush()

    def beat(self, done: threading.Event, check: Callable[[], None]) -> None:
        """The heartbeat thread's body, until ``done``: ``check()`` first (it may end the
        process), then a write when the status changed or a heartbeat is due."""
        interval = self.plan.heartbeat_interval_s
        next_beat, writing = 0.0, 0.0
        while not done.wait(POLL_SECONDS / 2):
            check()
            if self._dirty.is_set() or time.time() >= next_beat:
                # late beyond the last write's own time: the driver, not the store
                late = time.time() - self.status.heartbeat - interval - writing
                if late > interval:
                    log.warning("The heartbeat is %.1f s late (is the driver starved?).", late)
                began = time.monotonic()
                self.flush()
                writing = time.monotonic() - began
                if writing > interval:
                    log.warning(
                        "The heartbeat took %.1f s to write: the job registry's store "
                        "answered late.",
                        writing,
                    )
                next_beat = time.time() + interval


def _supervisor_pid(plan: JobPlan) -> int | None:
    """The pid of the job's supervisor, from the run directory it owns (client mode)."""
    if not plan.run_dir:
        return None
    try:
        with open(os.path.join(plan.run_dir, PID_FILE), encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None
