"""The savepoint history of each job, kept in the registry beside its status.

Every savepoint a job takes (triggered by hand, periodic, on stop, for an upgrade) is one
record, written by the process that took it, in a file whose name says what a listing needs
to know of it, so that a listing alone tells the records apart::

    <root>/<JobID>/_flinkish/savepoints/<record id>.<TRIGGER>.<STATE>.json

The record id is the time the record was made (ns, 20 digits) and a random part, so names
sort by time and a listing is the history in order; the file holds the whole record (its
path, size, batches, ...). One file per savepoint, so that concurrent writers (the job's
driver taking a savepoint, a shell disposing of an older one) never overwrite each other's
records. A record only ever changes from COMPLETED to DISPOSED (:meth:`SavepointHistory.update`):
its DISPOSED file is written first, then its COMPLETED one deleted, so a record never has no
file; a reader that finds both takes the final state (DISPOSED, FAILED) over COMPLETED.

Files of an older flinkish, ``<record id>.json``, say nothing in their names: they are read
to know their state, and the first pruning pass (:meth:`SavepointHistory.prune`) rewrites
the ones it keeps under the current name. A record that cannot be read (damaged, not
flinkish's, its name and content disagreeing), or that vanishes between the listing and the
read (pruned, or replaced by its next state), is skipped, never fatal.

The history is bounded as the Flink Kubernetes Operator bounds its own: retention disposes
of COMPLETED savepoints (:mod:`flinkish_cli.savepoints.retention`), and :meth:`prune`
deletes the records of savepoints that are gone (DISPOSED) or never were (FAILED) beyond the
newest ``max-count`` of them, or older than ``max-age``.
"""

from __future__ import annotations

import enum
import json
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from flinkish_cli.registry.store import JobRegistry

HISTORY_DIR = "savepoints"
SUFFIX = ".json"
#: Upgrades followed back at most (a loop of damaged links ends there).
MAX_LINEAGE = 1000
#: What a record id may be (it names a file): flinkish makes ``<20 digits>-<8 hex>``.
RECORD_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Trigger(str, enum.Enum):
    """Why a savepoint was taken (the Flink Kubernetes Operator's trigger types)."""

    MANUAL = "MANUAL"
    PERIODIC = "PERIODIC"
    STOP = "STOP"
    UPGRADE = "UPGRADE"
    #: taken by the autoscaler before an in-place rescale (:mod:`.rescale_marker`)
    RESCALE = "RESCALE"


class SavepointState(str, enum.Enum):
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    DISPOSED = "DISPOSED"

    @property
    def final(self) -> bool:
        """No savepoint is there to keep (disposed, or never taken): pruning's business."""
        return self is not SavepointState.COMPLETED


def _new_record_id() -> str:
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"


def id_time(record_id: str) -> float | None:
    """When a record was made, from its id (epoch seconds); None for an id of another form."""
    head = record_id.split("-", 1)[0]
    return int(head) / 1e9 if len(head) == 20 and head.isdigit() else None


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
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        """The record as its file holds it (its time in epoch seconds, exactly)."""
        data = asdict(self)
        data["trigger"], data["state"] = self.trigger.value, self.state.value
        return data

    @classmethod
    def from_json(cls, text: str) -> SavepointRecord:
        """:class:`ValueError` (or TypeError) when ``text`` is not a savepoint record."""
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: Any) -> SavepointRecord:
        """:meth:`from_json` of a document already parsed (:meth:`to_dict`'s)."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        record = cls(**data)
        record.trigger = Trigger(record.trigger)
        record.state = SavepointState(record.state)
        if not isinstance(record.path, str) or not isinstance(record.batches, dict):
            raise ValueError("no path or batches")
        if not isinstance(record.record_id, str) or not RECORD_ID.match(record.record_id):
            raise ValueError("no record id")
        return record

    @property
    def file_name(self) -> str:
        """The name of the record's file: its id, trigger and state."""
        if not RECORD_ID.match(self.record_id):
            raise ValueError(f"{self.record_id!r} cannot be a record id")
        return f"{self.record_id}.{self.trigger.value}.{self.state.value}{SUFFIX}"

    def summary(self) -> dict[str, Any]:
        """The record as every JSON answer shows a savepoint (``savepoint list --output
        json``, the dashboard's history, a job's last savepoint): all its fields, its time in
        epoch ms."""
        data = asdict(self)
        data.update(trigger=self.trigger.value, state=self.state.value, time=int(self.time * 1000))
        return data


@dataclass(frozen=True)
class _File:
    """One record file as a listing shows it: an older flinkish's names neither its trigger
    nor its state (None)."""

    name: str
    record_id: str
    trigger: Trigger | None = None
    state: SavepointState | None = None


def _parse_name(name: str) -> _File | None:
    """The record file ``name`` is, or None (a temporary file, something else's)."""
    if not name.endswith(SUFFIX) or name.startswith("."):
        return None
    parts = name[: -len(SUFFIX)].split(".")
    if not RECORD_ID.match(parts[0]):
        return None
    if len(parts) == 1:
        return _File(name, parts[0])
    if len(parts) != 3:
        return None
    try:
        return _File(name, parts[0], Trigger(parts[1]), SavepointState(parts[2]))
    except ValueError:
        return None


def _rank(state: SavepointState | None) -> int:
    """Which file of a record wins: a final state over COMPLETED over an unknown one."""
    return -1 if state is None else int(state.final)


def _file_rank(file: _File) -> int:
    return _rank(file.state)


class SavepointHistory:
    """The savepoint records of a registry's jobs."""

    def __init__(self, registry: JobRegistry) -> None:
        self.registry = registry

    def _dir(self, job_id: str) -> str:
        from flinkish_cli.storage import join

        return join(self.registry.meta_dir(job_id), HISTORY_DIR)

    # -- writing -------------------------------------------------------------------------
    def record(self, record: SavepointRecord) -> None:
        """Write a new record."""
        from flinkish_cli.storage import join

        self.registry.storage.write_text(
            join(self._dir(record.job_id), record.file_name), record.to_json()
        )

    def update(self, record: SavepointRecord) -> None:
        """Rewrite a record whose state changed (or an older flinkish's file): its new file
        first, then the files it supersedes (its older-format file; its COMPLETED one when
        its state is final), so that it always has one. A file whose name says a more final
        state than ``record``'s is never deleted (a reader takes it)."""
        from flinkish_cli.storage import join

        self.record(record)
        directory = self._dir(record.job_id)
        superseded = [f"{record.record_id}{SUFFIX}"]
        if record.state.final:
            completed = f"{record.record_id}.{record.trigger.value}.COMPLETED{SUFFIX}"
            superseded.append(completed)
        for name in superseded:
            self.registry.storage.delete(join(directory, name))

    def mark_disposed(self, job_id: str, path: str) -> bool:
        """Mark the job's record of the savepoint at ``path`` DISPOSED; False if it has none."""
        wanted = path.rstrip("/")
        for record in self._newest_first(job_id, {SavepointState.COMPLETED}):
            if record.path.rstrip("/") == wanted:
                record.state = SavepointState.DISPOSED
                self.update(record)
                return True
        return False

    # -- reading -------------------------------------------------------------------------
    def _files(self, job_id: str) -> list[list[_File]]:
        """The job's record files from one listing, grouped by record, newest first."""
        groups: dict[str, list[_File]] = {}
        for info in self.registry.storage.list(self._dir(job_id)):
            parsed = None if info.is_dir else _parse_name(info.name)
            if parsed is not None:
                groups.setdefault(parsed.record_id, []).append(parsed)
        return [groups[key] for key in sorted(groups, reverse=True)]

    def _read(self, job_id: str, file: _File) -> SavepointRecord | None:
        """The record in ``file``; None when it is gone or is not this record."""
        from flinkish_cli.storage import join

        try:
            record = SavepointRecord.from_json(
                self.registry.storage.read_text(join(self._dir(job_id), file.name))
            )
        except FileNotFoundError:  # pruned, or replaced by its next state, since the listing
            return None
        except (ValueError, TypeError, KeyError, RecursionError) as error:
            _log().warning("Skipping the unreadable savepoint record %s: %s", file.name, error)
            return None
        named = (
            file.record_id,
            record.trigger if file.trigger is None else file.trigger,
            record.state if file.state is None else file.state,
        )
        if record.job_id != job_id or named != (record.record_id, record.trigger, record.state):
            _log().warning(
                "Skipping the savepoint record %s: its name and content differ.", file.name
            )
            return None
        return record

    def _resolve(
        self, job_id: str, files: list[_File], states: Iterable[SavepointState] | None = None
    ) -> SavepointRecord | None:
        """A record from its files (usually one): the one in the most final state, read only
        when that state is one of ``states`` (all when None). Older-format files are read to
        learn their state."""
        wanted = set(SavepointState) if states is None else set(states)
        older = [r for r in (self._read(job_id, f) for f in files if f.state is None) if r]
        best_older = max(older, key=lambda r: _rank(r.state), default=None)
        best = max((f for f in files if f.state is not None), key=_file_rank, default=None)
        if best is not None and (best_older is None or _file_rank(best) >= _rank(best_older.state)):
            # only the most final file: if it vanished, so did the record (pruned, or
            # replaced by its next state); a file it superseded is never taken instead
            return self._read(job_id, best) if best.state in wanted else None
        return best_older if best_older is not None and best_older.state in wanted else None

    def _newest_first(
        self, job_id: str, states: Iterable[SavepointState] | None = None
    ) -> Iterator[SavepointRecord]:
        """The job's records in ``states`` (all when None), read one at a time as they are
        asked for, newest first: one listing of its directory, then one read per record
        wanted (the names tell the states: records in other states are not read)."""
        wanted = None if states is None else set(states)
        for files in self._files(job_id):
            record = self._resolve(job_id, files, wanted)
            if record is not None:
                yield record

    def of_job(
        self, job_id: str, states: Iterable[SavepointState] | None = None
    ) -> list[SavepointRecord]:
        """The job's savepoints (those in ``states`` when given), newest first."""
        return list(self._newest_first(job_id, states))

    def last_completed(self, job_id: str) -> SavepointRecord | None:
        """The job's last savepoint: its newest COMPLETED record (never a DISPOSED or FAILED
        one), or None. The one answer to "the job's last savepoint" (its list entry, its
        REST checkpoint statistics, the dashboard). Its own savepoints only, as in Flink: the
        savepoint a job was upgraded or resumed from is where it was restored from
        (``restored_from``), not its own.

        One listing of the job's records, then one read: the newest COMPLETED file's."""
        return next(self._newest_first(job_id, {SavepointState.COMPLETED}), None)

    def last_time(self, job_id: str, trigger: Trigger) -> float | None:
        """When the job's newest record of ``trigger`` was made (its record's time), or None:
        one listing, then one read."""
        for files in self._files(job_id):
            if any(f.trigger in (trigger, None) for f in files):
                record = self._resolve(job_id, files)
                if record is not None and record.trigger is trigger:
                    return record.time
        return None

    def lineage(self, job_id: str) -> list[str]:
        """The job and the jobs it was upgraded from (``flinkish upgrade``), newest first:
        the history follows a job across upgrades and rollbacks."""
        jobs: list[str] = []
        current: str | None = job_id
        while current is not None and current not in jobs and len(jobs) < MAX_LINEAGE:
            jobs.append(current)
            try:
                status = self.registry.find(current)
            except Exception:  # an unreadable status ends the line here, never the listing
                break
            current = status.upgraded_from if status is not None else None
        return jobs

    def of_lineage(
        self, job_id: str, states: Iterable[SavepointState] | None = None
    ) -> list[SavepointRecord]:
        """The savepoints (those in ``states`` when given) of the job and of the jobs it was
        upgraded from (:meth:`lineage`), newest first."""
        records = [r for job in self.lineage(job_id) for r in self.of_job(job, states)]
        return sorted(records, key=lambda r: r.record_id, reverse=True)

    def all(self) -> list[SavepointRecord]:
        """Every job's savepoints, newest first."""
        records = [r for job_id in self.registry.job_ids() for r in self.of_job(job_id)]
        return sorted(records, key=lambda r: r.record_id, reverse=True)

    # -- pruning -------------------------------------------------------------------------
    def prune(self, job_id: str, max_count: int, max_age: float, now: float) -> int:
        """Bound the history of the job and of the jobs it was upgraded from (its
        :meth:`lineage`, counted as one history, as retention counts it): of the records of
        savepoints that are gone (DISPOSED) or never were (FAILED), keep the newest
        ``max_count`` made within ``max_age`` seconds of ``now``, and delete the others. A
        COMPLETED record is never deleted (its savepoint is retention's business); nor is a
        file that cannot be read. Older-format files are rewritten under the current name.

        One listing per job of the lineage, then deletes (and reads of older-format files
        only); the records deleted."""
        from flinkish_cli.storage import join

        storage = self.registry.storage
        groups = [(job, files) for job in self.lineage(job_id) for files in self._files(job)]
        groups.sort(key=lambda group: group[1][0].record_id, reverse=True)
        kept = deleted = 0
        for job, files in groups:
            directory = self._dir(job)
            record, state, made = self._state_of(job, files)
            if state is None:
                continue  # unreadable: never deleted
            superseded = sorted(files, key=_file_rank)  # the most final file goes last
            if state.final and (kept >= max_count or made < now - max_age):
                for file in superseded:
                    storage.delete(join(directory, file.name))
                deleted += 1
                continue
            kept += int(state.final)
            if record is not None:  # an older flinkish's file: rewritten, and it goes
                self.update(record)
            elif state.final:  # files left beside its final one (a COMPLETED, an older one)
                for file in superseded[:-1]:
                    storage.delete(join(directory, file.name))
        return deleted

    def _state_of(
        self, job_id: str, files: list[_File]
    ) -> tuple[SavepointRecord | None, SavepointState | None, float]:
        """A record's state and when it was made, from its names alone when they say; the
        record too when an older-format file had to be read (None otherwise)."""
        best = max(files, key=_file_rank)
        made = id_time(best.record_id)
        if (best.state is not None and best.state.final) or all(f.state is not None for f in files):
            return None, best.state, made if made is not None else 0.0
        record = self._resolve(job_id, files)
        if record is None:
            return None, None, 0.0
        return record, record.state, made if made is not None else record.time


def _log() -> Any:
    """The registry's logger (logging is imported only when there is something to say: the
    CLI's commands start without it)."""
    import logging

    return logging.getLogger("flinkish.registry")
