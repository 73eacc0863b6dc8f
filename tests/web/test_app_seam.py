"""The REST application's seam, in this process: ``create_app`` over a job client double,
served by a real uvicorn on 127.0.0.1 and asked over real HTTP. What the handlers decide
(Flink's documents, the 404 of an unknown job, the 403 of a disabled cancel, the 409 of a
job that already ended, the client's refusal as Flink's error) is checked in seconds, with
no ``flinkish web`` process and no registry; the scenarios in test_rest_api.py cover the
same routes end to end."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import pytest

from flinkish_cli.client.base import TriggerResult
from flinkish_cli.client.jobs import JobClient
from flinkish_cli.errors import JobError
from flinkish_cli.registry.control import DETACHED_TTL
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.web.app import WebSettings, create_app

uvicorn = pytest.importorskip("uvicorn")

RUNNING = "1a" * 16
FINISHED = "2b" * 16
UNKNOWN = "3c" * 16


class JobsDouble:
    """The job client's answers the handlers ask for, from a dictionary of statuses; what
    they asked it to do, recorded."""

    def __init__(self, *statuses: JobStatus) -> None:
        self.statuses = {s.job_id: s for s in statuses}
        self.cancelled: list[tuple[str, bool]] = []
        self.refusal: JobError | None = None
        #: the savepoint triggers sent, by trigger id, as the test moves them on
        self.triggers: dict[str, TriggerResult] = {}
        self.asked: list[tuple[str, str | None, str, float | None]] = []

    def list_jobs(self) -> tuple[list[JobStatus], list[Any]]:
        return list(self.statuses.values()), []

    def get(self, job_id: str) -> JobStatus:
        if job_id not in self.statuses:
            raise JobError(f"Job {job_id} not found in the registry.")
        return self.statuses[job_id]

    def cancel(self, job_id: str, wait: bool = True) -> None:
        if self.refusal is not None:
            raise self.refusal
        self.cancelled.append((job_id, wait))

    def savepoint_detached(
        self,
        job_id: str,
        target: str | None,
        fmt: str,
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        if self.refusal is not None:
            raise self.refusal
        trigger = trigger_id or f"{len(self.triggers):032x}"
        self.triggers[trigger] = TriggerResult(False)
        self.asked.append((job_id, target, fmt, ttl))
        return trigger

    def trigger_result(self, job_id: str, trigger_id: str) -> TriggerResult | None:
        return self.triggers.get(trigger_id)


@contextlib.contextmanager
def serving(jobs: JobsDouble, **settings: Any) -> Iterator[str]:
    """The application over ``jobs``, served on a free port of 127.0.0.1; its base URL."""
    app = create_app(
        cast(JobClient, jobs),
        WebSettings(version="2.3.0", allowed_hosts=("127.0.0.1",), **settings),
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def ask(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    """The status and JSON body of one request (``body`` sent as JSON)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _jobs() -> JobsDouble:
    return JobsDouble(
        JobStatus(job_id=RUNNING, name="counts", state=JobState.RUNNING),
        JobStatus(job_id=FINISHED, name="enrich", state=JobState.FINISHED, end_time=time.time()),
    )


def test_flinks_documents_come_from_the_job_clients_answers() -> None:
    with serving(_jobs()) as base:
        status, body = ask(f"{base}/v1/jobs/overview")
        assert status == 200
        assert {(j["jid"], j["name"], j["state"]) for j in body["jobs"]} == {
            (RUNNING, "counts", "RUNNING"),
            (FINISHED, "enrich", "FINISHED"),
        }
        assert ask(f"{base}/jobs/{RUNNING}/status") == (200, {"status": "RUNNING"})


def test_an_unknown_job_is_flinks_404() -> None:
    with serving(_jobs()) as base:
        status, body = ask(f"{base}/jobs/{UNKNOWN}/status")
    assert status == 404
    assert body["errors"][0] == f"Job {UNKNOWN} not found"


def test_a_cancel_reaches_the_client_once_and_only_where_it_may() -> None:
    jobs = _jobs()
    with serving(jobs) as base:
        assert ask(f"{base}/jobs/{RUNNING}", "PATCH") == (202, {})
        status, body = ask(f"{base}/jobs/{FINISHED}", "PATCH")
        assert status == 409 and "already reached another terminal state (FINISHED)" in str(
            body["errors"]
        )
        jobs.refusal = JobError("The job's driver did not answer.")
        status, body = ask(f"{base}/jobs/{RUNNING}", "PATCH")
        assert status == 409 and "The job's driver did not answer." in body["errors"][0]
    assert jobs.cancelled == [(RUNNING, False)]  # detached, as Flink's REST cancel is


def test_a_disabled_cancel_is_forbidden_and_never_reaches_the_client() -> None:
    jobs = _jobs()
    with serving(jobs, cancel_enabled=False) as base:
        status, body = ask(f"{base}/jobs/{RUNNING}", "PATCH")
    assert status == 403 and "web.cancel.enable" in body["errors"][0]
    assert jobs.cancelled == []


def test_a_savepoint_trigger_goes_from_in_progress_to_its_location_or_its_failure() -> None:
    jobs = _jobs()
    with serving(jobs) as base:
        body = {"target-directory": "/tmp/sp", "cancel-job": False}
        status, answer = ask(f"{base}/jobs/{RUNNING}/savepoints", "POST", body)
        assert status == 202
        trigger = answer["request-id"]
        polled = f"{base}/v1/jobs/{RUNNING}/savepoints/{trigger}"
        assert ask(polled) == (200, {"status": {"id": "IN_PROGRESS"}})
        jobs.triggers[trigger] = TriggerResult(True, True, {"path": "/tmp/sp/savepoint-1"})
        assert ask(polled) == (
            200,
            {"status": {"id": "COMPLETED"}, "operation": {"location": "/tmp/sp/savepoint-1"}},
        )
        jobs.triggers[trigger] = TriggerResult(True, False, error="the query failed")
        status, answer = ask(polled)
        assert status == 500 and "the query failed" in answer["errors"][0]
        other = "9" * 32
        status, answer = ask(f"{base}/jobs/{RUNNING}/savepoints/{other}")
        assert status == 404 and f"triggerId={other}" in answer["errors"][0]
        status, answer = ask(f"{base}/jobs/{UNKNOWN}/savepoints", "POST", body)
        assert status == 404
        jobs.refusal = JobError("Job is not running.")
        status, answer = ask(f"{base}/jobs/{RUNNING}/savepoints", "POST", body)
        assert status == 409 and answer["errors"] == ["Job is not running."]
    assert jobs.asked == [(RUNNING, "/tmp/sp", "CANONICAL", DETACHED_TTL)]  # detached, as Flink


def test_a_body_flink_would_refuse_never_reaches_the_client() -> None:
    jobs = _jobs()
    with serving(jobs) as base:
        status, answer = ask(f"{base}/jobs/{RUNNING}/savepoints", "POST", {"cancel-job": "yes"})
        assert status == 400 and "SavepointTriggerRequestBody" in answer["errors"][0]
        status, answer = ask(f"{base}/jobs/{RUNNING}/savepoints", "POST", {"formatType": "X"})
        assert status == 400
    assert jobs.asked == []


def test_uploads_are_refused_while_the_server_takes_no_programs() -> None:
    with serving(_jobs()) as base:
        upload = {"name": "job.py", "archive": ""}
        status, answer = ask(f"{base}/flinkish/jars/upload", "POST", upload)
    assert status == 404 and "web.submit.enable" in answer["errors"][0]


def test_a_control_answer_for_what_is_no_trigger_id_is_a_404() -> None:
    with serving(_jobs()) as base:
        status, answer = ask(f"{base}/flinkish/registry/jobs/{RUNNING}/control/not-a-trigger")
    assert status == 404 and "There is no request not-a-trigger" in answer["errors"][0]
