"""Reading and writing job status files on the checkpoint storage.

Layout, under the checkpoint root (``execution.checkpointing.dir``)::

    <root>/<JobID>/_flinkish/status.json     the job's status (JobStatus), rewritten atomically
    <root>/<JobID>/_flinkish/control/...     control requests and responses (control.py)
    <root>/<JobID>/<query name>/             each query's Spark checkpoint

This module reads and (atomically) replaces ``status.json``; who replaces it, and when, is
:mod:`~flinkish_cli.registry.status_writer`'s: every write is one of its transitions.

A status file that cannot be read as this job's status (damaged, foreign, written by
something else) raises :class:`UnreadableStatusError` when the job is asked for by its
JobID, and is reported as an :class:`UnreadableJob` by :meth:`JobRegistry.scan`: one bad
file never hides the other jobs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flinkish_cli.errors import FlinkishError, JobError, StorageError
from flinkish_cli.registry.jobid import is_job_id, parse_job_id
from flinkish_cli.registry.names import is_query_name
from flinkish_cli.registry.status import JobStatus

if TYPE_CHECKING:
    from flinkish_cli.config import Configuration
    from flinkish_cli.storage import Storage

META_DIR = "_flinkish"
STATUS_FILE = "status.json"


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


class JobRegistry:
    """The jobs kept under one checkpoint root."""

    def __init__(self, root: str, storage: Storage) -> None:
        self.root = root.rstrip("/")
        self.storage = storage

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

    # -- status --------------------------------------------------------------------------
    def write(self, status: JobStatus) -> None:
        """Atomically replace the job's status file. In flinkish only the transitions of
        :mod:`~flinkish_cli.registry.status_writer` call it (tests seed registries with it)."""
        self.storage.write_text(self.status_path(status.job_id), status.to_json())

    def find(self, job_id: str) -> JobStatus | None:
        """The job's status, or None when the registry has no such job.

        :class:`UnreadableStatusError` when the file is there but is not this job's status.
        """
        job_id = parse_job_id(job_id)
        path = self.status_path(job_id)
        try:
            text = self.storage.read_text(path)
        except FileNotFoundError:
            return None
        except StorageError:
            if not self.storage.exists(path):
                return None
            raise
        except ValueError as error:  # bytes that are not UTF-8
            raise UnreadableStatusError(job_id, path, f"it is not text ({error})") from error
        except IsADirectoryError as error:
            raise UnreadableStatusError(job_id, path, "it is a directory") from error
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
        return status

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

    def scan(self) -> tuple[list[JobStatus], list[UnreadableJob]]:
        """Every job: the statuses that could be read, newest first, and the jobs whose
        status file could not (damaged, foreign, or unreadable storage), by JobID.

        Reads status files in parallel; a problem with one job never hides the others.
        """
        ids = list(self.job_ids())
        if not ids:
            return [], []
        with ThreadPoolExecutor(max_workers=min(16, len(ids))) as pool:
            found = list(pool.map(self._find_or_problem, ids))
        statuses = [s for s in found if isinstance(s, JobStatus)]
        unreadable = sorted((s for s in found if isinstance(s, UnreadableJob)), key=_by_id)
        return sorted(statuses, key=lambda s: s.start_time, reverse=True), unreadable

    def _find_or_problem(self, job_id: str) -> JobStatus | UnreadableJob | None:
        path = self.status_path(job_id)
        try:
            return self.find(job_id)
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


def _by_id(job: UnreadableJob) -> str:
    return job.job_id


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


def registry_for(config: Configuration) -> JobRegistry:
    """The registry that ``config`` names with execution.checkpointing.dir."""
    from flinkish_cli.storage import open_for_config

    root = str(config.get("execution.checkpointing.dir"))
    return JobRegistry(root.rstrip("/"), open_for_config(root, config))
