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

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.errors import JobError
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


def ask(url: str, method: str = "GET") -> tuple[int, Any]:
    """The status and JSON body of one request."""
    request = urllib.request.Request(url, method=method)
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
