"""The routes of ``flinkish web``: Flink's REST API (v1, with and without the ``/v1`` prefix,
as Flink's own server serves it) and ``/metrics``.

Each handler parses the request, asks the :class:`~flinkish_cli.client.jobs.JobClient` and
presents the answer with :mod:`.flink_json`. Errors are Flink's: ``{"errors": [...]}`` with
Flink's status codes (404 for an unknown path, method, job or trigger; 400 for a request body
that does not match; 413 for one too large; 409 when the job cannot do it now) and never a
traceback. Every request but ``/metrics``' scrape by an authorised Prometheus needs the bearer
token when one is configured.

Deviation from Flink, deliberate: a trigger (savepoint, stop, checkpoint) that failed is
answered with ``{"errors": [cause]}`` (status 500) instead of a COMPLETED status holding a
Java-serialised exception, which only a JVM could produce; Flink's CLI then prints the cause
at once instead of retrying for a minute.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flinkish_cli.client.jobs import JobClient, TriggerResult, checkpoint_of, is_trigger_id
from flinkish_cli.errors import FlinkishError, JobError, UsageError
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.submission.endpoint import CLUSTER_PATH
from flinkish_cli.web import dashboard, flink_json

log = logging.getLogger("flinkish.web")

JSON_TYPE = "application/json; charset=UTF-8"
FORMAT_TYPES = ("CANONICAL", "NATIVE")
CHECKPOINT_TYPES = ("CONFIGURED", "FULL", "INCREMENTAL")


@dataclass(frozen=True)
class WebSettings:
    """What the endpoint is allowed and how it presents (from the configuration)."""

    version: str
    token: str | None = None
    #: the Connect address of the session cluster this endpoint fronts (``sc://host:port``)
    session_cluster: str | None = None
    cancel_enabled: bool = True
    history_size: int = 10
    refresh_ms: int = 3000
    max_body: int = 1 << 20

    @classmethod
    def from_config(cls, config: Any, version: str) -> WebSettings:
        token = config.get("flinkish.web.auth-token")
        session = config.get("flinkish.web.session-cluster")
        return cls(
            version=version,
            token=str(token) if token else None,
            session_cluster=str(session) if session else None,
            cancel_enabled=bool(config.get("web.cancel.enable")),
            history_size=int(config.get("web.checkpoints.history")),
            refresh_ms=int(config.get("web.refresh-interval").total_seconds() * 1000),
            max_body=int(config.get("rest.server.max-content-length")),
        )


class FlinkError(Exception):
    """An error answered as Flink's ``{"errors": [message]}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def errors(status: int, *messages: str, headers: dict[str, str] | None = None) -> Response:
    """Flink's error body: exactly one key, ``errors``."""
    return JSONResponse({"errors": list(messages)}, status, headers, media_type=JSON_TYPE)


def ok(document: Any, status: int = 200) -> Response:
    return JSONResponse(document, status, media_type=JSON_TYPE)


# -- request parsing ------------------------------------------------------------------------
def _job_id(request: Request) -> str:
    value = request.path_params["jobid"]
    if not is_job_id(value):
        raise FlinkError(
            400,
            "Bad request, could not parse parameters: Cannot resolve path parameter (jobid) "
            f'from value "{value[:64]}".',
        )
    return value.lower()


async def _body(request: Request, allowed: dict[str, tuple[type, ...]], name: str) -> dict:
    """The request's JSON object, each field of an allowed type (null allowed); Flink's
    400 otherwise. An empty body is ``{}``, as Flink's clients send for no body."""
    raw = await request.body()
    mismatch = FlinkError(400, f"Request did not match expected format {name}.")
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise mismatch from None
    if not isinstance(data, dict) or set(data) - set(allowed):
        raise mismatch
    for key, value in data.items():
        if value is not None and (
            not isinstance(value, allowed[key])
            or (isinstance(value, bool) and bool not in allowed[key])
        ):
            raise mismatch
    return data


def _trigger_id(data: dict, key: str = "triggerId") -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not is_trigger_id(value.lower()):
        raise FlinkError(400, f"The {key} {value[:64]!r} is not 32 hexadecimal digits.")
    return value.lower()


async def _savepoint_body(
    request: Request, allowed: dict[str, tuple[type, ...]], name: str
) -> tuple[dict, str | None, str]:
    """A savepoint-taking request's body (stop, savepoint): its fields, its trigger id (the
    caller's, if any) and its format type."""
    data = await _body(request, {**allowed, "triggerId": (str,), "formatType": (str,)}, name)
    return data, _trigger_id(data), _choice(data, "formatType", FORMAT_TYPES, "CANONICAL")


def _choice(data: dict, key: str, choices: tuple[str, ...], default: str) -> str:
    value = (data.get(key) or default).upper()
    if value not in choices:
        raise FlinkError(400, f"{key} must be one of {', '.join(choices)}, not {value[:32]!r}.")
    return value


# -- the endpoint ---------------------------------------------------------------------------
class FlinkRestApi:
    """Flink's REST API over one job client."""

    def __init__(self, client: JobClient, settings: WebSettings) -> None:
        self.client = client
        self.settings = settings

    async def _status(self, job_id: str) -> JobStatus:
        status = await run_in_threadpool(self.client.registry.find, job_id)
        if status is None:
            raise FlinkError(404, f"Job {job_id} not found")
        return status

    async def _jobs(self) -> list[JobStatus]:
        jobs, _unreadable = await run_in_threadpool(self.client.list_jobs)
        return jobs

    # -- reading ---------------------------------------------------------------------------
    async def config(self, request: Request) -> Response:
        s = self.settings
        return ok(flink_json.dashboard_config(s.version, s.refresh_ms, s.cancel_enabled))

    async def overview(self, request: Request) -> Response:
        return ok(flink_json.cluster_overview(await self._jobs(), self.settings.version))

    async def jobs(self, request: Request) -> Response:
        return ok(flink_json.job_ids(await self._jobs()))

    async def jobs_overview(self, request: Request) -> Response:
        return ok({"jobs": [flink_json.job_overview(s) for s in await self._jobs()]})

    async def job(self, request: Request) -> Response:
        return ok(flink_json.job_details(await self._status(_job_id(request))))

    async def job_status(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        return ok({"status": status.effective_state().value})

    async def job_config(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        conf = await run_in_threadpool(self.client.job_configuration, status.job_id)
        return ok(flink_json.job_config(status, conf))

    async def job_checkpoints(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        return ok(flink_json.checkpoints(status, self.settings.history_size))

    async def job_exceptions(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        limit = request.query_params.get("maxExceptions", "")
        size = int(limit) if limit.isdigit() else len(status.exceptions)
        return ok(flink_json.exceptions(status, size))

    # -- the dashboard's own documents (flinkish_cli.web.dashboard) ------------------------
    async def cluster(self, request: Request) -> Response:
        """Where ``flinkish run -m <this endpoint>`` sends a job (the client's side:
        :mod:`flinkish_cli.submission.endpoint`)."""
        return ok(dashboard.cluster(self.settings.session_cluster, self.settings.version))

    async def dashboard_jobs(self, request: Request) -> Response:
        jobs, unreadable = await run_in_threadpool(self.client.list_jobs)
        return ok(dashboard.job_rows(jobs, len(unreadable)))

    async def dashboard_series(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        kept = await run_in_threadpool(self.client.series, status)
        return ok(dashboard.series(status, kept))

    async def dashboard_savepoints(self, request: Request) -> Response:
        status = await self._status(_job_id(request))
        records = await run_in_threadpool(self.client.savepoint_history, status.job_id)
        return ok(dashboard.savepoints(records))

    # -- acting ----------------------------------------------------------------------------
    def _require_cancel(self) -> None:
        if not self.settings.cancel_enabled:
            raise FlinkError(403, "Cancelling and stopping jobs is disabled (web.cancel.enable).")

    async def _act(self, action: Callable[[], Any], job_id: str) -> Any:
        """Run a client action; its refusal as Flink's 409 (the job cannot, now)."""
        try:
            return await run_in_threadpool(action)
        except UsageError as error:
            raise FlinkError(400, error.message) from None
        except JobError as error:
            raise FlinkError(409, error.message) from None

    async def cancel(self, request: Request) -> Response:
        job_id = _job_id(request)
        mode = request.query_params.get("mode", "cancel").lower()
        if mode != "cancel":
            raise FlinkError(
                400,
                f'The termination mode "{mode[:16]}" is not supported: use cancel, or '
                "POST /jobs/:jobid/stop to stop with a savepoint.",
            )
        await request.body()
        self._require_cancel()
        status = await run_in_threadpool(self.client.registry.find, job_id)
        if status is None:
            raise FlinkError(404, "Job could not be found.")
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
        job_id = _job_id(request)
        allowed = {"targetDirectory": (str,), "drain": (bool,)}
        data, trigger, fmt = await _savepoint_body(request, allowed, "StopWithSavepointRequestBody")
        self._require_cancel()
        await self._status(job_id)
        tid = await self._act(
            lambda: self.client.stop_detached(
                job_id, data.get("targetDirectory"), bool(data.get("drain")), fmt,
                trigger_id=trigger,
            ),
            job_id,
        )  # fmt: skip
        return ok({"request-id": tid}, 202)

    async def savepoint(self, request: Request) -> Response:
        job_id = _job_id(request)
        allowed = {"target-directory": (str,), "cancel-job": (bool,)}
        data, trigger, fmt = await _savepoint_body(request, allowed, "SavepointTriggerRequestBody")
        target = data.get("target-directory")
        await self._status(job_id)
        if data.get("cancel-job"):
            self._require_cancel()
            tid = await self._act(
                lambda: self.client.stop_detached(
                    job_id, target, False, fmt, JobState.CANCELED, trigger
                ),
                job_id,
            )
        else:
            tid = await self._act(
                lambda: self.client.savepoint_detached(job_id, target, fmt, trigger), job_id
            )
        return ok({"request-id": tid}, 202)

    async def savepoint_status(self, request: Request) -> Response:
        _, result = await self._trigger_status(request, "savepoint")
        if result is None:
            return ok({"status": {"id": "IN_PROGRESS"}})
        return ok({"status": {"id": "COMPLETED"}, "operation": {"location": result["path"]}})

    async def checkpoint(self, request: Request) -> Response:
        job_id = _job_id(request)
        allowed = {"checkpointType": (str,), "triggerId": (str,)}
        data = await _body(request, allowed, "CheckpointTriggerRequestBody")
        trigger = _trigger_id(data)
        _choice(data, "checkpointType", CHECKPOINT_TYPES, "CONFIGURED")  # all are one here
        await self._status(job_id)
        tid = await self._act(lambda: self.client.checkpoint_detached(job_id, trigger), job_id)
        return ok({"request-id": tid}, 202)

    async def checkpoint_status(self, request: Request) -> Response:
        job_id, result = await self._trigger_status(request, "checkpoint")
        if result is None:
            return ok({"status": {"id": "IN_PROGRESS"}})
        done = checkpoint_of(job_id, result)
        return ok(
            {"status": {"id": "COMPLETED"}, "operation": {"checkpointId": done.checkpoint_id}}
        )

    async def _trigger_status(
        self, request: Request, kind: str
    ) -> tuple[str, dict[str, Any] | None]:
        """The job and its ``kind`` trigger's result (None while in progress); Flink's 404
        for an unknown trigger, a 500 with the cause when it failed."""
        job_id, trigger = _job_id(request), request.path_params["triggerid"].lower()
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
        data = await _body(request, {"savepoint-path": (str,)}, "SavepointDisposalRequest")
        path = data.get("savepoint-path")
        if not path:
            raise FlinkError(400, "Request did not match expected format SavepointDisposalRequest.")
        tid = await run_in_threadpool(self.client.dispose_detached, path)
        return ok({"request-id": tid})

    async def dispose_status(self, request: Request) -> Response:
        trigger = request.path_params["triggerid"].lower()
        unknown = f"Operation not found under key: {trigger[:64]}"
        result = None
        if is_trigger_id(trigger):
            result = await run_in_threadpool(self.client.disposal_result, trigger)
        if result is None:
            raise FlinkError(404, unknown)
        if not result.ok:
            raise FlinkError(500, f"Disposing of the savepoint failed: {result.error}")
        return ok({"status": {"id": "COMPLETED"}, "operation": {}})

    def routes(self) -> list[Route]:
        """Flink's paths (without the version prefix)."""
        return [
            Route("/config", self.config, methods=["GET"]),
            Route("/overview", self.overview, methods=["GET"]),
            Route("/jobs", self.jobs, methods=["GET"]),
            Route("/jobs/overview", self.jobs_overview, methods=["GET"]),
            Route("/jobs/{jobid}", self.job, methods=["GET"]),
            Route("/jobs/{jobid}", self.cancel, methods=["PATCH"]),
            Route("/jobs/{jobid}/status", self.job_status, methods=["GET"]),
            Route("/jobs/{jobid}/config", self.job_config, methods=["GET"]),
            Route("/jobs/{jobid}/checkpoints", self.job_checkpoints, methods=["GET"]),
            Route("/jobs/{jobid}/checkpoints", self.checkpoint, methods=["POST"]),
            Route("/jobs/{jobid}/checkpoints/{triggerid}", self.checkpoint_status, methods=["GET"]),
            Route("/jobs/{jobid}/exceptions", self.job_exceptions, methods=["GET"]),
            Route("/jobs/{jobid}/stop", self.stop, methods=["POST"]),
            Route("/jobs/{jobid}/savepoints", self.savepoint, methods=["POST"]),
            Route("/jobs/{jobid}/savepoints/{triggerid}", self.savepoint_status, methods=["GET"]),
            Route("/savepoint-disposal", self.dispose, methods=["POST"]),
            Route("/savepoint-disposal/{triggerid}", self.dispose_status, methods=["GET"]),
        ]

    def dashboard_routes(self) -> list[Route]:
        """The dashboard's own documents, under ``/flinkish/``."""
        return [
            Route(CLUSTER_PATH, self.cluster, methods=["GET"]),
            Route("/flinkish/jobs", self.dashboard_jobs, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/series", self.dashboard_series, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/savepoints", self.dashboard_savepoints, methods=["GET"]),
        ]


class Guard:
    """ASGI middleware in front of every route: the bearer token (when configured) and the
    size limit of request bodies (``rest.server.max-content-length``)."""

    def __init__(self, app: ASGIApp, settings: WebSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        token = self.settings.token
        public = dashboard.is_public(scope.get("path", ""))
        if (
            token is not None
            and not public
            and not _authorised(headers.get("authorization", b""), token)
        ):
            response = errors(
                401,
                "Unauthorized: this endpoint needs 'Authorization: Bearer <token>' "
                "(flinkish.web.auth-token).",
                headers={"WWW-Authenticate": 'Bearer realm="flinkish"'},
            )
            await response(scope, receive, send)
            return
        limit = self.settings.max_body
        length = headers.get("content-length", b"0")
        if not length.isdigit() or int(length) > limit:
            await _too_large(limit)(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise HTTPException(413)
            return message

        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except Exception as error:  # answered already by the app's handler, or answered here
            log.error("Internal error on %s: %r", scope.get("path", "?"), error)
            if not started:
                await errors(500, "Internal server error.")(scope, receive, send)


def _authorised(header: bytes, token: str) -> bool:
    scheme, _, given = header.decode("latin-1").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def _too_large(limit: int) -> Response:
    return errors(
        413,
        f"The request body is larger than {limit} bytes. Try to raise "
        "[rest.server.max-content-length].",
    )


def create_app(client: JobClient, settings: WebSettings) -> ASGIApp:
    """The ASGI application of ``flinkish web``."""
    from starlette.responses import FileResponse
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    from flinkish_cli.web.metrics import metrics_route

    api = FlinkRestApi(client, settings)

    async def page(request: Request) -> Response:
        return FileResponse(dashboard.ASSETS / "index.html", headers={"Cache-Control": "no-cache"})

    routes = [
        Mount("/v1", routes=api.routes()),
        *api.routes(),
        *api.dashboard_routes(),
        metrics_route(client),
        Route("/", page, methods=["GET"]),
        Route("/index.html", page, methods=["GET"]),
        Mount("/assets", app=StaticFiles(directory=dashboard.ASSETS), name="assets"),
    ]

    async def flink_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, FlinkError)
        return errors(error.status, error.message)

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 413:
            return _too_large(settings.max_body)
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if error.status_code in (404, 405):  # Flink's router answers a wrong method so too
            return errors(404, f"Not found: {target[:256]}")
        return errors(error.status_code, str(error.detail))

    async def failure(request: Request, error: Exception) -> Response:
        if isinstance(error, FlinkishError):
            return errors(500, error.message)
        return errors(500, "Internal server error.")

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        FlinkError: flink_error,
        HTTPException: http_error,
        Exception: failure,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    return Guard(app, settings)
