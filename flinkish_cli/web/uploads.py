"""The handlers of programs sent to ``flinkish web`` (only with ``web.submit.enable``): an
upload kept privately, its run on the session cluster, and ``flinkish upgrade`` carried out
here with it, its events streamed back (:mod:`.upgrades`)."""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from flinkish_cli.rest import messages as m
from flinkish_cli.rest.bodies import JarUpload
from flinkish_cli.web import parsing
from flinkish_cli.web.handling import Following, Handlers
from flinkish_cli.web.replies import FlinkError, ok, route


class UploadsApi(Handlers):
    """Programs sent to this server, over one job client."""

    def _require_submit(self) -> str:
        """The session cluster programs go to; Flink's 404 while uploads are off."""
        if not self.settings.submit_enabled:
            raise FlinkError(
                404, "Program uploads are disabled (web.submit.enable is false on this server)."
            )
        if not self.settings.session_cluster:
            raise FlinkError(404, "This flinkish web fronts no session cluster to run programs.")
        return self.settings.session_cluster

    async def upload_program(self, request: Request) -> Response:
        """``POST /flinkish/jars/upload``: the program's zip, kept privately; its id."""
        self._require_submit()
        data = await parsing.body(request, JarUpload)
        try:
            archive = base64.b64decode(data.archive or "", validate=True)
        except ValueError:
            raise FlinkError(400, "The upload's archive is not base64.") from None
        directory, keep = self.settings.upload_dir, self.settings.upload_timeout

        def upload() -> str:
            self.uploads.sweep_uploads(directory, keep)
            return self.uploads.upload_program(archive, directory)

        upload_id = await self._act(upload, "")
        return ok({"filename": upload_id, "status": "success"})

    async def run_program(self, request: Request) -> Response:
        """``POST /flinkish/jars/:id/run``: start the uploaded program as a session-cluster
        job with the configuration sent (never the server's); Flink's ``{"jobid": ...}``."""
        session = self._require_submit()
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise FlinkError(
                400, "Request did not match expected format JarRunRequestBody."
            ) from None
        upload_id = request.path_params["jarid"]
        job_id = await self._act(
            lambda: self.uploads.run_upload(self.settings.upload_dir, upload_id, body, session),
            "",
        )
        return ok({"jobid": job_id})

    async def upgrade_program(self, request: Request) -> Response:
        """``POST /flinkish/jars/:id/upgrade``: ``flinkish upgrade`` with the uploaded program,
        carried out here (:meth:`client.uploads.Uploads.upgrade`); its events as they happen
        (:mod:`.upgrades`). A request that cannot be read is refused before anything starts."""
        from flinkish_cli.web.upgrades import UpgradeStream

        session = self._require_submit()
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise FlinkError(400, "Request did not match expected format UpgradeRequest.") from None
        stream = UpgradeStream()
        upload_id = request.path_params["jarid"]
        slot = self.upgrade_answers.slot()  # the answer's lines are read on its threads
        slot.__enter__()
        try:
            upgrade = await self._act(
                lambda: self.uploads.upgrade(
                    self.settings.upload_dir, upload_id, body, session, stream
                ),
                "",
            )
        except BaseException:
            slot.__exit__(None, None, None)
            raise
        self.upgrades.start(stream, upgrade.run, f"upgrade of {upgrade.outcome.job_id}")
        lines = stream.lines()

        async def events() -> Any:
            while (line := await self.upgrade_answers.run(next, lines, None)) is not None:
                yield line

        async def ended() -> None:
            slot.__exit__(None, None, None)

        return Following(events(), ended, media_type="application/x-ndjson")

    def routes(self) -> list[Route]:
        """The program routes, under ``/flinkish/jars/``."""
        return [
            route(m.JAR_UPLOAD, self.upload_program),
            route(m.JAR_RUN, self.run_program),
            route(m.JAR_UPGRADE, self.upgrade_program),
        ]
