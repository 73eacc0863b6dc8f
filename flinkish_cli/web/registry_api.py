"""The handlers of flinkish's own routes for its CLI through an endpoint
(:mod:`flinkish_cli.rest.wire`): the registry's documents as it holds them, a request's
answer, withdrawal and end, a job's log streamed, and savepoint records."""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.client.base import is_trigger_id
from flinkish_cli.errors import JobError
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.registry.store import UnreadableStatusError
from flinkish_cli.rest import messages as m
from flinkish_cli.web import parsing
from flinkish_cli.web.handling import Following, Handlers
from flinkish_cli.web.replies import JSON_TYPE, FlinkError, ok, route


class RegistryApi(Handlers):
    """The registry's documents for flinkish's CLI over one job client."""

    async def registry_jobs(self, request: Request) -> Response:
        """Every job's status document as the registry holds it, and the jobs whose status cannot be
        read."""
        documents, unreadable = await run_in_threadpool(self.client.job_listing)
        return ok({"jobs": documents, "unreadable": [dataclasses.asdict(j) for j in unreadable]})

    async def registry_job(self, request: Request) -> Response:
        """The job's status document as the registry holds it."""
        job_id = parsing.job_id(request)
        try:
            text = await run_in_threadpool(self.client.status_document, job_id)
        except UnreadableStatusError:
            raise
        except JobError as error:
            raise FlinkError(404, f"Job {job_id} not found", error) from None
        return Response(text, media_type=JSON_TYPE)

    def _control(self, request: Request) -> tuple[str, str]:
        job_id, trigger = parsing.job_id(request), request.path_params["triggerid"].lower()
        if not is_trigger_id(trigger):
            raise FlinkError(404, f"There is no request {trigger[:64]} for job {job_id}.")
        return job_id, trigger

    async def control_answer(self, request: Request) -> Response:
        """The job's answer to a control request (null while it has not answered), and whether the
        job claimed it."""
        job_id, trigger = self._control(request)
        response, claimed = await run_in_threadpool(self.client.trigger_answer, job_id, trigger)
        answer = None if response is None else dataclasses.asdict(response)
        return ok({"response": answer, "claimed": claimed})

    async def control_withdraw(self, request: Request) -> Response:
        """Withdraws a control request the job has not claimed; whether it was withdrawn."""
        job_id, trigger = self._control(request)
        await request.body()
        withdrawn = await run_in_threadpool(self.client.withdraw, job_id, trigger)
        return ok({"withdrawn": withdrawn})

    async def control_forget(self, request: Request) -> Response:
        """Removes a control request and its answer."""
        job_id, trigger = self._control(request)
        await run_in_threadpool(self.client.forget, job_id, trigger)
        return ok({})

    async def registry_log(self, request: Request) -> Response:
        """The job's log from this machine's ``env.log.dir``, streamed; ``follow`` until
        the job ends, ``lines`` the last lines only. An error before the first chunk is an
        error answer (with the job client's error), as ``flinkish logs`` fails before it
        prints anything.

        A follow holds one of :attr:`follows` (503 when all are taken) and reads on its
        threads, never the shared ones; it ends when its client goes away (within a look at
        the log) and when the server is stopping."""
        job_id = parsing.job_id(request)
        follow = request.query_params.get("follow", "false").lower() == "true"
        lines = request.query_params.get("lines")
        if lines is not None and not lines.isdigit():
            raise FlinkError(400, f"lines must be a whole number, not {lines[:16]!r}.")
        last = int(lines) if lines is not None else None
        slot = self.follows.slot()
        slot.__enter__()  # held until the answer has ended (Following's __call__)
        try:
            chunks = self.client.log(job_id, follow, last, ticks=True)
            first = await self.follows.run(next, chunks, None)
        except BaseException as error:
            slot.__exit__(None, None, None)
            if isinstance(error, JobError):
                raise FlinkError(404, error.message, error) from None
            raise

        async def body() -> Any:
            if first:
                yield first
            while not self.stopping.is_set():
                chunk = await self.follows.run(next, chunks, None)
                if chunk is None:
                    return
                if chunk:
                    yield chunk

        async def ended() -> None:
            await self.follows.run(chunks.close)
            slot.__exit__(None, None, None)

        return Following(body(), ended, media_type="text/plain; charset=utf-8")

    async def registry_savepoints(self, request: Request) -> Response:
        """Every job's savepoint records, newest first."""
        records = await run_in_threadpool(self.client.savepoint_history, None)
        return ok({"savepoints": [r.to_dict() for r in records]})

    async def registry_job_savepoints(self, request: Request) -> Response:
        """The job's savepoint records, newest first."""
        job_id = parsing.job_id(request)
        try:
            records = await run_in_threadpool(self.client.savepoint_history, job_id)
        except UnreadableStatusError:
            raise
        except JobError as error:
            raise FlinkError(404, f"Job {job_id} not found", error) from None
        return ok({"savepoints": [r.to_dict() for r in records]})

    async def registry_last_savepoints(self, request: Request) -> Response:
        """The last savepoint record of each job named in ``?jobs=`` (comma-separated JobIDs)."""
        given = [j for j in request.query_params.get("jobs", "").lower().split(",") if j]
        bad = [j for j in given if not is_job_id(j)]
        if bad:
            raise FlinkError(400, f"{bad[0][:64]!r} is not a JobID.")
        found = await run_in_threadpool(self.client.last_savepoints, given)
        return ok({"last-savepoints": {j: r.to_dict() if r else None for j, r in found.items()}})

    def routes(self) -> list[Route]:
        """flinkish's routes for its CLI, under ``/flinkish/registry/``."""
        return [
            route(m.REGISTRY_JOBS, self.registry_jobs),
            route(m.REGISTRY_JOB, self.registry_job),
            route(m.CONTROL_ANSWER, self.control_answer),
            route(m.CONTROL_FORGET, self.control_forget),
            route(m.CONTROL_WITHDRAW, self.control_withdraw),
            route(m.REGISTRY_LOG, self.registry_log),
            route(m.REGISTRY_JOB_SAVEPOINTS, self.registry_job_savepoints),
            route(m.REGISTRY_SAVEPOINTS, self.registry_savepoints),
            route(m.LAST_SAVEPOINTS, self.registry_last_savepoints),
        ]
