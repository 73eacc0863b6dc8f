"""The registry's jobs and a job's control channel as the REST job client reaches them
through ``flinkish web``: :class:`RemoteJobs` (a
:class:`~flinkish_cli.client.asking.Lookup`) and :class:`RemoteChannel` (a
:class:`~flinkish_cli.client.asking.Channel`), so that the waiting actions of
:mod:`.base` run alike over either transport."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.http import Endpoint
from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.rest import messages as m
from flinkish_cli.rest.bodies import (
    BodyMismatch,
    CheckpointTriggerRequestBody,
    RequestBody,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
    TriggerResponse,
)
from flinkish_cli.rest.wire import TIMEOUT_HEADER

if TYPE_CHECKING:
    from flinkish_cli.registry.control import ControlRequest, ControlResponse


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
        fmt = args.get("format_type", "CANONICAL")
        body: RequestBody
        if action == Action.STOP.value and args.get("savepoint"):
            assert not args.get("upgrade"), "upgrades do not go through flinkish web"
            if args.get("end_state") == JobState.CANCELED.value:
                path = m.SAVEPOINT_TRIGGER.url(jobid=job)
                body = SavepointTriggerRequestBody(target, True, fmt, rid)
            else:
                path = m.STOP_WITH_SAVEPOINT.url(jobid=job)
                body = StopWithSavepointRequestBody(target, bool(args.get("drain")), fmt, rid)
        elif action == Action.SAVEPOINT.value:
            path = m.SAVEPOINT_TRIGGER.url(jobid=job)
            body = SavepointTriggerRequestBody(target, False, fmt, rid)
        elif action == Action.CHECKPOINT.value:
            path = m.CHECKPOINT_TRIGGER.url(jobid=job)
            body = CheckpointTriggerRequestBody(trigger_id=rid)
        else:  # cancel goes through PATCH (RestJobClient.cancel), a plain stop nowhere
            raise AssertionError(f"{action} is not sent as a trigger")
        answer = self.endpoint.json(
            "POST", path, body=body.to_wire(), expect=(202,), headers=headers
        )
        try:
            named = TriggerResponse.from_wire(answer, strict=False).request_id
        except BodyMismatch:
            named = None
        if named != rid:
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
