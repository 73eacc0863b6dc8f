"""The savepoint history of each job, kept in the registry beside its status.

Every savepoint a job takes (triggered by hand, periodic, on stop, for an upgrade) is one
record, written by the process that took it::

    <root>/<JobID>/_flinkish/savepoints/<record id>.json

One file per savepoint, so that concurrent writers (the job's driver taking a savepoint, a
shell disposing of an older one) never overwrite each other's records; a record only ever
changes from COMPLETED to DISPOSED. Record ids sort by time, so a listing is the history in
order. A record that cannot be read (damaged, or not flinkish's) is skipped, never fatal.
"""

from __future__ import annotations

import enum
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from flinkish_cli.registry.store import JobRegistry

log = logging.getLogger("flinkish.registry")

HISTORY_DIR = "savepoints"
#: Upgrades followed back at most (a loop of damaged links ends there).
MAX_LINEAGE = 1000


class Trigger(str, enum.Enum):
    """Why a savepoint was taken (the Flink Kubernetes Operator's trigger types)."""

    MANUAL = "MANUAL"
    PERIODIC = "PERIODIC"
    STOP = "STOP"
    UPGRADE = "UPGRADE"


class SavepointState(str, enum.Enum):
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    DISPOSED = "DISPOSED"


def _new_record_id() -> str:
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"


@dataclass
class SavepointRecord:
    """One savepoint of a job: what triggered it, when, where, how big, at which batches."""

    job_id: str
    trigger: Trigger
    state: SavepointState
    path: str  # the savepoint (COMPLETED, DISPOSED) or its target directory (FAILED)
    time: float = field(default_factory=time.time)  # when it completed or failed
    size: int | None = None  # bytes of its files
    batches: dict[str, int] = field(default_factory=dict)  # each query's last batch in it
    explicit_target: bool = False  # the user named its directory (retention leaves it)
    cause: str | None = None  # why it failed
    record_id: str = field(default_factory=_new_record_id)

    def to_json(self) -> str:
        data = asdict(self)
        data["trigger"], data["state"] = self.trigger.value, self.state.value
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SavepointRecord:
        """:class:`ValueError` (or TypeError) when ``text`` is not a savepoint record."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        record = cls(**data)
        record.trigger = Trigger(record.trigger)
        record.state = SavepointState(record.state)
        if not isinstance(record.path, str) or not isinstance(record.batches, dict):
            raise ValueError("no path or batches")
        return record

    def summary(self) -> dict[str, Any]:
        """The record as every JSON answer shows a savepoint (``savepoint list --output
        json``, the dashboard's history, a job's last savepoint): all its fields, its time in
        epoch ms."""
        data = asdict(self)
        data.update(trigger=self.trigger.value, state=self.state.value, time=int(self.time * 1000))
        return data


class SavepointHistory:
    """The savepoint records of a registry's jobs."""

    def __init__(self, registry: JobRegistry) -> None:
        self.registry = registry

    def _dir(self, job_id: str) -> str:
        from flinkish_cli.storage import join

        return join(self.registry.meta_dir(job_id), HISTORY_DIR)

    def _path(self, record: SavepointRecord) -> str:
        from flinkish_cli.storage import join

        return join(self._dir(record.job_id), f"{record.record_id}.json")

    def record(self, record: SavepointRecord) -> None:
        """Write (or rewrite) ``record``."""
        self.registry.storage.write_text(self._path(record), record.to_json())

    def _newest_first(self, job_id: str) -> Iterator[SavepointRecord]:
        """The job's records, read one at a time as they are asked for, newest first: one
        listing of its directory (a record's file is named by its id, which sorts by time),
        then one read per record. An unreadable record is skipped."""
        from flinkish_cli.storage import join

        storage = self.registry.storage
        directory = self._dir(job_id)
        names = sorted(
            (i.name for i in storage.list(directory) if not i.is_dir and i.name.endswith(".json")),
            reverse=True,
        )
        for name in names:
            try:
                yield SavepointRecord.from_json(storage.read_text(join(directory, name)))
            except FileNotFoundError:
                continue
            except (ValueError, TypeError, KeyError, RecursionError) as error:
                log.warning("Skipping the unreadable savepoint record %s: %s", name, error)

    def of_job(self, job_id: str) -> list[SavepointRecord]:
        """The job's savepoints, newest first."""
        return sorted(self._newest_first(job_id), key=lambda r: r.record_id, reverse=True)

    def last_completed(self, job_id: str) -> SavepointRecord | None:
        """The job's last savepoint: its newest COMPLETED record (never a DISPOSED or FAILED
        one), or None. The one answer to "the job's last savepoint" (its list entry, its
        REST checkpoint statistics, the dashboard). Its own savepoints only, as in Flink: the
        savepoint a job was upgraded or resumed from is where it was restored from
        (``restored_from``), not its own.

        One listing of the job's records, then reads from the newest until one is COMPLETED:
        one read in the usual case (only a newer FAILED or DISPOSED record costs another)."""
        completed = (r for r in self._newest_first(job_id) if r.state is SavepointState.COMPLETED)
        return next(completed, None)

    def of_lineage(self, job_id: str) -> list[SavepointRecord]:
        """The savepoints of the job and of the jobs it was upgraded from (``flinkish
        upgrade``: the history follows the job across upgrades and rollbacks), newest
        first."""
        records: list[SavepointRecord] = []
        seen: set[str] = set()
        current: str | None = job_id
        while current is not None and current not in seen and len(seen) < MAX_LINEAGE:
            seen.add(current)
            records += self.of_job(current)
            try:
                status = self.registry.find(current)
            except Exception:  # an unreadable status ends the line here, never the listing
                break
            current = status.upgraded_from if status is not None else None
        return sorted(records, key=lambda r: r.record_id, reverse=True)

    def all(self) -> list[SavepointRecord]:
        """Every job's savepoints, newest first."""
        records = [r for job_id in self.registry.job_ids() for r in self.of_job(job_id)]
        return sorted(records, key=lambda r: r.record_id, reverse=True)

    def mark_disposed(self, job_id: str, path: str) -> bool:
        """Mark the job's record of the savepoint at ``path`` DISPOSED; False if it has none."""
        wanted = path.rstrip("/")
        for record in self.of_job(job_id):
            if record.path.rstrip("/") == wanted and record.state is not SavepointState.DISPOSED:
                record.state = SavepointState.DISPOSED
                self.record(record)
                return True
        return False
