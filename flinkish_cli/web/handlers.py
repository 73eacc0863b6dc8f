"""The handlers of Flink's REST API (v1), of the dashboard's own documents and of the
registry's documents for flinkish's CLI (:mod:`flinkish_cli.client.wire`): each parses its
request (:mod:`.parsing`), asks the :class:`~flinkish_cli.client.jobs.JobClient` (the one
client the CLI also uses) and presents the answer with :mod:`.flink_json` or
:mod:`.dashboard`. Refusals are :class:`~.replies.FlinkError`, answered as Flink's errors,
with the job client's own error beside them whenever one is behind the refusal.

Deviation from Flink, deliberate: a trigger (savepoint, stop, checkpoint) that failed is
answered with ``{"errors": [cause]}`` (status 500) instead of a COMPLETED status holding a
Java-serialised exception, which only a JVM could produce; Flink's CLI then prints the cause
at once instead of retrying for a minute.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from flinkish_cli.client import wire
from flinkish_cli.client.jobs import JobClient, TriggerResult, checkpoint_of, is_trigger_id
from flinkish_cli.errors import JobError, StateError, StateNotFoundError, UsageError
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import UnreadableStatusError
from flinkish_cli.submission.endpoint import CLUSTER_PATH
from flinkish_cli.web import dashboard, flink_json, parsing
from flinkish_cli.web.limits import LONG_ACTIONS, Pool, Stopping
from flinkish_cli.web.replies import JSON_TYPE, FlinkError, ok
from flinkish_cli.web.settings import WebSettings


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


class FlinkRestApi:
    """Flink's REST API over one job client."""

    def __init__(
        self, client: JobClient, settings: WebSettings, stopping: Stopping | None = None
    ) -> None:
        from flinkish_cli.web.upgrades import UpgradesUnderWay

        self.client = client
        self.settings = settings
        self.stopping = stopping or Stopping()
        #: the upgrades carried out for the CLI (the server's shutdown waits for them)
        self.upgrades = UpgradesUnderWay()
        #: follows of logs, and actions that wait (:mod:`.limits`): threads of their own
        self.follows = Pool("log follows", settings.max_follows, "flinkish.web.max-follows")
        self.waits = Pool("actions that wait for a job or start a program", LONG_ACTIONS)
        self.upgrade_answers = Pool("upgrades streaming their events", LONG_ACTIONS)
        #: savepoint path -> each query's source offsets in it (:meth:`_savepoint_offsets`)
        self._offsets: dict[str, dict[str, list[Any]] | None] = {}

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

    # -- reading ---------------------------------------------------------------------------
    async def config(self, request: Request) -> Response:
        """The dashboard's configuration: flinkish's version, the refresh interval and whether jobs
        may be cancelled."""
        s = self.settings
        return ok(
            flink_json.dashboard_config(
                s.version, s.refresh_ms, s.cancel_enabled, s.rescale_allowed
            )
        )

    async def overview(self, request: Request) -> Response:
        """The cluster overview: the jobs by state, and the task managers and slots of the jobs that
        are not over."""
        jobs = await self._jobs()
        jvms = await run_in_threadpool(self.client.jvm_records, jobs)
        return ok(flink_json.cluster_overview(jobs, self.settings.version, jvms))

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
            offsets = await run_in_threadpool(self._savepoint_offsets, path)
            if offsets is not None:
                held[path] = offsets
        return ok(
            flink_json.checkpoints(
                status, history, last_savepoint=savepoint, savepoint_offsets=held
            )
        )

    def _savepoint_offsets(self, path: str) -> dict[str, list[Any]] | None:
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

    async def job_exceptions(self, request: Request) -> Response:
        """The job's exception history (``?maxExceptions=`` the newest only)."""
        status = await self._status(parsing.job_id(request))
        limit = request.query_params.get("maxExceptions", "")
        size = int(limit) if limit.isdigit() else len(status.exceptions)
        return ok(flink_json.exceptions(status, size))

    # -- the dashboard's own documents (flinkish_cli.web.dashboard) ------------------------
    async def cluster(self, request: Request) -> Response:
        """Where ``flinkish run -m <this endpoint>`` sends a job (the client's side:
        :mod:`flinkish_cli.submission.endpoint`)."""
        identity = self.client.identity()
        s = self.settings
        return ok(dashboard.cluster(s.session_cluster, s.version, identity, s.submit_enabled))

    # -- programs (web.submit.enable) ------------------------------------------------------
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
        data = await parsing.body(request, {"name": (str,), "archive": (str,)}, "JarUpload")
        try:
            archive = base64.b64decode(data.get("archive") or "", validate=True)
        except ValueError:
            raise FlinkError(400, "The upload's archive is not base64.") from None
        directory, keep = self.settings.upload_dir, self.settings.upload_timeout

        def upload() -> str:
            self.client.sweep_uploads(directory, keep)
            return self.client.upload_program(archive, directory)

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
            lambda: self.client.run_upload(self.settings.upload_dir, upload_id, body, session),
            "",
        )
        return ok({"jobid": job_id})

    async def upgrade_program(self, request: Request) -> Response:
        """``POST /flinkish/jars/:id/upgrade``: ``flinkish upgrade`` with the uploaded program,
        carried out here (:func:`client.upgrade.upgrade_upload`); its events as they happen
        (:mod:`.upgrades`). A request that cannot be read is refused before anything starts."""
        from flinkish_cli.client.upgrade import upgrade_upload
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
                lambda: upgrade_upload(
                    self.client, self.settings.upload_dir, upload_id, body, session, stream
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

    # -- acting ----------------------------------------------------------------------------
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
        allowed = {"targetDirectory": (str,), "drain": (bool,)}
        data, trigger, fmt = await parsing.savepoint_body(
            request, allowed, "StopWithSavepointRequestBody"
        )
        ttl = parsing.request_timeout(request)
        self._require_cancel()
        await self._status(job_id)
        tid = await self._act(
            lambda: self.client.stop_detached(
                job_id, data.get("targetDirectory"), bool(data.get("drain")), fmt,
                trigger_id=trigger, ttl=ttl,
            ),
            job_id,
        )  # fmt: skip
        return ok({"request-id": tid}, 202)

    async def savepoint(self, request: Request) -> Response:
        """Triggers a savepoint (``target-directory``; ``cancel-job`` cancels the job after it); its
        trigger id."""
        job_id = parsing.job_id(request)
        allowed = {"target-directory": (str,), "cancel-job": (bool,)}
        data, trigger, fmt = await parsing.savepoint_body(
            request, allowed, "SavepointTriggerRequestBody"
        )
        target = data.get("target-directory")
        ttl = parsing.request_timeout(request)
        await self._status(job_id)
        if data.get("cancel-job"):
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
        return ok({"request-id": tid}, 202)

    async def savepoint_status(self, request: Request) -> Response:
        """The savepoint trigger's status: IN_PROGRESS, or COMPLETED with the savepoint's
        location."""
        _, result = await self._trigger_status(request, "savepoint")
        if result is None:
            return ok({"status": {"id": "IN_PROGRESS"}})
        return ok({"status": {"id": "COMPLETED"}, "operation": {"location": result["path"]}})

    async def checkpoint(self, request: Request) -> Response:
        """Triggers a checkpoint (every query commits its next micro-batch); its trigger id."""
        job_id = parsing.job_id(request)
        allowed = {"checkpointType": (str,), "triggerId": (str,)}
        data = await parsing.body(request, allowed, "CheckpointTriggerRequestBody")
        trigger = parsing.trigger_id(data)
        parsing.choice(
            data, "checkpointType", parsing.CHECKPOINT_TYPES, "CONFIGURED"
        )  # all are one here
        ttl = parsing.request_timeout(request)
        await self._status(job_id)
        tid = await self._act(lambda: self.client.checkpoint_detached(job_id, trigger, ttl), job_id)
        return ok({"request-id": tid}, 202)

    async def checkpoint_status(self, request: Request) -> Response:
        """The checkpoint trigger's status: IN_PROGRESS, or COMPLETED with the checkpoint id."""
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
        data = await parsing.body(request, {"savepoint-path": (str,)}, "SavepointDisposalRequest")
        path = data.get("savepoint-path")
        if not path:
            raise FlinkError(400, "Request did not match expected format SavepointDisposalRequest.")
        tid = await run_in_threadpool(self.client.dispose_detached, path)
        return ok({"request-id": tid})

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
        return ok({"status": {"id": "COMPLETED"}, "operation": {}})

    # -- the registry's documents for flinkish's CLI (flinkish_cli.client.wire) -------------
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
            Route("/jobs/{jobid}/plan", self.job_plan, methods=["GET"]),
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
        """The dashboard's own documents and the registry's for flinkish's CLI, under
        ``/flinkish/``."""
        control = wire.control_path("{jobid}", "{triggerid}")
        return [
            Route(wire.REGISTRY_JOBS, self.registry_jobs, methods=["GET"]),
            Route(wire.job_path("{jobid}"), self.registry_job, methods=["GET"]),
            Route(control, self.control_answer, methods=["GET"]),
            Route(control, self.control_forget, methods=["DELETE"]),
            Route(f"{control}/withdraw", self.control_withdraw, methods=["POST"]),
            Route(wire.job_path("{jobid}", "log"), self.registry_log, methods=["GET"]),
            Route(
                wire.job_path("{jobid}", "savepoints"),
                self.registry_job_savepoints,
                methods=["GET"],
            ),
            Route(wire.REGISTRY_SAVEPOINTS, self.registry_savepoints, methods=["GET"]),
            Route(wire.LAST_SAVEPOINTS, self.registry_last_savepoints, methods=["GET"]),
            Route(CLUSTER_PATH, self.cluster, methods=["GET"]),
            Route(wire.UPLOAD_PATH, self.upload_program, methods=["POST"]),
            Route(wire.run_path("{jarid}"), self.run_program, methods=["POST"]),
            Route(wire.upgrade_path("{jarid}"), self.upgrade_program, methods=["POST"]),
            Route("/flinkish/jobs", self.dashboard_jobs, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/series", self.dashboard_series, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/savepoints", self.dashboard_savepoints, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/plan", self.dashboard_plan, methods=["GET"]),
            Route("/flinkish/jobs/{jobid}/info", self.job_info, methods=["GET"]),
            Route(
                "/flinkish/jobs/{jobid}/checkpoint-size",
                self.dashboard_checkpoint_size,
                methods=["GET"],
            ),
            Route("/flinkish/jobs/{jobid}/state", self.dashboard_state, methods=["GET"]),
            Route(
                "/flinkish/jobs/{jobid}/state/{query}/{operator}",
                self.dashboard_state_rows,
                methods=["GET"],
            ),
        ]
