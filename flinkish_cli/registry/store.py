"""Reading and writing job status files on the checkpoint storage.

Layout, under the checkpoint root (``execution.checkpointing.dir``)::

    <root>/<JobID>/_flinkish/status.json     the job's status (JobStatus), rewritten atomically
    <root>/<JobID>/_flinkish/control/...     control requests and responses (control.py)
    <root>/<JobID>/<query name>/             each query's Spark checkpoint

Only the job's driver writes ``status.json`` while the job lives; a CLI writes it only to
record what the driver can no longer record (a job cancelled after its driver died).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from flinkish_cli.errors import JobError, StorageError
from flinkish_cli.registry.jobid import is_job_id, parse_job_id
from flinkish_cli.registry.status import JobStatus

if TYPE_CHECKING:
    from flinkish_cli.config import Configuration
    from flinkish_cli.storage import Storage

META_DIR = "_flinkish"
STATUS_FILE = "status.json"


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
        """Atomically replace the job's status file."""
        self.storage.write_text(self.status_path(status.job_id), status.to_json())

    def find(self, job_id: str) -> JobStatus | None:
        """The job's status, or None when the registry has no such job."""
        path = self.status_path(job_id)
        try:
            text = self.storage.read_text(path)
        except FileNotFoundError:
            return None
        except StorageError:
            if not self.storage.exists(path):
                return None
            raise
        try:
            return JobStatus.from_json(text)
        except (ValueError, TypeError, KeyError) as error:
            raise JobError(
                f"The status file of job {job_id} is unreadable ({error}).",
                f"It is {path}; remove the job's directory if the job is gone.",
            ) from error

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
        """Every job's status, newest first; reads status files in parallel."""
        ids = list(self.job_ids())
        if not ids:
            return []
        with ThreadPoolExecutor(max_workers=min(16, len(ids))) as pool:
            found = [s for s in pool.map(self._find_quietly, ids) if s is not None]
        return sorted(found, key=lambda s: s.start_time, reverse=True)

    def _find_quietly(self, job_id: str) -> JobStatus | None:
        try:
            return self.find(job_id)
        except JobError:
            return None


def registry_for(config: Configuration) -> JobRegistry:
    """The registry that ``config`` names with execution.checkpointing.dir."""
    from flinkish_cli.storage import open_for_config

    root = str(config.get("execution.checkpointing.dir"))
    return JobRegistry(root.rstrip("/"), open_for_config(root, config))
