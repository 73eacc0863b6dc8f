"""The handlers of the dashboard's own documents under ``/flinkish/`` (:mod:`.dashboard`
writes them): the job list, a job's series, savepoints, graph, checkpoint size and state,
``info <JobID> --output json``'s document, and where ``run -m <this endpoint>`` sends a
job (:data:`~flinkish_cli.rest.messages.CLUSTER`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.rest import messages as m
from flinkish_cli.web import dashboard, parsing
from flinkish_cli.web.handling import Handlers
from flinkish_cli.web.replies import FlinkError, ok, route


class DashboardApi(Handlers):
    """The dashboard's documents over one job client."""

    async def cluster(self, request: Request) -> Response:
        """Where ``flinkish run -m <this endpoint>`` sends a job (the client's side:
        :mod:`flinkish_cli.submission.endpoint`)."""
        identity = self.client.identity()
        s = self.settings
        return ok(dashboard.cluster(s.session_cluster, s.version, identity, s.submit_enabled))

    async def dashboard_jobs(self, request: Request) -> Response:
        """The dashboard's job list: each job's row with its last savepoint, and how many jobs
        cannot be read."""
        jobs, unreadable = await run_in_threadpool(self.client.list_jobs)
        savepoints = await run_in_threadpool(self.client.last_savepoints, [s.job_id for s in jobs])
        return ok(dashboard.job_rows(jobs, len(unreadable), savepoints))

    async def dashboard_series(self, request: Request) -> Response:
        """The job's figures over time, for the dashboard's charts."""
        status = await self._status(parsing.job_id(request))
        kept = await run_in_threadpool(self.client.series, status)
        return ok(dashboard.series(status, kept))

    async def dashboard_checkpoint_size(self, request: Request) -> Response:
        """Each query's checkpoint by part, as ``info <JobID> --output json`` shows it."""
        return ok(dashboard.checkpoint_size(await self._status(parsing.job_id(request))))

    async def dashboard_state(self, request: Request) -> Response:
        """``state ls`` of the job (read in a child process by the job client, cached by
        its batches): each query's operators and stores, schemas, rows and bytes."""
        status = await self._status(parsing.job_id(request))
        return ok(await self._read_state(lambda: self.client.job_state(status.job_id)))

    async def dashboard_state_rows(self, request: Request) -> Response:
        """``state show`` of one operator of the job: its biggest keys (``?limit=``, 20), or
        one key's rows (``?key=``), of one store (``?store=``; needed when it has several)."""
        status = await self._status(parsing.job_id(request))
        query, operator, store, key, limit = parsing.state_rows_request(request)
        return ok(
            await self._read_state(
                lambda: self.client.job_state_rows(
                    status.job_id, query, operator, store, key, limit
                )
            )
        )

    async def _read_state(self, read: Callable[[], Any]) -> Any:
        """A state read; a query, operator or store the job does not have is Flink's 404,
        any other refusal (no state yet, damaged, too slow) a 500 with its message."""
        try:
            return await run_in_threadpool(read)
        except StateNotFoundError as error:
            raise FlinkError(404, error.message) from None
        except StateError as error:
            raise FlinkError(500, error.message) from None

    async def job_info(self, request: Request) -> Response:
        """``info <JobID> --output json``'s document: each query's checkpoint by part and its
        graph with figures (what the CLI prints through this endpoint)."""
        job_id = parsing.job_id(request)
        await self._status(job_id)  # 404 in Flink's JSON for a job this registry lacks
        return ok(await run_in_threadpool(self.client.job_info, job_id))

    async def dashboard_plan(self, request: Request) -> Response:
        """The job graph with each node's figures, as ``info <JobID> --output json`` shows
        each query's."""
        status = await self._status(parsing.job_id(request))
        return ok(await run_in_threadpool(self.client.graph_view, status))

    async def dashboard_savepoints(self, request: Request) -> Response:
        """The job's savepoints, for the dashboard's savepoint tab."""
        status = await self._status(parsing.job_id(request))
        records = await run_in_threadpool(self.client.savepoint_history, status.job_id)
        return ok(dashboard.savepoints(records))

    def routes(self) -> list[Route]:
        """The dashboard's documents, under ``/flinkish/``."""
        return [
            route(m.CLUSTER, self.cluster),
            route(m.DASHBOARD_JOBS, self.dashboard_jobs),
            route(m.DASHBOARD_SERIES, self.dashboard_series),
            route(m.DASHBOARD_SAVEPOINTS, self.dashboard_savepoints),
            route(m.DASHBOARD_PLAN, self.dashboard_plan),
            route(m.JOB_INFO, self.job_info),
            route(m.DASHBOARD_CHECKPOINT_SIZE, self.dashboard_checkpoint_size),
            route(m.DASHBOARD_STATE, self.dashboard_state),
            route(m.DASHBOARD_STATE_ROWS, self.dashboard_state_rows),
        ]
