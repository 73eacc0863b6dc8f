"""Reading and writing job status files on the checkpoint storage.

Layout, under the checkpoint root (``execution.checkpointing.dir``)::

    <root>/<JobID>/_flinkish/status.json     the job's status (JobStatus), rewritten atomically
    <root>/_flinkish/status-index/<JobID>   on S3: the MD5 of the status being written
    <root>/<JobID>/_flinkish/control/...     control requests and responses (control.py)
    <root>/<JobID>/<query name>/             each query's Spark checkpoint

This module reads and (atomically) replaces ``status.json``; who replaces it, and when, is
:mod:`~flinkish_cli.registry.status_writer`'s: every write is one of its transitions.

A status file that cannot be read as this job's status (damaged, foreign, written by
something else) raises :class:`UnreadableStatusError` when the job is asked for by its
JobID, and is reported as an :class:`UnreadableJob` by :meth:`JobRegistry.scan`: one bad
file never hides the other jobs.

A long-running reader (``flinkish web``) opens the registry with a :class:`StatusCache`:
it keeps what it read and revalidates it on every read (a conditional read per status file:
S3's ``If-None-Match`` with the ETag, a ``stat`` on local disk), so it parses only what
changed and never answers with a status that is not the file's. :class:`RegistryIdentity`
says which registry this is, without touching the storage.

**The status index** makes a job list on S3 two listings instead of one request per job. A storage
whose listings carry ETags (S3) gets, with every status write, a small index entry written
*before* the status: the MD5 (hex) of the status text. A listing of the index then gives,
for every job, the ETag of that entry, which is the MD5 of the entry's text for a plain
``PutObject``. A kept status whose text hashes to what the index says was the last write
begun is the file; any other job's status is read conditionally, as without the index. The
order of the two writes makes every crash safe: an entry written and its status not (yet)
can only disagree with what is kept, and a disagreement costs one read, never a wrong
answer. That holds because one job's status has one writer at a time
(:mod:`~flinkish_cli.registry.status_writer`). What the index cannot see is a
status written without it (by a flinkish older than the index, or by hand) after the index
agreed with what is kept: such a job keeps the status it had until its next write through
flinkish. Encrypted buckets whose ETags are not MD5s (SSE-KMS) never agree with the index:
every job is then read conditionally, as before. Local disk and HDFS have no index: a
``stat`` per status is already cheap.
"""

from __future__ import annotations

import builtins
import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import FlinkishError, JobError, StorageError
from flinkish_cli.registry.jobid import is_job_id, parse_job_id
from flinkish_cli.registry.names import is_query_name
from flinkish_cli.registry.status import JobStatus, without_progress

if TYPE_CHECKING:
    from flinkish_cli.config import Configuration
    from flinkish_cli.storage import Storage

META_DIR = "_flinkish"
STATUS_FILE = "status.json"
#: under ``<root>/_flinkish``: one entry per job, the MD5 of its status (see the module)
STATUS_INDEX_DIR = "status-index"


class UnreadableStatusError(JobError):
    """A job whose status file cannot be read as its status: its state is unknown."""

    def __init__(self, job_id: str, path: str, reason: str) -> None:
        super().__init__(
            f"The status file of job {job_id} is unreadable: {reason}.",
            f"It is {path}. flinkish cannot tell the job's state from it; if the job is gone, "
            "remove the job's directory.",
        )
        self.job_id = job_id
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class UnreadableJob:
    """A job directory whose status file cannot be read: shown with an unknown state."""

    job_id: str
    path: str
    reason: str
    #: When the status file was last written (epoch seconds), if the storage says.
    modified: float | None = None


@dataclass(frozen=True)
class RegistryIdentity:
    """Which registry: its root as its storage locates it (:meth:`Storage.location`: an
    absolute local path, or an S3 path with its endpoint; never a secret), and a short id
    of that location. ``flinkish web`` says which registry it serves with it, and the CLI
    compares it with its own configuration's before it asks the server anything."""

    location: str
    id: str

    @classmethod
    def of(cls, location: str) -> RegistryIdentity:
        import hashlib

        return cls(location, hashlib.sha256(location.encode()).hexdigest()[:16])


class _Read:
    """A status file as read: the status and its text (the job list's document of it is
    made from the text once, when first asked for)."""

    __slots__ = ("_index_etag", "_listed", "status", "text")

    def __init__(self, status: JobStatus, text: str) -> None:
        self.status, self.text = status, text
        self._listed: dict[str, Any] | None = None
        self._index_etag: str | None = None

    def listed(self) -> dict[str, Any]:
        if self._listed is None:
            self._listed = without_progress(json.loads(self.text))
        return self._listed

    def index_etag(self) -> str:
        """The ETag the status index lists for this text when it was the last write."""
        if self._index_etag is None:
            self._index_etag = _md5(_md5(self.text))
        return self._index_etag


class StatusCache:
    """What a long-running reader of the registry (``flinkish web``) keeps of the status
    files it read, each with its storage version (:meth:`Storage.read_if_changed`: an ETag on
    S3, the inode, times and size on local disk). Never a cache that can lie: every read
    asks the storage whether the file is still that version, and takes the file's content
    when it is not; a job's directory gone is a job gone. What it saves is the transfer and
    the parsing of statuses that did not change. The statuses it hands out are shared:
    callers read them and never change them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[str, _Read]] = {}

    def get(self, path: str) -> tuple[str, _Read] | None:
        with self._lock:
            return self._kept.get(path)

    def keep(self, path: str, version: str, read: _Read) -> None:
        with self._lock:
            self._kept[path] = (version, read)

    def drop(self, path: str) -> None:
        with self._lock:
            self._kept.pop(path, None)


class JobRegistry:
    """The jobs kept under one checkpoint root."""

    def __init__(self, root: str, storage: Storage, cache: StatusCache | None = None) -> None:
        self.root = root.rstrip("/")
        self.storage = storage
        #: what this process keeps of the status files it read (None: it reads them anew)
        self.cache = cache

    @classmethod
    def open(cls, root: str, settings: object | None = None) -> JobRegistry:
        """The registry under ``root``, reached with ``settings`` (a StorageSettings)."""
        from flinkish_cli.storage import open_storage

        return cls(root, open_storage(root, settings))  # type: ignore[arg-type]

    # -- paths ---------------------------------------------------------------------------
    def job_dir(self, job_id: str) -> str:
        """``<root>/<JobID>``: the job's checkpoints and metadata."""
        from flinkish_cli.storage import join

        return join(self.root, parse_job_id(job_id))

    def meta_dir(self, job_id: str) -> str:
        """``<root>/<JobID>/_flinkish``: flinkish's own files for the job."""
        from flinkish_cli.storage import join

        return join(self.job_dir(job_id), META_DIR)

    def status_path(self, job_id: str) -> str:
        from flinkish_cli.storage import join

        return join(self.meta_dir(job_id), STATUS_FILE)

    def status_index_dir(self) -> str:
        """``<root>/_flinkish/status-index``: the status index (see the module)."""
        from flinkish_cli.storage import join

        return join(self.root, META_DIR, STATUS_INDEX_DIR)

    # -- status --------------------------------------------------------------------------
    def write(self, status: JobStatus) -> None:
        """Atomically replace the job's status file. In flinkish only the transitions of
        :mod:`~flinkish_cli.registry.status_writer` call it (tests seed registries with it).
        On a storage with the status index, its entry is written first (see the module)."""
        from flinkish_cli.storage import join

        text = status.to_json()
        if self.storage.etags_in_listings:
            entry = join(self.status_index_dir(), parse_job_id(status.job_id))
            self.storage.write_text(entry, _md5(text))
        self.storage.write_text(self.status_path(status.job_id), text)

    def find(self, job_id: str) -> JobStatus | None:
        """The job's status, or None when the registry has no such job.

        :class:`UnreadableStatusError` when the file is there but is not this job's status.
        """
        kept = self._load(parse_job_id(job_id))
        return None if kept is None else kept.status

    def _load(self, job_id: str) -> _Read | None:
        """The job's status file, read and checked (or, when this registry keeps what it
        read, revalidated: see :class:`StatusCache`); None when there is none."""
        path = self.status_path(job_id)
        try:
            version, raw = self._read_status(path)
        except ValueError as error:  # bytes that are not UTF-8
            raise UnreadableStatusError(job_id, path, f"it is not text ({error})") from error
        except FileNotFoundError:
            self._forget(path)
            return None
        except StorageError:
            if not self.storage.exists(path):
                self._forget(path)
                return None
            raise
        except IsADirectoryError as error:
            raise UnreadableStatusError(job_id, path, "it is a directory") from error
        if isinstance(raw, _Read):
            return raw
        try:
            text = raw if isinstance(raw, str) else raw.decode("utf-8")
        except ValueError as error:  # bytes that are not UTF-8
            raise UnreadableStatusError(job_id, path, f"it is not text ({error})") from error
        try:
            status = JobStatus.from_json(text)
        except json.JSONDecodeError as error:
            reason = f"it is not valid JSON (line {error.lineno}, column {error.colno})"
            raise UnreadableStatusError(job_id, path, reason) from error
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
            reason = f"it is not a flinkish job status ({type(error).__name__}: {error})"
            raise UnreadableStatusError(job_id, path, reason) from error
        problem = _problem(status, job_id)
        if problem:
            raise UnreadableStatusError(job_id, path, problem)
        read = _Read(status, text)
        if self.cache is not None and version is not None:
            self.cache.keep(path, version, read)
        return read

    def _read_status(self, path: str) -> tuple[str | None, str | bytes | _Read]:
        """The status file's version and content, or what the cache keeps of it when that is
        still the file."""
        if self.cache is None:
            return None, self.storage.read_text(path)
        known = self.cache.get(path)
        version, data = self.storage.read_if_changed(path, known[0] if known else None)
        if data is None and known is not None:
            return version, known[1]
        if data is None:  # a storage that answered "unchanged" to no version: read it
            return None, self.storage.read_bytes(path)
        return version, data

    def _forget(self, path: str) -> None:
        if self.cache is not None:
            self.cache.drop(path)

    def get(self, job_id: str) -> JobStatus:
        """The job's status; :class:`JobError` naming where it looked when there is none."""
        job_id = parse_job_id(job_id)
        status = self.find(job_id)
        if status is None:
            raise JobError(
                f"No job with JobID {job_id} under {self.storage.describe()}.",
                "Check the JobID with 'flinkish list -a', and that this shell uses the same "
                "configuration (execution.checkpointing.dir) as the job.",
            )
        return status

    def status_text(self, job_id: str) -> str:
        """The job's status file as text (checked as :meth:`get` checks it), with
        :meth:`get`'s errors."""
        job_id = parse_job_id(job_id)
        read = self._load(job_id)
        if read is None:
            self.get(job_id)  # raises "No job with JobID..."
            raise AssertionError  # pragma: no cover
        return read.text

    def job_ids(self) -> Iterator[str]:
        """The JobIDs that have a directory under the root."""
        return (  # listing a missing directory gives nothing, on every storage
            info.name
            for info in self.storage.list(self.root)
            if info.is_dir and is_job_id(info.name)
        )

    def list(self) -> list[JobStatus]:
        """Every readable job's status, newest first (see :meth:`scan` for the others)."""
        return self.scan()[0]

    def scan(self) -> tuple[builtins.list[JobStatus], builtins.list[UnreadableJob]]:
        """Every job: the statuses that could be read, newest first, and the jobs whose
        status file could not (damaged, foreign, or unreadable storage), by JobID.

        Reads status files in parallel; a problem with one job never hides the others.
        """
        found = self._read_all()
        statuses = [r.status for r in found if isinstance(r, _Read)]
        unreadable = sorted((r for r in found if isinstance(r, UnreadableJob)), key=_by_id)
        return sorted(statuses, key=lambda s: s.start_time, reverse=True), unreadable

    def listing(self) -> tuple[builtins.list[dict[str, Any]], builtins.list[UnreadableJob]]:
        """:meth:`scan` as documents for a job list: each readable job's status document
        without its queries' recent progress (:func:`~.status.without_progress`), newest
        first, and the unreadable jobs."""
        found = self._read_all()
        read = sorted((r for r in found if isinstance(r, _Read)), key=_newest_first)
        unreadable = sorted((r for r in found if isinstance(r, UnreadableJob)), key=_by_id)
        return [r.listed() for r in read], unreadable

    def identity(self) -> RegistryIdentity:
        """Which registry this is (where its storage locates the root: no I/O)."""
        return RegistryIdentity.of(self.storage.location(self.root))

    def _read_all(self) -> builtins.list[_Read | UnreadableJob | None]:
        """Every job's status as read, or its problem: the kept statuses the status index
        says are current as they are, the others read in parallel."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=16) as pool:
            indexed = pool.submit(self._status_index)  # listed while the jobs are
            ids = list(self.job_ids())
            current = self._current_by_index(ids, indexed.result())
            rest = [job_id for job_id in ids if job_id not in current]
            return [*current.values(), *pool.map(self._read_or_problem, rest)]

    def _status_index(self) -> dict[str, str | None] | None:
        """The status index's ETag of each job (one listing); None without a cache, on a
        storage without the index, or when the index cannot be listed (every job is then
        read conditionally)."""
        if self.cache is None or not self.storage.etags_in_listings:
            return None
        try:
            return {
                info.name: info.etag
                for info in self.storage.list(self.status_index_dir())
                if not info.is_dir
            }
        except StorageError:
            return None

    def _current_by_index(
        self, ids: builtins.list[str], listed: dict[str, str | None] | None
    ) -> dict[str, _Read]:
        """The kept statuses of ``ids`` that the status index ``listed`` says are still
        their files."""
        if listed is None:
            return {}
        assert self.cache is not None  # no index is listed without one
        current = {}
        for job_id in ids:
            kept = self.cache.get(self.status_path(job_id))
            if kept is not None and listed.get(job_id) == kept[1].index_etag():
                current[job_id] = kept[1]
        return current

    def _read_or_problem(self, job_id: str) -> _Read | UnreadableJob | None:
        path = self.status_path(job_id)
        try:
            return self._load(job_id)
        except UnreadableStatusError as error:
            reason = error.reason
        except FlinkishError as error:
            reason = error.message
        except Exception as error:  # one job's problem must not break the listing
            reason = f"{type(error).__name__}: {error}"
        return UnreadableJob(job_id, path, reason, self._modified(path))

    def _modified(self, path: str) -> float | None:
        try:
            return self.storage.stat(path).mtime
        except Exception:
            return None


def _md5(text: str) -> str:
    import hashlib

    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _by_id(job: UnreadableJob) -> str:
    return job.job_id


def _newest_first(read: _Read) -> float:
    return -read.status.start_time


def _problem(status: JobStatus, job_id: str) -> str | None:
    """Why a parsed status cannot be this job's (a foreign or damaged file), or None."""
    if not isinstance(status.job_id, str) or status.job_id.lower() != job_id:
        return f"it names another job ({str(status.job_id)[:64]!r})"
    if not isinstance(status.name, str):
        return "it has no job name"
    for field_name in ("start_time", "heartbeat", "heartbeat_timeout"):
        if not _finite(getattr(status, field_name)):
            return f"its {field_name} is not a number"
    if status.end_time is not None and not _finite(status.end_time):
        return "its end_time is not a number"
    for field_name in ("pid", "supervisor_pid", "parallelism"):
        value = getattr(status, field_name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return f"its {field_name} is not a whole number"
    if not isinstance(status.restarts, int) or isinstance(status.restarts, bool):
        return "its restarts is not a whole number"
    for text_field in ("failure_cause", "host", "log_path", "master", "restored_from"):
        value = getattr(status, text_field)
        if value is not None and not isinstance(value, str):
            return f"its {text_field} is not text"
    if not isinstance(status.queries, dict):
        return "its queries are not a mapping"
    for name, query in status.queries.items():
        if not is_query_name(name) or query.name != name:
            return f"it names a query {str(name)[:80]!r}, which cannot be a query identity"
        for what, batch in (
            ("last committed", query.last_committed_batch),
            ("first", query.first_batch),
        ):
            if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool)):
                return f"query {name}'s {what} batch is not a whole number"
    return None


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def registry_identity(config: Configuration) -> RegistryIdentity:
    """``registry_for(config).identity()`` without opening the storage: a command that asks a
    REST endpoint which registry it serves loads no storage backend."""
    from flinkish_cli.storage import location_for_config

    root = str(config.get("execution.checkpointing.dir")).rstrip("/")
    return RegistryIdentity.of(location_for_config(root, config))


def registry_for(config: Configuration, keep_reads: bool = False) -> JobRegistry:
    """The registry that ``config`` names with execution.checkpointing.dir; ``keep_reads``
    for a long-running reader that keeps what it read and revalidates it (:class:`StatusCache`)."""
    from flinkish_cli.storage import open_for_config

    root = str(config.get("execution.checkpointing.dir"))
    cache = StatusCache() if keep_reads else None
    return JobRegistry(root.rstrip("/"), open_for_config(root, config), cache)
