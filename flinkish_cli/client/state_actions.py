"""The job client's state actions over the registry in storage: ``state ls``, ``state show``
and ``state export`` of a savepoint, a retained checkpoint or a JobID, and a job's state as a
document for a long-lived caller (read in a child process by :mod:`.state_reads`).

:class:`StateActions` is a part of :class:`~flinkish_cli.client.jobs.JobClient`, kept apart
because it is one concern of its own: it needs the client's configuration and registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flinkish_cli.registry.jobid import parse_job_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from flinkish_cli.client.state_reads import StateReads
    from flinkish_cli.registry.store import JobRegistry
    from flinkish_cli.state.export import Export
    from flinkish_cli.state.model import StateListing, StoreRows


class StateActions:
    """``state`` of savepoints, checkpoints and jobs, for :class:`~.jobs.JobClient`."""

    config: Any
    _state_reads: StateReads | None

    @property
    def registry(self) -> JobRegistry:
        """The registry in storage (the job client's)."""
        raise NotImplementedError

    def state_listing(
        self,
        target: str,
        query: str | None = None,
        operator: int | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> StateListing:
        """``state ls`` of a savepoint, a retained checkpoint or a JobID (its queries'
        checkpoints at their latest committed batches, read from a copy)."""
        from flinkish_cli.state.api import list_state

        return list_state(target, self.config, query, operator, notice)

    def state_rows(
        self,
        target: str,
        query: str | None = None,
        operator: int | None = None,
        store: str | None = None,
        key: str | None = None,
        limit: int = 20,
        notice: Callable[[str], None] | None = None,
    ) -> list[StoreRows]:
        """``state show``: each chosen store's rows, biggest keys first."""
        from flinkish_cli.state.api import show_state

        return show_state(target, self.config, query, operator, store, key, limit, notice)

    def export_state(
        self,
        target: str,
        directory: str,
        fmt: str,
        query: str | None = None,
        operator: int | None = None,
        store: str | None = None,
        overwrite: bool = False,
        notice: Callable[[str], None] | None = None,
    ) -> Export:
        """``state export``: the chosen stores as Parquet or JSON lines under ``directory``."""
        from flinkish_cli.state.api import export_state

        return export_state(
            target, directory, self.config, fmt, query, operator, store, overwrite, notice
        )

    def job_state(self, job_id: str) -> dict[str, Any]:
        """``state ls`` of a job as a document, read in a child process (for a long-lived
        caller: :mod:`flinkish_cli.client.state_reads`), cached by the job's batches."""
        return self._read_state(job_id, {"action": "ls"})

    def job_state_rows(
        self,
        job_id: str,
        query: str,
        operator: int,
        store: str | None = None,
        key: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """``state show`` of one operator of a job as a document (see :meth:`job_state`)."""
        request = {
            "action": "show",
            "query": query,
            "operator": operator,
            "store": store,
            "key": key,
            "limit": limit,
        }
        return self._read_state(job_id, request)

    def _read_state(self, job_id: str, request: dict[str, Any]) -> dict[str, Any]:
        from flinkish_cli.client.state_reads import StateReads

        status = self.registry.get(parse_job_id(job_id))
        if self._state_reads is None:
            self._state_reads = StateReads(self.config)
        batches = {name: q.last_committed_batch for name, q in status.queries.items()}
        return self._state_reads.read(status.job_id, batches, request)
