"""The job client through ``flinkish web``: :class:`RestJobClient`, the same interface
(:class:`~flinkish_cli.client.base.JobClientBase`) and the same lines as
:class:`~flinkish_cli.client.jobs.JobClient`, over HTTP instead of storage, as Flink's CLI
drives its cluster through the JobManager's REST API. It never imports the storage client.

- **Actions** go through Flink's routes, with the bodies Flink's CLI sends:
  ``PATCH /jobs/:jobid?mode=cancel``, ``POST /jobs/:jobid/stop``, ``POST
  /jobs/:jobid/savepoints`` (``cancel-job`` for ``cancel -s``), ``POST
  /jobs/:jobid/checkpoints`` and ``POST /savepoint-disposal`` with ``GET
  /savepoint-disposal/:triggerid``. A waiting command names its trigger with the request id
  it will wait for and says how long it waits (``Flinkish-Request-Timeout``), then waits
  for the job's answer and withdraws the request when it gives up, through flinkish's
  routes (:mod:`.wire`): the same waiting as over storage (:mod:`.asking`), so the same
  lines, messages and exit statuses, by construction. Without a directory, a savepoint goes
  to the server's ``execution.checkpointing.savepoint-dir``, as Flink's goes to the
  cluster's default directory; a directory given is the caller's (a relative one resolved
  against the caller's working directory).
- **Reading** (``list``, ``info <JobID>``, ``logs``, ``savepoint list``, a job's status)
  goes through flinkish's routes, which answer with the registry's documents: the REST
  answers are the registry's truth (the server revalidates what it keeps on every read).
- **Errors**: the server's job client raises them, and they come back whole in the
  ``Flinkish-Error`` header; an endpoint that stops answering mid-command is a
  :class:`~flinkish_cli.errors.JobError` naming it. Nothing here ever falls back to
  storage: :class:`RestJobClient` has no registry and this module never imports the storage
  client (import-linter's contract ``rest-not-storage``), so no action of it can read
  storage.
- **Programs** (``run -m host:port`` when the endpoint takes them: ``web.submit.enable``)
  are uploaded and started there (:meth:`RestJobClient.submit`,
  :mod:`flinkish_cli.submission.upload`), then followed through the endpoint; an
  ``upgrade``'s new program is uploaded likewise and the server carries the whole upgrade
  out (:meth:`RestJobClient.upgrade`).
- **What stays on this machine**: ``info <job.py>`` (Spark's plans, a local session),
  ``savepoint info <path>`` (the savepoint's files, read with this configuration), and
  ``run`` to an endpoint that takes no programs (``run``'s own ``-m`` handling: the program
  runs from this machine on the endpoint's session cluster; ``upgrade`` to one is refused,
  :func:`~flinkish_cli.client.connect.submission_client`).

Only the standard library's ``http.client``: the CLI starts fast and imports no web
framework. One keep-alive connection per command (a log followed has its own). What only
some commands use (the control protocol's envelopes, savepoint records, rescale histories)
is imported by the methods that use it.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from flinkish_cli.client.asking import require_running, wait_until_ended
from flinkish_cli.client.base import JobClientBase, resolve_local, savepoint_target
from flinkish_cli.client.http import Endpoint
from flinkish_cli.client.remote import RemoteChannel, RemoteJobs
from flinkish_cli.errors import FlinkishError, JobError, SavepointError
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import RegistryIdentity, UnreadableJob
from flinkish_cli.rest import messages as m
from flinkish_cli.rest.bodies import (
    COMPLETED,
    AsynchronousOperationResult,
    BodyMismatch,
    CheckpointTriggerRequestBody,
    JarUpload,
    RequestBody,
    SavepointDisposalRequest,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
    TriggerResponse,
)
from flinkish_cli.rest.wire import (
    HEARTBEAT_SECONDS,
    TIMEOUT_HEADER,
    error_from_header,
    read_event,
)

if TYPE_CHECKING:
    from flinkish_cli.client.upgrade.outcome import (
        UpgradeOutcome,
        UpgradePresenter,
        UpgradeRequest,
    )
    from flinkish_cli.registry.history import SavepointRecord
    from flinkish_cli.registry.rescales import RescaleHistory
    from flinkish_cli.submission.upload import UploadedRun

#: Seconds between looks for an answer (a job's status, a request's response): each is one
#: small GET to the server, which revalidates with the storage.
POLL_SECONDS = 0.05
#: How long a request may take beyond the time the server itself may wait on the job.
SLACK_SECONDS = 30.0


class RestJobClient(JobClientBase):
    """The job client through one ``flinkish web`` (see the module's description): the
    waiting actions (``stop``, ``savepoint``, ``checkpoint``, ``cancel -s``) are
    :class:`~flinkish_cli.client.base.JobClientBase`'s, over a remote lookup and channel."""

    def __init__(self, config: Any, endpoint: Endpoint, identity: RegistryIdentity) -> None:
        super().__init__(config)
        self.endpoint = endpoint
        self.jobs = RemoteJobs(endpoint)
        self._identity = identity
        self.transport = f"flinkish web at {endpoint.address}"
        #: the endpoint's cluster document (:data:`~flinkish_cli.rest.messages.CLUSTER`),
        #: as :func:`~flinkish_cli.client.connect.job_client` read it
        self.cluster: dict[str, Any] = {}

    # -- the transport ---------------------------------------------------------------------
    def open(self) -> RestJobClient:
        return self

    def identity(self) -> RegistryIdentity:
        return self._identity

    def _lookup(self) -> RemoteJobs:
        return self.jobs

    def _channel(self, job_id: str) -> RemoteChannel:
        return RemoteChannel(self.endpoint, job_id)

    def _pause(self) -> float:
        return POLL_SECONDS

    def _end_pause(self) -> float:
        return POLL_SECONDS

    def _target(self, given: str | None) -> str:
        """A directory given is the caller's; none is the server's default (Flink's)."""
        return savepoint_target(self.config, given) if given is not None else ""

    # -- reading ---------------------------------------------------------------------------
    def list_jobs(self) -> tuple[list[JobStatus], list[UnreadableJob]]:
        answer = self.endpoint.json(m.REGISTRY_JOBS.method, m.REGISTRY_JOBS.path)
        try:
            statuses = [JobStatus.from_dict(d) for d in answer["jobs"]]
            unreadable = [UnreadableJob(**u) for u in answer["unreadable"]]
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise self.endpoint.not_understood(m.REGISTRY_JOBS.path, str(error)) from None
        return statuses, unreadable

    def find(self, job_id: str) -> JobStatus | None:
        return self.jobs.find(job_id)

    def get(self, job_id: str) -> JobStatus:
        return self.jobs.get(job_id)

    def log(
        self, job_id: str, follow: bool = False, last_lines: int | None = None
    ) -> Iterator[str]:
        """The job's log as ``flinkish web``'s machine has it (its ``env.log.dir``, as
        Flink's cluster serves its logs)."""
        query: dict[str, str] = {"follow": "true"} if follow else {}
        if last_lines is not None:
            query["lines"] = str(last_lines)
        path = m.REGISTRY_LOG.url(jobid=parse_job_id(job_id))
        path += f"?{urlencode(query)}" if query else ""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for chunk in self.endpoint.stream(path, None if follow else self.endpoint.timeout * 6):
            text = decoder.decode(chunk)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    def job_info(self, job_id: str) -> dict[str, Any]:
        path = m.JOB_INFO.url(jobid=parse_job_id(job_id))
        answer = self.endpoint.json(m.JOB_INFO.method, path)
        if not isinstance(answer, dict):
            raise self.endpoint.not_understood(path, "not a JSON object")
        return answer

    def savepoint_history(self, job_id: str | None = None) -> list[SavepointRecord]:
        from flinkish_cli.registry.history import SavepointRecord

        path = m.REGISTRY_SAVEPOINTS.path
        if job_id is not None:
            path = m.REGISTRY_JOB_SAVEPOINTS.url(jobid=parse_job_id(job_id))
        answer = self.endpoint.json("GET", path)
        try:
            return [SavepointRecord.from_dict(r) for r in answer["savepoints"]]
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise self.endpoint.not_understood(path, str(error)) from None

    def rescale_histories(self, statuses: list[JobStatus]) -> dict[str, RescaleHistory]:
        """The rescale histories of the jobs that are not over, as the server reads them."""
        from flinkish_cli.registry.rescales import RescaleHistory

        found = {}
        for status in statuses:
            if status.effective_state().is_terminal:
                continue
            path = m.REGISTRY_JOB_RESCALES.url(jobid=status.job_id)
            body = self.endpoint.call(m.REGISTRY_JOB_RESCALES.method, path).body
            found[status.job_id] = RescaleHistory.from_json(body.decode("utf-8", "replace"))
        return found

    def last_savepoint(self, job_id: str) -> SavepointRecord | None:
        job_id = parse_job_id(job_id)
        return self.last_savepoints([job_id])[job_id]

    def last_savepoints(self, job_ids: list[str]) -> dict[str, SavepointRecord | None]:
        from flinkish_cli.registry.history import SavepointRecord

        found: dict[str, Any] = {}
        for start in range(0, len(job_ids), 100):  # URLs of a few kB at most
            batch = job_ids[start : start + 100]
            path = f"{m.LAST_SAVEPOINTS.path}?jobs={quote(','.join(batch), safe=',')}"
            answer = self.endpoint.json(m.LAST_SAVEPOINTS.method, path)
            if not isinstance(answer, dict) or not isinstance(answer.get("last-savepoints"), dict):
                raise self.endpoint.not_understood(m.LAST_SAVEPOINTS.path, "no last-savepoints")
            found.update(answer["last-savepoints"])
        try:
            return {
                j: SavepointRecord.from_dict(found[j]) if found[j] is not None else None
                for j in job_ids
            }
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise self.endpoint.not_understood(m.LAST_SAVEPOINTS.path, str(error)) from None

    # -- acting ----------------------------------------------------------------------------
    def cancel(self, job_id: str, timeout: float | None = None, wait: bool = True) -> JobStatus:
        """Flink's ``PATCH /jobs/:jobid?mode=cancel`` (answered once the job's driver has
        accepted), then, as over storage, the wait for the job's end."""
        from flinkish_cli.registry.protocol import CANCEL_TIMEOUT

        timeout = CANCEL_TIMEOUT if timeout is None else timeout
        status = require_running(self.jobs, job_id, "cancel")
        self.endpoint.call(
            m.JOB_CANCEL.method,
            m.JOB_CANCEL.url(jobid=status.job_id) + "?mode=cancel",
            expect=(202,),
            timeout=timeout + SLACK_SECONDS,
        )
        if not wait:
            return self.jobs.get(status.job_id)
        return wait_until_ended(self.jobs, status.job_id, timeout, POLL_SECONDS)

    def stop_detached(
        self,
        job_id: str,
        target: str | None,
        drain: bool,
        format_type: str = "CANONICAL",
        end_state: JobState = JobState.FINISHED,
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Flink's ``POST /jobs/:jobid/stop`` (``savepoints`` with ``cancel-job``): one
        request; the server's job client checks the job as this one would (its errors come
        back whole)."""
        job = parse_job_id(job_id)
        given = resolve_local(target) if target is not None else None  # checked there
        body: RequestBody
        if end_state is JobState.CANCELED:
            path = m.SAVEPOINT_TRIGGER.url(jobid=job)
            body = SavepointTriggerRequestBody(given, True, format_type, trigger_id)
        else:
            path = m.STOP_WITH_SAVEPOINT.url(jobid=job)
            body = StopWithSavepointRequestBody(given, drain, format_type, trigger_id)
        return self._trigger(path, body, ttl)

    def savepoint_detached(
        self,
        job_id: str,
        target: str | None,
        format_type: str = "CANONICAL",
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Flink's ``POST /jobs/:jobid/savepoints`` (one request, as :meth:`stop_detached`)."""
        job = parse_job_id(job_id)
        given = resolve_local(target) if target is not None else None  # checked there
        body = SavepointTriggerRequestBody(given, False, format_type, trigger_id)
        return self._trigger(m.SAVEPOINT_TRIGGER.url(jobid=job), body, ttl)

    def checkpoint_detached(
        self, job_id: str, trigger_id: str | None = None, ttl: float | None = None
    ) -> str:
        """Flink's ``POST /jobs/:jobid/checkpoints`` (one request, as :meth:`stop_detached`)."""
        job = parse_job_id(job_id)
        body = CheckpointTriggerRequestBody(trigger_id=trigger_id)
        return self._trigger(m.CHECKPOINT_TRIGGER.url(jobid=job), body, ttl)

    def _trigger(self, path: str, body: RequestBody, ttl: float | None) -> str:
        headers = {TIMEOUT_HEADER: f"{ttl:.3f}"} if ttl is not None else None
        answer = self.endpoint.json(
            "POST", path, body=body.to_wire(), expect=(202,), headers=headers
        )
        return self._trigger_id(path, answer)

    def _trigger_id(self, path: str, answer: Any) -> str:
        """The trigger id of a :class:`~flinkish_cli.rest.bodies.TriggerResponse`."""
        try:
            found = TriggerResponse.from_wire(answer, strict=False).request_id
        except BodyMismatch:
            found = None
        if found is None:
            raise self.endpoint.not_understood(path, "it names no trigger")
        return found

    def dispose_savepoint(self, path: str) -> None:
        """Flink's ``POST /savepoint-disposal``, then its result (the server disposes of it
        before it answers); a relative local path is the caller's."""
        path = resolve_local(path).rstrip("/")
        disposal = m.SAVEPOINT_DISPOSAL
        body = SavepointDisposalRequest(path).to_wire()
        answer = self.endpoint.json(disposal.method, disposal.path, body=body)
        trigger = self._trigger_id(disposal.path, answer)
        deadline = time.monotonic() + SLACK_SECONDS
        while True:
            status_path = m.SAVEPOINT_DISPOSAL_STATUS.url(triggerid=trigger)
            reply = self.endpoint.call(m.SAVEPOINT_DISPOSAL_STATUS.method, status_path)
            try:
                answer = AsynchronousOperationResult.from_wire(json.loads(reply.body), False)
                status = answer.state
            except (ValueError, BodyMismatch) as error:
                raise self.endpoint.not_understood(disposal.path, str(error)) from None
            if status == COMPLETED:
                return
            if time.monotonic() > deadline:
                raise SavepointError(f"Disposing of {path} did not complete within 30 s.")
            time.sleep(POLL_SECONDS)

    # -- starting a job --------------------------------------------------------------------
    def submit(self, request: Any, presenter: Any) -> JobStatus:
        """``run -m host:port`` where flinkish web takes programs: upload the job's code
        (``/flinkish/jars/upload``), start it with this configuration
        (``/flinkish/jars/:id/run``), then, as a session-cluster ``run`` does, wait until it
        runs (``-d``) or follow it to its end, through the endpoint. The same lines and exit
        statuses; this process imports neither pyspark nor pandas."""
        from flinkish_cli.submission.run import started_failed

        job_id = self.start_program(request)
        if request.detached:
            status = self._until_running(job_id)
            if status.state is JobState.FAILED:
                raise started_failed(status)
            presenter.submitted(job_id)
            presenter.ended(status, detached=True)
            return status
        return self._follow(job_id, presenter)

    def start_program(self, request: Any) -> str:
        """Upload the job's code and start it there (``flinkish run``'s request, with this
        configuration); its JobID. The server answers once the job's supervisor runs."""
        upload_id, run = self._upload(request)
        path = m.JAR_RUN.url(jarid=upload_id)
        answer = self.endpoint.json(
            m.JAR_RUN.method, path, body=run.to_json(), timeout=SLACK_SECONDS * 4
        )
        job_id = answer.get("jobid") if isinstance(answer, dict) else None
        if not isinstance(job_id, str):
            raise self.endpoint.not_understood(path, "it names no job")
        return job_id

    def _upload(self, request: Any) -> tuple[str, UploadedRun]:
        """Upload the program of ``request`` (a run request); the upload's id and the run
        request that starts it there, with this configuration (its secrets included: the
        job runs with them, as it would from here)."""
        import base64
        from pathlib import Path

        from flinkish_cli.submission.upload import UploadedRun, program_archive

        archive, entry = program_archive(request)
        body = JarUpload(Path(entry).name, base64.b64encode(archive).decode()).to_wire()
        answer = self.endpoint.json(m.JAR_UPLOAD.method, m.JAR_UPLOAD.path, body=body)
        upload_id = answer.get("filename") if isinstance(answer, dict) else None
        if not isinstance(upload_id, str):
            raise self.endpoint.not_understood(m.JAR_UPLOAD.path, "it names no upload")
        given = request.from_savepoint
        return upload_id, UploadedRun(
            entry=entry,
            args=list(request.args),
            configuration=self.config.to_flat(include_secrets=True),
            detached=request.detached,
            parallelism=request.parallelism,
            from_savepoint=resolve_local(given) if given else None,
            allow_non_restored_state=request.allow_non_restored_state,
            claim_mode=request.claim_mode,
            origin=str(Path(request.script).resolve()),
        )

    def upgrade(self, request: UpgradeRequest, presenter: UpgradePresenter) -> UpgradeOutcome:
        """``upgrade -m host:port`` where flinkish web takes programs: upload the new program
        and have the server carry the upgrade out (its job client runs
        :class:`~flinkish_cli.client.upgrade.machine.Upgrade`, with this configuration); what it
        shows comes back as it happens (:mod:`.wire`'s events), so the same lines and exit
        statuses as an upgrade from here. A CLI that goes away (Ctrl-C) stops following;
        the upgrade goes on to its end there."""
        from flinkish_cli.client.upgrade.outcome import UpgradeOutcome

        upload_id, run = self._upload(request.program)
        path = m.JAR_UPGRADE.url(jarid=upload_id)
        body = request.to_json(run.to_json())
        pending = b""
        for chunk in self.endpoint.stream(path, HEARTBEAT_SECONDS * 6, m.JAR_UPGRADE.method, body):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                try:
                    found = read_event(line)
                except ValueError:
                    raise self.endpoint.not_understood(path, "not an upgrade's events") from None
                if found is None:
                    continue
                kind, value = found
                if kind == "outcome":
                    try:
                        return UpgradeOutcome.from_json(value)
                    except (ValueError, TypeError) as error:
                        raise self.endpoint.not_understood(path, str(error)) from None
                if kind == "error":
                    raise error_from_header(value) or self.endpoint.not_understood(
                        path, "an error flinkish cannot read"
                    )
                getattr(presenter, kind)(str(value))
        raise self.endpoint.gone(ConnectionError("it ended the upgrade's answer before its end"))

    def _until_running(self, job_id: str, timeout: float = 300.0) -> JobStatus:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.jobs.find(job_id)
            if status is not None and (
                status.state.is_terminal or status.state is JobState.RUNNING
            ):
                return status
            time.sleep(POLL_SECONDS)
        raise JobError(
            f"Job {job_id} did not reach RUNNING within {timeout:.0f} s.",
            f"It may still be starting; see 'flinkish list -m {self.endpoint.address}'.",
        )

    def _follow(self, job_id: str, presenter: Any) -> JobStatus:
        """An attached job through the endpoint: its updates until it ends. Ctrl-C or
        SIGTERM cancels it (``PATCH /jobs/:jobid``): the job's driver is not this process's
        child, and an attached Flink client's job is cancelled with it likewise (``-sae``)."""
        import signal

        from flinkish_cli.submission.follow import follow
        from flinkish_cli.submission.run import attached_end

        presenter.submitted(job_id)

        def interrupted(signum: int, _frame: Any) -> None:
            presenter.interrupted(job_id, signum, True)
            with contextlib.suppress(FlinkishError):
                self.cancel(job_id, wait=False)

        previous = {s: signal.signal(s, interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
        status: JobStatus | None = None
        try:
            # a look is one small GET to the warm server: brisk while a short job may end
            updates = follow(self.jobs, job_id, None, POLL_SECONDS * 4, POLL_SECONDS)  # type: ignore[arg-type]
            for update in updates:
                presenter.update(update)
                status = update.status
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            presenter.close()
        assert status is not None
        presenter.ended(status, detached=False)
        root = str(self.config.get("execution.checkpointing.dir")).rstrip("/")
        return attached_end(status, status.log_path or "", f"{root}/{job_id}")
