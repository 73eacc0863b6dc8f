"""The application of ``flinkish web``: Flink's REST API (v1, with and without the ``/v1``
prefix, as Flink's own server serves it), the dashboard's documents, ``/metrics`` and the
page, behind the guard (:mod:`.security`).

Routes live in :mod:`.flink_api`, :mod:`.rescales`, :mod:`.registry_api`, :mod:`.uploads`
and :mod:`.dashboard_api` (their paths are :mod:`flinkish_cli.rest.messages`'s); this module
puts them together and turns every exception into Flink's ``{"errors": [...]}``
(:mod:`.replies`), never a traceback. Its shutdown waits for the upgrades under way
(:mod:`.upgrades`); with ``web.submit.enable``, it removes old uploads now and then
(:func:`flinkish_cli.submission.upload.sweep`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.client.uploads import Uploads
from flinkish_cli.errors import FlinkishError
from flinkish_cli.rest import messages as m
from flinkish_cli.web import dashboard
from flinkish_cli.web.dashboard_api import DashboardApi
from flinkish_cli.web.flink_api import FlinkApi
from flinkish_cli.web.handling import Serving
from flinkish_cli.web.limits import Stopping
from flinkish_cli.web.registry_api import RegistryApi
from flinkish_cli.web.replies import FlinkError, errors
from flinkish_cli.web.rescales import RescaleRoutes
from flinkish_cli.web.security import BodyTimeout, Guard, too_large, too_slow
from flinkish_cli.web.settings import WebSettings
from flinkish_cli.web.uploads import UploadsApi

__all__ = ["WebSettings", "create_app"]

log = logging.getLogger("flinkish.web")


def create_app(
    client: JobClient,
    settings: WebSettings,
    stopping: Stopping | None = None,
    uploads: Uploads | None = None,
) -> ASGIApp:
    """The ASGI application of ``flinkish web``; ``stopping`` is set when the server is
    asked to stop (its long answers end then); ``uploads`` the services for programs sent
    here (by default without a warm runner)."""
    from starlette.responses import FileResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from flinkish_cli.web.metrics import metrics_route

    stopping = stopping or Stopping()
    serving = Serving(client, settings, stopping, uploads)
    flink = FlinkApi(serving).routes() + RescaleRoutes(client, settings).routes()

    async def page(request: Request) -> Response:
        """The dashboard's page."""
        return FileResponse(dashboard.ASSETS / "index.html")

    routes = [
        Mount(m.VERSION_PREFIX, routes=flink),
        *flink,
        *RegistryApi(serving).routes(),
        *UploadsApi(serving).routes(),
        *DashboardApi(serving).routes(),
        metrics_route(client),
        Route(m.PAGE.path, page, methods=[m.PAGE.method]),
        Route(m.PAGE_INDEX.path, page, methods=[m.PAGE_INDEX.method]),
        Mount(m.ASSETS, app=StaticFiles(directory=dashboard.ASSETS), name="assets"),
    ]

    async def flink_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, FlinkError)
        return errors(error.status, error.message, cause=error.cause)

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 413:
            return errors(413, too_large(settings.max_body))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if error.status_code in (404, 405):  # Flink's router answers a wrong method so too
            return errors(404, f"Not found: {target[:256]}")
        return errors(error.status_code, str(error.detail))

    async def failure(request: Request, error: Exception) -> Response:
        if isinstance(error, FlinkishError):
            return errors(500, error.message, cause=error)
        return errors(500, "Internal server error.")

    async def body_timeout(request: Request, error: Exception) -> Response:
        return errors(408, too_slow(settings.body_timeout), headers={"Connection": "close"})

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        FlinkError: flink_error,
        BodyTimeout: body_timeout,
        HTTPException: http_error,
        Exception: failure,
    }

    async def sweeping() -> None:
        """Uploads never run, and those of ended jobs, removed now and then."""
        every = min(settings.upload_timeout / 2, 30.0)
        while True:
            await asyncio.sleep(every)
            try:
                await run_in_threadpool(
                    serving.uploads.sweep_uploads, settings.upload_dir, settings.upload_timeout
                )
            except OSError as error:
                log.warning("Could not remove old uploads under %s: %s", settings.upload_dir, error)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(sweeping()) if settings.submit_enabled else None
        yield
        stopping.set()
        if sweeper is not None:
            sweeper.cancel()
        await run_in_threadpool(serving.upgrades.wait)  # none left half done by a stop

    application = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    return Guard(application, settings)
