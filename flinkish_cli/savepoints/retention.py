"""Savepoint retention: which of a job's savepoints to dispose of, and disposing of them.

A job's completed savepoints beyond ``flinkish.savepoint.history.max-count`` (newest first)
or older than ``flinkish.savepoint.history.max-age`` are disposed through the same safe path
as ``savepoint -d`` (:func:`~.dispose.dispose`: only a directory named like a savepoint with
a readable flinkish manifest, never through a symbolic link) and marked DISPOSED in the
history. Never disposed: the newest completed savepoint, a savepoint the user took into a
directory of their own naming (unless ``flinkish.savepoint.history.dispose-named``), and
anything the history does not record as a savepoint of this job. A job upgraded from
another (``flinkish upgrade``) counts the savepoints of the jobs it replaced as its own.

The same count and age bound the history itself, as the Flink Kubernetes Operator's
``savepoint.history.max.count``/``max.age`` bound the history it keeps: after each pass, of
the records of savepoints that are gone (DISPOSED) or never were (FAILED), across the job
and the jobs it replaced, the newest ``max-count`` made within ``max-age`` are kept and the
others deleted (:meth:`~flinkish_cli.registry.history.SavepointHistory.prune`). A COMPLETED
record stays as long as its savepoint: a job's history holds at most about ``max-count``
COMPLETED records (more only for savepoints in directories the user named) and
``max-count`` DISPOSED or FAILED ones, however long it runs.

And what a killed driver left: a savepoint directory of the job (or of a job it replaced),
named like one, with no manifest, that nothing has written to for
:data:`ABANDONED_AFTER`, in the directory the job's savepoints go to, is deleted after the
pass (:func:`sweep_abandoned`). The pass runs in the job's driver right after one of its
savepoints completed, and a job takes one savepoint at a time, so no writer of this job is
inside such a directory; the quiet period keeps a writer of another flinkish, whose JobID
shares the first six digits, safe too. ``savepoint -d`` refuses these (it cannot know that
no writer is inside), so without the sweep a job killed now and then would pile up partial
copies of its state for ever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from flinkish_cli.registry.history import SavepointHistory, SavepointRecord, SavepointState

log = logging.getLogger("flinkish.savepoints")

#: How long an incomplete savepoint of the job must have been left alone before it goes.
ABANDONED_AFTER = 600.0


@dataclass(frozen=True)
class Retention:
    """How many completed savepoints a job keeps, and for how long."""

    max_count: int = 10
    max_age: timedelta = timedelta(days=1)
    dispose_named: bool = False

    @classmethod
    def from_config(cls, config: Any) -> Retention:
        return cls(
            max_count=int(config.get("flinkish.savepoint.history.max-count")),
            max_age=config.get("flinkish.savepoint.history.max-age"),
            dispose_named=bool(config.get("flinkish.savepoint.history.dispose-named")),
        )

    def expired(self, records: list[SavepointRecord], now: float) -> list[SavepointRecord]:
        """The records to dispose of, of one job's history (newest first)."""
        completed = [r for r in records if r.state is SavepointState.COMPLETED]
        oldest_kept = now - self.max_age.total_seconds()
        return [
            record
            for index, record in enumerate(completed)
            if index > 0  # the newest completed savepoint stays
            and (index >= self.max_count or record.time < oldest_kept)
            and (self.dispose_named or not record.explicit_target)
        ]


def apply_retention(
    history: SavepointHistory,
    job_id: str,
    retention: Retention,
    storage_of: Callable[[str], Any],
    now: float | None = None,
) -> list[str]:
    """Dispose of the job's expired savepoints (``storage_of(path)`` reaches each); the
    paths disposed. One that cannot be disposed stays COMPLETED, with a warning."""
    from flinkish_cli.savepoints.dispose import dispose

    now = time.time() if now is None else now
    disposed = []
    records = history.of_lineage(job_id, {SavepointState.COMPLETED})
    for record in retention.expired(records, now):
        try:
            dispose(storage_of(record.path), record.path)
        except Exception as error:
            log.warning("Retention could not dispose of savepoint %s: %s", record.path, error)
            continue
        record.state = SavepointState.DISPOSED
        history.update(record)
        disposed.append(record.path)
        log.info("Retention disposed of savepoint %s (%s).", record.path, record.trigger.value)
    prune_history(history, job_id, retention, now)
    return disposed


def prune_history(
    history: SavepointHistory, job_id: str, retention: Retention, now: float | None = None
) -> int:
    """Bound the history of the job (and of the jobs it replaced) by the retention's count
    and age (see the module's docstring); the records deleted."""
    now = time.time() if now is None else now
    pruned = history.prune(job_id, retention.max_count, retention.max_age.total_seconds(), now)
    if pruned:
        log.info("Pruned %s records of disposed or failed savepoints from the history.", pruned)
    return pruned


def sweep_abandoned(
    storage: Any, directory: str, job_ids: list[str], now: float | None = None
) -> list[str]:
    """Delete the incomplete savepoints of ``job_ids`` in ``directory`` left alone for
    :data:`ABANDONED_AFTER` (see the module's docstring); the paths deleted."""
    from flinkish_cli.savepoints.manifest import METADATA_FILE, is_savepoint_name
    from flinkish_cli.storage import join

    now = time.time() if now is None else now
    prefixes = tuple(f"savepoint-{job_id[:6]}-" for job_id in job_ids)
    swept = []
    try:
        entries = storage.list(directory)
    except Exception:  # no such directory yet, or unreadable: nothing to sweep
        return []
    for entry in entries:
        if not (entry.is_dir and is_savepoint_name(entry.name) and entry.name.startswith(prefixes)):
            continue
        if storage.exists(join(entry.path, METADATA_FILE)):
            continue  # complete: retention's business, by its records
        files = list(storage.walk(entry.path))
        newest = max((f.mtime for f in files if f.mtime is not None), default=entry.mtime)
        if newest is None or now - newest < ABANDONED_AFTER:
            continue
        storage.delete_tree(entry.path)
        swept.append(entry.path)
        log.info("Deleted savepoint %s, left incomplete by a driver that was killed.", entry.path)
    return swept
