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
import http.client
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from flinkish_cli.client.asking import require_running, wait_until_ended
from flinkish_cli.client.base import JobClientBase, resolve_local, savepoint_target
from flinkish_cli.errors import FlinkishError, JobError, SavepointError
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import RegistryIdentity, UnreadableJob
from flinkish_cli.rest import messages as m
from flinkish_cli.rest.wire import (
    ERROR_HEADER,
    HEARTBEAT_SECONDS,
    TIMEOUT_HEADER,
    error_from_header,
    read_event,
)

if TYPE_CHECKING:
    from flinkish_cli.client.upgrade_outcome import (
        UpgradeOutcome,
        UpgradePresenter,
        UpgradeRequest,
    )
    from flinkish_cli.registry.control import ControlRequest, ControlResponse
    from flinkish_cli.registry.history import SavepointRecord
    from flinkish_cli.registry.rescales import RescaleHistory
    from flinkish_cli.submission.upload import UploadedRun

#: Seconds between looks for an answer (a job's status, a request's response): each is one
#: small GET to the server, which revalidates with the storage.
POLL_SECONDS = 0.05
#: How long a request may take beyond the time the server itself may wait on the job.
SLACK_SECONDS = 30.0


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def error(self) -> FlinkishError | None:
        """The job client's error the server sent whole, if any."""
        return error_from_header(self.headers.get(ERROR_HEADER))

    def messages(self) -> str:
        """Flink's ``errors`` of the body, joined (or the start of a body that is not one)."""
        try:
            found = json.loads(self.body).get("errors")
        except (ValueError, AttributeError, RecursionError):
            found = None
        if isinstance(found, list) and found:
            return "; ".join(str(e) for e in found)[:500]
        return self.body[:200].decode("utf-8", "replace").strip() or "no message"


class Endpoint:
    """One ``flinkish web`` (``host:port``), reached over HTTP/1.1 with keep-alive and, when
    the configuration has one, its token (``flinkish.web.auth-token``, sent as a bearer
    token, never shown)."""

    def __init__(self, address: str, token: str | None, timeout: float = 10.0) -> None:
        from flinkish_cli.submission.endpoint import split_address

        self.address = address
        self.host, self.port = split_address(address)
        self.timeout = timeout
        self._token = token
        self._connection: http.client.HTTPConnection | None = None

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        sent = {"Accept": "application/json", "Content-Type": "application/json"}
        if self._token:
            sent["Authorization"] = f"Bearer {self._token}"
        return {**sent, **(extra or {})}

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        connection.connect()
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return connection

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """One request on the kept connection (a new one when the server closed it while it
        was idle); OSError and http.client's errors when the server cannot be reached."""
        data = None if body is None else json.dumps(body).encode()
        wait = self.timeout if timeout is None else timeout
        for attempt in (1, 2):
            reused = self._connection is not None
            if self._connection is None:
                self._connection = self._connect(wait)
            connection = self._connection
            connection.sock.settimeout(wait)
            try:
                connection.request(method, path, body=data, headers=self.headers(headers))
                response = connection.getresponse()
                reply = Reply(response.status, response.headers, response.read())
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if reused and attempt == 1:  # closed while idle: it never saw this request
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if response.will_close:
                self.close()
            return reply
        raise AssertionError  # pragma: no cover

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        expect: tuple[int, ...] = (200,),
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """:meth:`request`, its failures as the errors the user reads: the job client's
        error the server sent, or a :class:`JobError` naming the endpoint."""
        try:
            reply = self.request(method, path, body, headers, timeout)
        except (OSError, http.client.HTTPException) as error:
            raise self.gone(error) from None
        if reply.status in expect:
            return reply
        raise reply.error() or JobError(
            f"flinkish web at {self.address} answered {method} {path.split('?')[0]} with "
            f"HTTP {reply.status}: {reply.messages()}",
            "Is it the same flinkish version as this CLI? Its log says more.",
        )

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        reply = self.call(method, path, **kwargs)
        try:
            return json.loads(reply.body)
        except (ValueError, RecursionError):
            raise self.not_understood(path, "it is not JSON") from None

    def gone(self, error: BaseException) -> JobError:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return JobError(
            f"flinkish web at {self.address} stopped answering ({reason}).",
            "See whether it still runs; what the command asked may or may not have been done "
            "('flinkish list -a' shows the jobs' states).",
        )

    def not_understood(self, path: str, why: str) -> JobError:
        return JobError(
            f"flinkish web at {self.address} answered {path.split('?')[0]} with a document "
            f"flinkish cannot read: {why}.",
            "Is it the same flinkish version as this CLI?",
        )

    def stream(
        self, path: str, timeout: float | None, method: str = "GET", body: Any = None
    ) -> Iterator[bytes]:
        """The body of an answer as it arrives, on a connection of its own (a log followed,
        an upgrade's events); ``timeout`` bounds each wait for more."""
        connection = self._connect(timeout)
        data = None if body is None else json.dumps(body).encode()
        accept = {"Accept": "text/plain" if body is None else "application/x-ndjson"}
        try:
            connection.request(method, path, body=data, headers=self.headers(accept))
            response = connection.getresponse()
            if response.status != 200:
                reply = Reply(response.status, response.headers, response.read())
                raise reply.error() or JobError(
                    f"flinkish web at {self.address} answered {method} {path.split('?')[0]} "
                    f"with HTTP {reply.status}: {reply.messages()}"
                )
            while chunk := response.read1(65536):
                yield chunk
        except (OSError, http.client.HTTPException) as error:
            raise self.gone(error) from None
        finally:
            connection.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class RemoteJobs:
    """The registry's jobs as ``flinkish web`` serves them: a
    :class:`~flinkish_cli.client.asking.Lookup` for the waiting functions."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def _read(self, job_id: str) -> JobStatus | FlinkishError:
        path = m.REGISTRY_JOB.url(jobid=parse_job_id(job_id))
        reply = self.endpoint.call(m.REGISTRY_JOB.method, path, expect=(200, 404))
        if reply.status == 404:
            error = reply.error()
            if error is None or type(error) is not JobError:  # a 404 of another server
                raise error or self.endpoint.not_understood(path, "no such route")
            return error
        try:
            return JobStatus.from_json(reply.body.decode("utf-8"))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
            raise self.endpoint.not_understood(path, str(error)) from None

    def find(self, job_id: str) -> JobStatus | None:
        found = self._read(job_id)
        return found if isinstance(found, JobStatus) else None

    def get(self, job_id: str) -> JobStatus:
        found = self._read(job_id)
        if isinstance(found, FlinkishError):
            raise found
        return found


class RemoteChannel:
    """A job's control channel through ``flinkish web``: a request goes out as Flink's
    trigger (its trigger id the request's id, its deadline in ``Flinkish-Request-Timeout``),
    and its answer, claim, withdrawal and end go through flinkish's control routes."""

    def __init__(self, endpoint: Endpoint, job_id: str) -> None:
        self.endpoint = endpoint
        self.job_id = job_id

    def send(self, request: ControlRequest) -> ControlRequest:
        """The request (:func:`~flinkish_cli.registry.protocol.to_request`'s envelope) as
        Flink's trigger; a directory the user did not name is left to the server."""
        from flinkish_cli.registry.protocol import Action

        args, action = request.args, request.action
        waits = max(1.0, request.deadline() - time.time())
        headers = {TIMEOUT_HEADER: f"{waits:.3f}"}
        job, rid = self.job_id, request.request_id
        target = args.get("target") if args.get("explicit_target") else None
        body: dict[str, Any]
        if action == Action.STOP.value and args.get("savepoint"):
            assert not args.get("upgrade"), "upgrades do not go through flinkish web"
            if args.get("end_state") == JobState.CANCELED.value:
                path, body = m.SAVEPOINT_TRIGGER.url(jobid=job), {"target-directory": target}
                body["cancel-job"] = True
            else:
                path = m.STOP_WITH_SAVEPOINT.url(jobid=job)
                body = {"targetDirectory": target, "drain": bool(args.get("drain"))}
            body.update(formatType=args.get("format_type", "CANONICAL"), triggerId=rid)
        elif action == Action.SAVEPOINT.value:
            path = m.SAVEPOINT_TRIGGER.url(jobid=job)
            body = {
                "target-directory": target,
                "cancel-job": False,
                "formatType": args.get("format_type", "CANONICAL"),
                "triggerId": rid,
            }
        elif action == Action.CHECKPOINT.value:
            path, body = m.CHECKPOINT_TRIGGER.url(jobid=job), {"triggerId": rid}
        else:  # cancel goes through PATCH (RestJobClient.cancel), a plain stop nowhere
            raise AssertionError(f"{action} is not sent as a trigger")
        answer = self.endpoint.json("POST", path, body=body, expect=(202,), headers=headers)
        if not isinstance(answer, dict) or answer.get("request-id") != rid:
            raise self.endpoint.not_understood(path, "it names another trigger")
        return request

    def _answer(self, request_id: str) -> dict[str, Any]:
        path = m.CONTROL_ANSWER.url(jobid=self.job_id, triggerid=request_id)
        answer = self.endpoint.json(m.CONTROL_ANSWER.method, path)
        if not isinstance(answer, dict):
            raise self.endpoint.not_understood(path, "not a JSON object")
        return answer

    def response(self, request_id: str) -> ControlResponse | None:
        from flinkish_cli.registry.control import ControlResponse

        found = self._answer(request_id).get("response")
        if found is None:
            return None
        try:
            return ControlResponse.from_json(json.dumps(found), request_id)
        except (ValueError, TypeError) as error:
            path = m.CONTROL_ANSWER.url(jobid=self.job_id, triggerid=request_id)
            raise self.endpoint.not_understood(path, str(error)) from None

    def claimed(self, request_id: str) -> bool:
        return bool(self._answer(request_id).get("claimed"))

    def withdraw(self, request_id: str) -> bool:
        path = m.CONTROL_WITHDRAW.url(jobid=self.job_id, triggerid=request_id)
        answer = self.endpoint.json(m.CONTROL_WITHDRAW.method, path)
        return bool(isinstance(answer, dict) and answer.get("withdrawn"))

    def forget(self, request_id: str) -> None:
        path = m.CONTROL_FORGET.url(jobid=self.job_id, triggerid=request_id)
        self.endpoint.call(m.CONTROL_FORGET.method, path, expect=(200, 204))


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
        if end_state is JobState.CANCELED:
            path = m.SAVEPOINT_TRIGGER.url(jobid=job)
            body: dict[str, Any] = {"target-directory": given, "cancel-job": True}
        else:
            path = m.STOP_WITH_SAVEPOINT.url(jobid=job)
            body = {"targetDirectory": given, "drain": drain}
        return self._trigger(path, {**body, "formatType": format_type}, trigger_id, ttl)

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
        body = {"target-directory": given, "cancel-job": False, "formatType": format_type}
        return self._trigger(m.SAVEPOINT_TRIGGER.url(jobid=job), body, trigger_id, ttl)

    def checkpoint_detached(
        self, job_id: str, trigger_id: str | None = None, ttl: float | None = None
    ) -> str:
        """Flink's ``POST /jobs/:jobid/checkpoints`` (one request, as :meth:`stop_detached`)."""
        job = parse_job_id(job_id)
        return self._trigger(m.CHECKPOINT_TRIGGER.url(jobid=job), {}, trigger_id, ttl)

    def _trigger(
        self, path: str, body: dict[str, Any], trigger_id: str | None, ttl: float | None
    ) -> str:
        if trigger_id is not None:
            body["triggerId"] = trigger_id
        headers = {TIMEOUT_HEADER: f"{ttl:.3f}"} if ttl is not None else None
        answer = self.endpoint.json("POST", path, body=body, expect=(202,), headers=headers)
        found = answer.get("request-id") if isinstance(answer, dict) else None
        if not isinstance(found, str):
            raise self.endpoint.not_understood(path, "it names no trigger")
        return found

    def dispose_savepoint(self, path: str) -> None:
        """Flink's ``POST /savepoint-disposal``, then its result (the server disposes of it
        before it answers); a relative local path is the caller's."""
        path = resolve_local(path).rstrip("/")
        disposal = m.SAVEPOINT_DISPOSAL
        answer = self.endpoint.json(disposal.method, disposal.path, body={"savepoint-path": path})
        trigger = answer.get("request-id") if isinstance(answer, dict) else None
        if not isinstance(trigger, str):
            raise self.endpoint.not_understood(disposal.path, "it names no trigger")
        deadline = time.monotonic() + SLACK_SECONDS
        while True:
            status_path = m.SAVEPOINT_DISPOSAL_STATUS.url(triggerid=trigger)
            reply = self.endpoint.call(m.SAVEPOINT_DISPOSAL_STATUS.method, status_path)
            try:
                status = json.loads(reply.body)["status"]["id"]
            except (ValueError, TypeError, KeyError) as error:
                raise self.endpoint.not_understood(disposal.path, str(error)) from None
            if status == "COMPLETED":
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
        body = {"name": Path(entry).name, "archive": base64.b64encode(archive).decode()}
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
        :class:`~flinkish_cli.client.upgrade.Upgrade`, with this configuration); what it
        shows comes back as it happens (:mod:`.wire`'s events), so the same lines and exit
        statuses as an upgrade from here. A CLI that goes away (Ctrl-C) stops following;
        the upgrade goes on to its end there."""
        from flinkish_cli.client.upgrade_outcome import UpgradeOutcome

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
