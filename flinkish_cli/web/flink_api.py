"""The handlers of Flink's REST API (v1): each parses its request (:mod:`.parsing`), asks the
:class:`~flinkish_cli.client.jobs.JobClient` (the one client the CLI also uses) and presents
the answer with :mod:`.flink_json`. Refusals are :class:`~.replies.FlinkError`, answered as
Flink's errors, with the job client's own error beside them whenever one is behind the
refusal.

Deviation from Flink, deliberate: a trigger (savepoint, stop, checkpoint) that failed is
answered with ``{"errors": [cause]}`` (status 500) instead of a COMPLETED status holding a
Java-serialised exception, which only a JVM could produce; Flink's CLI then prints the cause
at once instead of retrying for a minute.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.client.base import TriggerResult, checkpoint_of, is_trigger_id
from flinkish_cli.registry.status import JobState
from flinkish_cli.rest import messages as m
from flinkish_cli.rest.bodies import (
    AsynchronousOperationInfo,
    AsynchronousOperationResult,
    BodyMismatch,
    CheckpointInfo,
    CheckpointTriggerRequestBody,
    SavepointDisposalRequest,
    SavepointInfo,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
    TriggerResponse,
)
from flinkish_cli.web import flink_checkpoints, flink_cluster, flink_json, parsing
from flinkish_cli.web.handling import Handlers
from flinkish_cli.web.replies import FlinkError, ok, route


class FlinkApi(Handlers):
    """Flink's REST API over one job client."""

    async def config(self, request: Request) -> Response:
        """The dashboard's configuration: flinkish's version, the refresh interval and whether jobs
        may be cancelled."""
        s = self.settings
        return ok(
            flink_cluster.dashboard_config(
                s.version, s.refresh_ms, s.cancel_enabled, s.rescale_allowed
            )
        )

    async def overview(self, request: Request) -> Response:
        """The cluster overview: the jobs by state, and the task managers and slots of the jobs that
        are not over."""
        jobs = await self._jobs()
        jvms = await run_in_threadpool(self.client.jvm_records, jobs)
        return ok(flink_cluster.cluster_overview(jobs, self.settings.version, jvms))

    async def jobs(self, request: Request) -> Response:
        """Every job's JobID and state."""
        return ok(flink_json.job_ids(await self._jobs()))

    async def jobs_overview(self, request: Request) -> Response:
        """Every job's overview, as Flink's ``/jobs/overview``: name, state, times, tasks."""
        return ok({"jobs": [flink_json.job_overview(s) for s in await self._jobs()]})

    async def job(self, request: Request) -> Response:
        """The job's details: its state, times, vertices (one per query) and last savepoint."""
        status = await self._status(parsing.job_id(request))
        savepoint = await run_in_threadpool(self.client.last_savepoint, status.job_id)
        graph = await run_in_threadpool(self.client.graph, status.job_id)
        return ok(flink_json.job_details(status, last_savepoint=savepoint, graph=graph))

    async def job_plan(self, request: Request) -> Response:
        """The job's plan: one node per query, with its operators."""
        status = await self._status(parsing.job_id(request))
        graph = await run_in_threadpool(self.client.graph, status.job_id)
        return ok({"plan": flink_json.plan(status, graph)})

    async def job_status(self, request: Request) -> Response:
        """The job's state."""
        status = await self._status(parsing.job_id(request))
        return ok({"status": status.effective_state().value})

    async def job_config(self, request: Request) -> Response:
        """The job's configuration, as Flink's ``/jobs/:jobid/config``: its name and the
        configuration it runs with."""
        status = await self._status(parsing.job_id(request))
        conf = await run_in_threadpool(self.client.job_configuration, status.job_id)
        return ok(flink_json.job_config(status, conf))

    async def job_checkpoints(self, request: Request) -> Response:
        """The job's checkpoint statistics: counts, the latest completed checkpoint, savepoint
        and restore (each with its sources' offsets, Kafka's per topic-partition), and the
        history of micro-batches."""
        status = await self._status(parsing.job_id(request))
        savepoint = await run_in_threadpool(self.client.last_savepoint, status.job_id)
        history = self.settings.history_size
        paths = {p for p in (savepoint.path if savepoint else None, status.restored_from) if p}
        held = {}
        for path in paths:
            offsets = await run_in_threadpool(self.serving.savepoint_offsets, path)
            if offsets is not None:
                held[path] = offsets
        return ok(
            flink_checkpoints.checkpoints(
                status, history, last_savepoint=savepoint, savepoint_offsets=held
            )
        )

    async def job_exceptions(self, request: Request) -> Response:
        """The job's exception history (``?maxExceptions=`` the newest only)."""
        status = await self._status(parsing.job_id(request))
        limit = request.query_params.get("maxExceptions", "")
        size = int(limit) if limit.isdigit() else len(status.exceptions)
        return ok(flink_checkpoints.exceptions(status, size))

    async def cancel(self, request: Request) -> Response:
        """Cancels the job (``?mode=cancel``, the only mode); 202 once the request is written."""
        job_id = parsing.job_id(request)
        mode = request.query_params.get("mode", "cancel").lower()
        if mode != "cancel":
            raise FlinkError(
                400,
                f'The termination mode "{mode[:16]}" is not supported: use cancel, or '
                "POST /jobs/:jobid/stop to stop with a savepoint.",
            )
        await request.body()
        self._require_cancel()
        status = await self._status(job_id, "Job could not be found.")
        state = status.effective_state()
        if state is JobState.CANCELED:
            return ok({}, 202)
        if state.is_terminal:
            raise FlinkError(
                409,
                "Job cancellation failed because the job has already reached another "
                f"terminal state ({state.value}).",
            )
        await self._act(lambda: self.client.cancel(job_id, wait=False), job_id)
        return ok({}, 202)

    async def stop(self, request: Request) -> Response:
        """Stops the job with a savepoint (``targetDirectory``, ``drain``); its trigger id."""
        job_id = parsing.job_id(request)
        data = await parsing.body(request, StopWithSavepointRequestBody)
        trigger, fmt = parsing.savepoint_request(data)
        ttl = parsing.request_timeout(request)
        self._require_cancel()
        await self._status(job_id)
        tid = await self._act(
            lambda: self.client.stop_detached(
                job_id, data.target_directory, bool(data.drain), fmt, trigger_id=trigger, ttl=ttl
            ),
            job_id,
        )
        return ok(TriggerResponse(tid).to_wire(), 202)

    async def savepoint(self, request: Request) -> Response:
        """Triggers a savepoint (``target-directory``; ``cancel-job`` cancels the job after it); its
        trigger id."""
        job_id = parsing.job_id(request)
        data = await parsing.body(request, SavepointTriggerRequestBody)
        trigger, fmt = parsing.savepoint_request(data)
        target = data.target_directory
        ttl = parsing.request_timeout(request)
        await self._status(job_id)
        if data.cancel_job:
            self._require_cancel()
            tid = await self._act(
                lambda: self.client.stop_detached(
                    job_id, target, False, fmt, JobState.CANCELED, trigger, ttl
                ),
                job_id,
            )
        else:
            tid = await self._act(
                lambda: self.client.savepoint_detached(job_id, target, fmt, trigger, ttl),
                job_id,
            )
        return ok(TriggerResponse(tid).to_wire(), 202)

    async def savepoint_status(self, request: Request) -> Response:
        """The savepoint trigger's status: IN_PROGRESS, or COMPLETED with the savepoint's
        location."""
        _, result = await self._trigger_status(request, "savepoint")
        if result is None:
            return ok(AsynchronousOperationResult.in_progress().to_wire())
        done = AsynchronousOperationResult.completed(SavepointInfo(location=result["path"]))
        return ok(done.to_wire())

    async def checkpoint(self, request: Request) -> Response:
        """Triggers a checkpoint (every query commits its next micro-batch); its trigger id."""
        job_id = parsing.job_id(request)
        data = await parsing.body(request, CheckpointTriggerRequestBody)
        trigger = parsing.trigger_id(data)
        parsing.choice(data, "checkpoint_type", parsing.CHECKPOINT_TYPES)  # all are one here
        ttl = parsing.request_timeout(request)
        await self._status(job_id)
        tid = await self._act(lambda: self.client.checkpoint_detached(job_id, trigger, ttl), job_id)
        return ok(TriggerResponse(tid).to_wire(), 202)

    async def checkpoint_status(self, request: Request) -> Response:
        """The checkpoint trigger's status: IN_PROGRESS, or COMPLETED with the checkpoint id."""
        job_id, result = await self._trigger_status(request, "checkpoint")
        if result is None:
            return ok(AsynchronousOperationResult.in_progress().to_wire())
        info = CheckpointInfo(checkpoint_id=checkpoint_of(job_id, result).checkpoint_id)
        return ok(AsynchronousOperationResult.completed(info).to_wire())

    async def _trigger_status(
        self, request: Request, kind: str
    ) -> tuple[str, dict[str, Any] | None]:
        """The job and its ``kind`` trigger's result (None while in progress); Flink's 404
        for an unknown trigger, a 500 with the cause when it failed."""
        job_id, trigger = parsing.job_id(request), request.path_params["triggerid"].lower()
        unknown = f"There is no {kind} operation with triggerId={trigger[:64]} for job {job_id}."
        result = await self._trigger(job_id, trigger, unknown)
        if not result.done:
            return job_id, None
        if not result.ok:
            raise FlinkError(500, f"The {kind} of job {job_id} failed: {result.error}")
        return job_id, result.result

    async def _trigger(self, job_id: str, trigger: str, unknown: str) -> TriggerResult:
        if not is_trigger_id(trigger):
            raise FlinkError(404, unknown)
        await self._status(job_id)
        result = await run_in_threadpool(self.client.trigger_result, job_id, trigger)
        if result is None:
            raise FlinkError(404, unknown)
        return result

    async def dispose(self, request: Request) -> Response:
        """Disposes of a savepoint (``savepoint-path``); its trigger id."""
        data = await parsing.body(request, SavepointDisposalRequest)
        path = data.savepoint_path
        if not path:
            raise FlinkError(400, str(BodyMismatch(SavepointDisposalRequest.NAME)))
        tid = await run_in_threadpool(self.client.dispose_detached, path)
        return ok(TriggerResponse(tid).to_wire())

    async def dispose_status(self, request: Request) -> Response:
        """The disposal's status: COMPLETED once the savepoint is gone."""
        trigger = request.path_params["triggerid"].lower()
        unknown = f"Operation not found under key: {trigger[:64]}"
        result = None
        if is_trigger_id(trigger):
            result = await run_in_threadpool(self.client.disposal_result, trigger)
        if result is None:
            raise FlinkError(404, unknown)
        if not result.ok:
            message = f"Disposing of the savepoint failed: {result.error}"
            raise FlinkError(500, message, result.failure)
        return ok(AsynchronousOperationResult.completed(AsynchronousOperationInfo()).to_wire())

    def routes(self) -> list[Route]:
        """Flink's paths (without the version prefix)."""
        return [
            route(m.DASHBOARD_CONFIG, self.config),
            route(m.CLUSTER_OVERVIEW, self.overview),
            route(m.JOB_IDS, self.jobs),
            route(m.JOBS_OVERVIEW, self.jobs_overview),
            route(m.JOB_DETAILS, self.job),
            route(m.JOB_CANCEL, self.cancel),
            route(m.JOB_STATUS, self.job_status),
            route(m.JOB_CONFIG, self.job_config),
            route(m.JOB_PLAN, self.job_plan),
            route(m.CHECKPOINT_STATISTICS, self.job_checkpoints),
            route(m.CHECKPOINT_TRIGGER, self.checkpoint),
            route(m.CHECKPOINT_STATUS, self.checkpoint_status),
            route(m.JOB_EXCEPTIONS, self.job_exceptions),
            route(m.STOP_WITH_SAVEPOINT, self.stop),
            route(m.SAVEPOINT_TRIGGER, self.savepoint),
            route(m.SAVEPOINT_STATUS, self.savepoint_status),
            route(m.SAVEPOINT_DISPOSAL, self.dispose),
            route(m.SAVEPOINT_DISPOSAL_STATUS, self.dispose_status),
        ]
