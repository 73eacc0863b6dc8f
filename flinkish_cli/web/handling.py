"""What every handler of ``flinkish web`` shares (:class:`Serving`: the job client, the
settings, the server's stopping, the pools of long requests, the upgrades under way) and
the helpers they all use (:class:`Handlers`: a job's status as Flink's 404, a client action
as Flink's 400 or 409); :class:`Following`, a streamed answer with an end.

The handlers themselves are split by audience: :mod:`.flink_api` (Flink's REST API),
:mod:`.dashboard_api` (the dashboard's documents), :mod:`.registry_api` (flinkish's own
routes for its CLI), :mod:`.uploads` (programs), :mod:`.rescales` (Flink's rescale routes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.client.uploads import Uploads
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.registry.status import JobStatus
from flinkish_cli.registry.store import UnreadableStatusError
from flinkish_cli.web.limits import LONG_ACTIONS, Pool, Stopping
from flinkish_cli.web.replies import FlinkError
from flinkish_cli.web.settings import WebSettings
from flinkish_cli.web.upgrades import UpgradesUnderWay


class Following(StreamingResponse):
    """A streamed answer with an end: ``ended()`` runs once it is over, however it ended
    (sent whole, its client gone, the server stopping)."""

    def __init__(self, content: Any, ended: Callable[[], Awaitable[None]], **kwargs: Any):
        super().__init__(content, **kwargs)
        self.ended = ended

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import anyio

        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.ended()


#: How many savepoints' source offsets are kept read (a job's last savepoint and the one it
#: was restored from, for a few hundred jobs).
SAVEPOINT_OFFSETS_KEPT = 512


class Serving:
    """What the handlers of one application share."""

    def __init__(
        self,
        client: JobClient,
        settings: WebSettings,
        stopping: Stopping | None = None,
        uploads: Uploads | None = None,
    ) -> None:
        self.client = client
        #: the services for programs sent here (``web.submit.enable``)
        self.uploads = uploads or Uploads(client)
        self.settings = settings
        self.stopping = stopping or Stopping()
        #: the upgrades carried out for the CLI (the server's shutdown waits for them)
        self.upgrades = UpgradesUnderWay()
        #: follows of logs, and actions that wait (:mod:`.limits`): threads of their own
        self.follows = Pool("log follows", settings.max_follows, "flinkish.web.max-follows")
        self.waits = Pool("actions that wait for a job or start a program", LONG_ACTIONS)
        self.upgrade_answers = Pool("upgrades streaming their events", LONG_ACTIONS)
        #: savepoint path -> each query's source offsets in it (:meth:`savepoint_offsets`)
        self._offsets: dict[str, dict[str, list[Any]] | None] = {}

    def savepoint_offsets(self, path: str) -> dict[str, list[Any]] | None:
        """Each query's source offsets in the savepoint (or checkpoint) at ``path``, from its
        manifest (read once: a savepoint does not change); None when it cannot be read."""
        if path not in self._offsets:
            try:
                info = self.client.savepoint_info(path, rows=False)
                found: dict[str, list[Any]] | None = {
                    q["name"]: q["source-offsets"] for q in info["queries"]
                }
            except Exception:  # gone, unreadable, not a savepoint: no offsets shown
                found = None
            if len(self._offsets) >= SAVEPOINT_OFFSETS_KEPT:
                self._offsets.pop(next(iter(self._offsets)))
            self._offsets[path] = found
        return self._offsets[path]


class Handlers:
    """The base of each audience's handlers: what they share, and their common helpers."""

    def __init__(self, serving: Serving) -> None:
        self.serving = serving
        self.client = serving.client
        self.settings = serving.settings
        self.stopping = serving.stopping
        self.uploads = serving.uploads
        self.upgrades = serving.upgrades
        self.follows = serving.follows
        self.waits = serving.waits
        self.upgrade_answers = serving.upgrade_answers

    async def _status(self, job_id: str, missing: str | None = None) -> JobStatus:
        """The job's status; Flink's 404 (``missing``, else "Job <id> not found"), with the
        job client's own error, when the registry has no such job."""
        try:
            return await run_in_threadpool(self.client.get, job_id)
        except UnreadableStatusError:
            raise
        except JobError as error:
            raise FlinkError(404, missing or f"Job {job_id} not found", error) from None

    async def _jobs(self) -> list[JobStatus]:
        jobs, _unreadable = await run_in_threadpool(self.client.list_jobs)
        return jobs

    def _require_cancel(self) -> None:
        if not self.settings.cancel_enabled:
            raise FlinkError(403, "Cancelling and stopping jobs is disabled (web.cancel.enable).")

    async def _act(self, action: Callable[[], Any], job_id: str) -> Any:
        """Run a client action (on the threads of :attr:`waits`: it may wait for the job's
        driver, or start a program); its refusal as Flink's 409 (the job cannot, now)."""
        try:
            return await self.waits.run_held(action)
        except UsageError as error:
            raise FlinkError(400, error.message, error) from None
        except JobError as error:
            raise FlinkError(409, error.message, error) from None
