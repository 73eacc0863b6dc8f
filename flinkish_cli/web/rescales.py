"""Rescales over REST: Flink's adaptive scheduler routes, from the job's rescale history.

- ``GET /jobs/:jobid/resource-requirements``: each query (a vertex) with the job's
  parallelism as its upper bound (Flink's ``{"<vertex id>": {"parallelism":
  {"lowerBound": 1, "upperBound": N}}}``).
- ``PUT /jobs/:jobid/resource-requirements``: Flink's way to rescale a running job by hand
  (and the Flink Kubernetes Operator's autoscaler's). A flinkish job has one parallelism,
  so the largest upper bound asked for is the job's new parallelism; the job is rescaled in
  place through the job client (the same JobID: a savepoint, the state repartitioned, the
  driver restarted at the new parallelism). Answered at once, as Flink answers (200), with
  the rescale's trigger id as ``request-id``; no request waits for the job.
  ``GET /jobs/:jobid/resource-requirements/:triggerid`` polls it as Flink's triggers are
  polled: IN_PROGRESS, then COMPLETED with the rescale's savepoint once the old driver has
  stopped with it (or the job's refusal as an error); the rescale then goes on, and the
  history says how it ended. Refused (403) when ``web.rescale.enable`` or
  ``web.cancel.enable`` is false: a rescale changes the job.
- ``GET /flinkish/registry/jobs/:jobid/rescales``: the history as the registry holds it, for
  flinkish's CLI through the endpoint (``list --output json``) and the dashboard's
  Autoscaler tab.
- ``GET /jobs/:jobid/rescales/history``, ``/overview``, ``/summary`` and
  ``/details/:rescaleuuid``: Flink 2.3's rescale history (FLIP-495), one entry per record
  of :mod:`flinkish_cli.registry.rescales`, with flinkish's own fields (from, to, the
  reason and the figures of the decision) under ``flinkish``. A decision recorded but not
  applied (metrics-only) is Flink's IGNORED; a rescale rolled back is FAILED.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.client.base import is_trigger_id
from flinkish_cli.client.jobs import JobClient
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.rest import messages as m
from flinkish_cli.rest.bodies import AsynchronousOperationResult, RescaleInfo, TriggerResponse
from flinkish_cli.web import parsing
from flinkish_cli.web.flink_checkpoints import stats_summary
from flinkish_cli.web.flink_json import vertex_id
from flinkish_cli.web.replies import JSON_TYPE, FlinkError, ok, route
from flinkish_cli.web.settings import WebSettings

#: Flink's terminal states of a rescale, for each outcome (None: not ended).
TERMINAL = {
    Outcome.PENDING: None,
    Outcome.IN_PROGRESS: None,
    Outcome.COMPLETED: "COMPLETED",
    Outcome.ROLLED_BACK: "FAILED",
    Outcome.FAILED: "FAILED",
    Outcome.NOT_APPLIED: "IGNORED",
}


def details(status: JobStatus, record: RescaleRecord, detailed: bool) -> dict[str, Any]:
    """One record as Flink's ``JobRescaleDetails`` (vertices only when ``detailed``)."""
    vertices = {}
    if detailed:
        for query in status.queries:
            vertex = vertex_id(status.job_id, query)
            vertices[vertex] = {
                "jobVertexId": vertex,
                "jobVertexName": query,
                "desiredParallelism": record.to_parallelism,
                "sufficientParallelism": 1,
                "preRescaleParallelism": record.from_parallelism,
                "postRescaleParallelism": (
                    record.to_parallelism
                    if record.outcome is Outcome.COMPLETED
                    else record.from_parallelism
                ),
            }
    return {
        "rescaleUuid": record.id,
        "resourceRequirementsUuid": record.id,
        "rescaleAttemptId": 1,
        "vertices": vertices,
        "slots": {},
        "schedulerStates": [],
        "startTimestampInMillis": record.time,
        "endTimestampInMillis": record.end_time,
        "terminalState": TERMINAL[record.outcome],
        "triggerCause": "UPDATE_REQUIREMENT",
        "terminatedReason": record.outcome.value if record.outcome.final else None,
        "flinkish": {
            "from": record.from_parallelism,
            "to": record.to_parallelism,
            "direction": record.direction,
            "mode": record.mode,
            "outcome": record.outcome.value,
            "reason": record.reason,
            "figures": record.figures,
        },
    }


def _counts(records: list[RescaleRecord]) -> dict[str, int]:
    states = [TERMINAL[r.outcome] for r in records]
    return {
        "ignored": states.count("IGNORED"),
        "inProgress": states.count(None),
        "completed": states.count("COMPLETED"),
        "failed": states.count("FAILED"),
    }


def overview(status: JobStatus, history: RescaleHistory) -> dict[str, Any]:
    """Flink's ``JobRescalesOverview``: the counts and the latest of each end."""

    def latest(state: str) -> dict[str, Any] | None:
        found = [r for r in history.rescales if TERMINAL[r.outcome] == state]
        return details(status, found[-1], False) if found else None

    return {
        "rescalesCounts": _counts(history.rescales),
        "latest": {key.lower(): latest(key) for key in ("COMPLETED", "FAILED", "IGNORED")},
    }


def summary(history: RescaleHistory) -> dict[str, Any]:
    """Flink's ``JobRescalesSummary``: the counts and the durations of the ended ones."""

    def durations(*states: str) -> list[int]:
        return [
            r.end_time - r.time
            for r in history.rescales
            if r.end_time is not None and TERMINAL[r.outcome] in states
        ]

    return {
        "rescalesCounts": _counts(history.rescales),
        "rescalesDurationStatsInMillis": stats_summary(durations("COMPLETED", "FAILED", "IGNORED")),
        "completedRescalesDurationStatsInMillis": stats_summary(durations("COMPLETED")),
        "ignoredRescalesDurationStatsInMillis": stats_summary(durations("IGNORED")),
        "failedRescalesDurationStatsInMillis": stats_summary(durations("FAILED")),
    }


def requirements(status: JobStatus) -> dict[str, Any]:
    """Flink's ``JobResourceRequirementsBody``: each query's vertex and the parallelism."""
    parallelism = int(status.parallelism or 1)
    return {
        vertex_id(status.job_id, query): {
            "parallelism": {"lowerBound": 1, "upperBound": parallelism}
        }
        for query in status.queries
    }


def requested_parallelism(data: dict[str, Any]) -> int:
    """The job's parallelism a resource-requirements body asks for: its largest upper
    bound; Flink's 400 when the body is not one."""
    bounds = []
    for value in data.values():
        parallelism = value.get("parallelism") if isinstance(value, dict) else None
        upper = parallelism.get("upperBound") if isinstance(parallelism, dict) else None
        if not isinstance(upper, int) or isinstance(upper, bool) or upper < 1:
            raise FlinkError(
                400,
                "Request did not match expected format JobResourceRequirementsBody: each "
                'vertex needs {"parallelism": {"lowerBound": n, "upperBound": m}} with m ≥ 1.',
            )
        bounds.append(upper)
    if not bounds:
        raise FlinkError(400, "The resource requirements name no vertex.")
    return max(bounds)


class RescaleRoutes:
    """The rescale routes over one job client."""

    def __init__(self, client: JobClient, settings: WebSettings) -> None:
        self.client = client
        self.settings = settings

    def routes(self) -> list[Route]:
        return [
            route(m.RESOURCE_REQUIREMENTS, self.get_requirements),
            route(m.RESOURCE_REQUIREMENTS_UPDATE, self.put_requirements),
            route(m.RESOURCE_REQUIREMENTS_STATUS, self.rescale_status),
            route(m.RESCALES_HISTORY, self.history),
            route(m.RESCALES_OVERVIEW, self.overview),
            route(m.RESCALES_SUMMARY, self.summary),
            route(m.RESCALE_DETAILS, self.details),
            route(m.REGISTRY_JOB_RESCALES, self.document),
        ]

    async def _status(self, job_id: str) -> JobStatus:
        try:
            return await run_in_threadpool(self.client.get, job_id)
        except JobError as error:
            raise FlinkError(404, f"Job {job_id} not found", error) from None

    async def _job(self, request: Request) -> tuple[JobStatus, RescaleHistory]:
        status = await self._status(parsing.job_id(request))
        history = await run_in_threadpool(self.client.rescale_history, status.job_id)
        return status, history

    async def get_requirements(self, request: Request) -> Response:
        """The job's resource requirements: its parallelism as Flink's lower and upper bound."""
        status, _ = await self._job(request)
        return ok(requirements(status))

    async def put_requirements(self, request: Request) -> Response:
        """Rescales the job to the largest upper bound the requirements sent ask for
        (through a savepoint)."""
        job_id = parsing.job_id(request)
        if not self.settings.rescale_allowed:
            key = "web.cancel.enable" if not self.settings.cancel_enabled else "web.rescale.enable"
            raise FlinkError(403, f"Rescaling jobs is disabled ({key} is false on this server).")
        raw = await parsing.json_object(request, "JobResourceRequirementsBody")
        parallelism = requested_parallelism(raw)
        ttl = parsing.request_timeout(request)
        await self._status(job_id)  # a job that is not there: 404, as Flink answers
        reason = "Resource requirements set over REST."
        try:
            trigger = await run_in_threadpool(
                lambda: self.client.rescale_detached(job_id, parallelism, reason, ttl=ttl)
            )
        except UsageError as error:
            raise FlinkError(400, error.message, error) from None
        except JobError as error:
            raise FlinkError(409, error.message, error) from None
        return ok(TriggerResponse(trigger).to_wire())

    async def rescale_status(self, request: Request) -> Response:
        """Where a rescale asked for by :meth:`put_requirements` stands."""
        job_id, trigger = parsing.job_id(request), request.path_params["triggerid"].lower()
        unknown = f"There is no rescale operation with triggerId={trigger[:64]} for job {job_id}."
        if not is_trigger_id(trigger):
            raise FlinkError(404, unknown)
        await self._status(job_id)
        result = await run_in_threadpool(self.client.trigger_result, job_id, trigger)
        if result is None:
            raise FlinkError(404, unknown)
        if not result.done:
            return ok(AsynchronousOperationResult.in_progress().to_wire())
        if not result.ok:
            raise FlinkError(500, f"The rescale of job {job_id} failed: {result.error}")
        savepoint = str(result.result.get("savepoint") or "")
        return ok(AsynchronousOperationResult.completed(RescaleInfo(savepoint)).to_wire())

    async def document(self, request: Request) -> Response:
        """The history as the registry holds it (for flinkish's CLI and dashboard)."""
        _, history = await self._job(request)
        return Response(history.to_json(), media_type=JSON_TYPE)

    async def history(self, request: Request) -> Response:
        """The job's rescales, newest first."""
        status, history = await self._job(request)
        return ok([details(status, r, False) for r in reversed(history.rescales)])

    async def overview(self, request: Request) -> Response:
        """The job's rescale overview: counts, and its latest completed, failed and
        ignored rescale."""
        status, history = await self._job(request)
        return ok(overview(status, history))

    async def summary(self, request: Request) -> Response:
        """The job's rescale summary: counts and durations of its rescales."""
        _, history = await self._job(request)
        return ok(summary(history))

    async def details(self, request: Request) -> Response:
        """One rescale of the job, as Flink's ``JobRescaleDetails``, with its vertices."""
        status, history = await self._job(request)
        uuid = request.path_params["rescaleuuid"]
        record = history.find(uuid)
        if record is None:
            raise FlinkError(404, f"Rescale {uuid[:64]} not found in job {status.job_id}.")
        return ok(details(status, record, True))
