"""Flink's REST API as ``flinkish web`` serves it over a registry, spoken to over real HTTP.

The registry holds jobs as their drivers record them (written here with the registry's own
API: a running job with two queries, a finished one, a failed one with its exception
history, and one whose status file is damaged). Every path answers the same with and
without Flink's ``/v1`` prefix, in Flink's field names; every bad request gets Flink's
``{"errors": [...]}`` with Flink's status and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.web.flink_json import vertex_id
from tests.fixtures.flinkish_env import FLINKISH, FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

RUNNING, FINISHED, FAILED = "a1" * 16, "b2" * 16, "c3" * 16
DAMAGED = "d4" * 16
NOW = time.time()


def _query(job_id: str, name: str, batches: int, state_rows: int = 0) -> QueryStatus:
    query = QueryStatus(name=name, checkpoint=f"/cp/{job_id}/{name}", active=True)
    for batch in range(batches):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(NOW - 60 + batch))
        query.record(
            Progress(
                batch_id=batch,
                timestamp=f"{stamp}.000Z",
                input_rows=10 + batch,
                input_rows_per_second=5.0,
                processed_rows_per_second=7.5,
                duration_ms=100 * (batch + 1),
                state_rows=state_rows,
                state_bytes=1000 * state_rows,
                lag=3.0 if name == "counts" else None,
            )
        )
    return query


@pytest.fixture(scope="module")
def registry_env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    root = tmp_path_factory.mktemp("web")
    flinkish_env = FlinkishEnv.under(root)
    registry = JobRegistry.open(str(flinkish_env.checkpoints))
    running = JobStatus(
        job_id=RUNNING,
        name="orders",
        state=JobState.RUNNING,
        start_time=NOW - 120,
        heartbeat=NOW + 3600,  # alive for as long as the test runs
        pid=4242,
        parallelism=2,
        restarts=1,
        restored_from="/sp/savepoint-a1a1a1-000000000001",
    )
    running.queries = {"counts": _query(RUNNING, "counts", 3, 7), "raw": _query(RUNNING, "raw", 2)}
    running.remember_failure("ValueError: bad row\n  at job.py:3", NOW - 90, 16, "counts")
    finished = JobStatus(
        job_id=FINISHED, name="backfill", state=JobState.FINISHED, start_time=NOW - 600,
        end_time=NOW - 500, pid=1,
    )  # fmt: skip
    failed = JobStatus(
        job_id=FAILED, name="enrich", state=JobState.FAILED, start_time=NOW - 300,
        end_time=NOW - 200, pid=2, failure_cause="RuntimeError: gone",
    )  # fmt: skip
    for number in range(3):
        failed.remember_failure(f"RuntimeError: failure {number}", NOW - 250 + number, 16)
    for status in (running, finished, failed):
        registry.write(status)
    damaged = flinkish_env.checkpoints / DAMAGED / "_flinkish" / "status.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"job_id": "not a job", "state": "RUNNING"')
    return flinkish_env


@pytest.fixture(scope="module")
def web(registry_env: FlinkishEnv):
    with running_web(registry_env, "-D", "rest.server.max-content-length=4096") as server:
        yield server


def _ok(web: WebServer, path: str) -> dict:
    reply = web.get(path)
    assert reply.status == 200, (path, reply)
    assert reply.headers["content-type"].startswith("application/json")
    versioned = web.get(f"/v1{path}")
    assert versioned.status == 200 and versioned.json().keys() == reply.json().keys()
    return reply.json()


def test_job_list_and_overview_in_flinks_fields(web: WebServer) -> None:
    jobs = {j["jid"]: j for j in _ok(web, "/jobs/overview")["jobs"]}
    assert set(jobs) == {RUNNING, FINISHED, FAILED}, "the damaged job never hides the others"
    orders = jobs[RUNNING]
    assert orders["name"] == "orders" and orders["state"] == "RUNNING"
    assert orders["end-time"] == -1 and orders["start-time"] == int((NOW - 120) * 1000)
    assert orders["tasks"]["total"] == 2 and orders["tasks"]["running"] == 2
    assert jobs[FINISHED]["state"] == "FINISHED" and jobs[FINISHED]["end-time"] > 0
    ids = {j["id"]: j["status"] for j in _ok(web, "/jobs")["jobs"]}
    assert ids == {RUNNING: "RUNNING", FINISHED: "FINISHED", FAILED: "FAILED"}
    overview = _ok(web, "/overview")
    assert (overview["jobs-running"], overview["jobs-finished"], overview["jobs-failed"]) == (
        1,
        1,
        1,
    )
    config = _ok(web, "/config")
    assert config["features"] == {
        "web-submit": False, "web-cancel": True, "web-rescale": True, "web-history": False,
    }  # fmt: skip
    assert config["refresh-interval"] == 3000


def test_a_job_its_checkpoints_and_its_exceptions(web: WebServer) -> None:
    job = _ok(web, f"/jobs/{RUNNING}")
    assert job["jid"] == RUNNING and job["state"] == "RUNNING" and job["isStoppable"] is True
    assert sorted(v["name"] for v in job["vertices"]) == ["counts", "raw"]
    assert all(len(v["id"]) == 32 and v["parallelism"] == 2 for v in job["vertices"])
    assert job["status-counts"]["RUNNING"] == 2 and job["timestamps"]["RUNNING"] > 0
    assert _ok(web, f"/jobs/{RUNNING}/status") == {"status": "RUNNING"}

    stats = _ok(web, f"/jobs/{RUNNING}/checkpoints")
    history = stats["history"]
    assert [(c["query"], c["id"]) for c in history][:1] == [("counts", 2)]  # newest first
    assert {(c["query"], c["id"]) for c in history[1:3]} == {("counts", 1), ("raw", 1)}
    assert len(history) == 5
    assert all(c["@class"] == "completed" and c["status"] == "COMPLETED" for c in history)
    assert stats["counts"]["completed"] == 3 + 2 and stats["counts"]["restored"] == 1
    assert stats["latest"]["completed"]["end_to_end_duration"] == 300
    assert stats["latest"]["restored"]["external_path"].endswith("000000000001")
    assert stats["summary"]["end_to_end_duration"]["max"] == 300
    newest = stats["latest"]["completed"]
    assert (newest["state_size"], newest["state_rows"], newest["lag"]) == (7000, 7, 3.0)

    failures = _ok(web, f"/jobs/{FAILED}/exceptions")["exceptionHistory"]["entries"]
    assert [e["stacktrace"] for e in failures] == [f"RuntimeError: failure {n}" for n in (2, 1, 0)]
    assert failures[0]["exceptionName"] == "RuntimeError"
    latest = _ok(web, f"/jobs/{RUNNING}/exceptions")["exceptionHistory"]["entries"][0]
    assert latest["taskName"] == "counts" and latest["exceptionName"] == "ValueError"
    assert _ok(web, f"/jobs/{FAILED}/exceptions?maxExceptions=1")["exceptionHistory"] == {
        "entries": [failures[0]], "truncated": True,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("GET", "/nope", None, 404, "Not found: /nope"),
        ("GET", "/v2/jobs", None, 404, "Not found: /v2/jobs"),
        ("DELETE", "/jobs", None, 404, "Not found: /jobs"),  # Flink's router: no 405
        ("GET", f"/jobs/{'e5' * 16}", None, 404, f"Job {'e5' * 16} not found"),
        ("GET", "/jobs/../../etc/passwd", None, 404, "Not found"),
        ("GET", "/jobs/xyz/checkpoints", None, 400, 'path parameter (jobid) from value "xyz"'),
        ("PATCH", f"/jobs/{'e5' * 16}?mode=cancel", {}, 404, "Job could not be found."),
        ("PATCH", f"/jobs/{FINISHED}?mode=cancel", {}, 409, "another terminal state (FINISHED)"),
        ("PATCH", f"/jobs/{RUNNING}?mode=stop", {}, 400, 'termination mode "stop"'),
        ("POST", f"/jobs/{RUNNING}/savepoints", "not json", 400, "SavepointTriggerRequestBody"),
        ("POST", f"/jobs/{RUNNING}/savepoints", {"evil": 1}, 400, "SavepointTriggerRequestBody"),
        ("POST", f"/jobs/{RUNNING}/savepoints", {"cancel-job": "yes"}, 400, "expected format"),
        ("POST", f"/jobs/{RUNNING}/stop", {"formatType": "ZIP"}, 400, "formatType must be one"),
        ("POST", f"/jobs/{RUNNING}/stop", {"triggerId": "1234"}, 400, "not 32 hexadecimal"),
        ("POST", f"/jobs/{FINISHED}/savepoints", {}, 409, "it is FINISHED"),
        ("GET", f"/jobs/{RUNNING}/savepoints/{'f' * 32}", None, 404, "no savepoint operation"),
        ("GET", f"/jobs/{RUNNING}/savepoints/../x", None, 404, "Not found"),
        ("GET", f"/jobs/{RUNNING}/checkpoints/nonsense", None, 404, "no checkpoint operation"),
        ("GET", f"/savepoint-disposal/{'0' * 32}", None, 404, "Operation not found"),
        ("POST", "/savepoint-disposal", {}, 400, "SavepointDisposalRequest"),
        ("POST", "/savepoint-disposal", [1, 2], 400, "SavepointDisposalRequest"),
        ("POST", "/jars/upload", {}, 404, "Not found: /jars/upload"),  # web.submit.enable
        ("GET", f"/jobs/{DAMAGED}", None, 500, f"The status file of job {DAMAGED} is unreadable"),
        ("GET", f"/flinkish/jobs/{'e5' * 16}/series", None, 404, f"Job {'e5' * 16} not found"),
        ("GET", "/flinkish/jobs/<svg>/savepoints", None, 400, "path parameter (jobid)"),
        ("POST", "/flinkish/jobs", {}, 404, "Not found: /flinkish/jobs"),
        ("GET", "/assets/../../etc/passwd", None, 404, "Not found"),
        ("GET", "/assets/nope.js", None, 404, "Not found"),
    ],
)
def test_bad_requests_get_flinks_errors(web: WebServer, method, path, body, status, message):
    raw = body.encode() if isinstance(body, str) else None
    reply = web.request(method, path, body=None if raw else body, raw=raw)
    assert reply.status == status, reply
    document = reply.json()
    assert list(document) == ["errors"] and message in document["errors"][0], document
    assert "Traceback" not in reply.body.decode()


def test_oversized_and_lying_requests_are_refused(web: WebServer) -> None:
    big = json.dumps({"target-directory": "x" * 10_000}).encode()
    reply = web.request("POST", f"/jobs/{RUNNING}/savepoints", raw=big)
    assert reply.status == 413 and "rest.server.max-content-length" in reply.json()["errors"][0]
    # a body longer than its Content-Length says is cut there; a shorter one is not waited for
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(web.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            f"POST /jobs/{RUNNING}/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
            "{}".encode()
        )
        sock.shutdown(socket.SHUT_WR)
        answer = sock.recv(65536).decode(errors="replace")
    assert "Traceback" not in answer
    assert web.get("/jobs/overview").status == 200, "the server still serves"


def test_a_job_configuration_never_shows_a_secret(registry_env: FlinkishEnv, web) -> None:
    from flinkish_cli.registry import program
    from flinkish_cli.registry.program import ProgramRecord

    registry = JobRegistry.open(str(registry_env.checkpoints))
    conf = {"parallelism.default": "2", "s3.secret-key": "hunter2", "restart-strategy.type": "none"}
    code = registry_env.root / "job.zip"
    code.write_bytes(b"PK")
    program.keep(registry, RUNNING, ProgramRecord(kind="file", target="job.py", conf=conf), [code])
    config = _ok(web, f"/jobs/{RUNNING}/config")  # read afresh: the server keeps nothing
    assert config["jid"] == RUNNING and config["execution-config"]["job-parallelism"] == 2
    assert config["execution-config"]["restart-strategy"] == "none"
    assert "hunter2" not in json.dumps(config)


def test_off_loopback_it_needs_a_token_given_by_reference(registry_env: FlinkishEnv) -> None:
    refused = registry_env.run("web", "-D", "rest.bind-address=0.0.0.0", check=False)
    assert refused.returncode == 1 and "flinkish.web.auth-token" in refused.stderr
    assert "Traceback" not in refused.stderr
    token = "s3cr3t-t0ken-4-tests"
    options = ("-D", "rest.bind-address=0.0.0.0", "-D", "flinkish.web.auth-token=${env:WEB_TOKEN}")
    with running_web(registry_env, *options, environ={"WEB_TOKEN": token}) as web:
        web.url = web.url.replace("0.0.0.0", "127.0.0.1")
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            reply = web.get("/jobs/overview", headers=headers)
            assert reply.status == 401 and reply.headers["www-authenticate"].startswith("Bearer")
            assert token not in reply.body.decode()
        good = {"Authorization": f"Bearer {token}"}
        assert web.get("/jobs/overview", headers=good).status == 200
        assert web.get("/metrics", headers=good).status == 200
        assert web.get("/metrics").status == 401
        # what `ps` shows of the server while it serves: the reference, never the token
        command_line = Path(f"/proc/{web.process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"flinkish.web.auth-token=${env:WEB_TOKEN}" in command_line
        assert not any(token.encode() in part for part in command_line), command_line
        web.process.terminate()
        out, err = web.process.communicate(timeout=15)
    assert token not in out + err


def test_metrics_carry_flinks_names_and_labels(web: WebServer) -> None:
    reply = web.get("/metrics")
    assert reply.status == 200 and reply.headers["content-type"].startswith("text/plain")
    text = reply.body.decode()
    labels = f'job_id="{RUNNING}",job_name="orders"'
    assert f"flink_jobmanager_job_numRestarts{{{labels}}} 1.0" in text
    assert f"flink_jobmanager_job_numberOfCompletedCheckpoints{{{labels}}} 5.0" in text
    assert f"flink_jobmanager_job_lastCheckpointDuration{{{labels}}} 300.0" in text
    task = f'query="counts",task_id="{vertex_id(RUNNING, "counts")}",task_name="counts"'
    assert f"flink_taskmanager_job_task_numRecordsInPerSecond{{{labels},{task}}} 5.0" in text
    assert f'flinkish_job_state{{job_id="{FAILED}",job_name="enrich",state="FAILED"}} 1.0' in text
    assert "flinkish_registry_up 1.0" in text
    assert f"flink_jobmanager_job_lastCheckpointSize{{{labels}}} 7000.0" in text
    assert f'flinkish_query_records_lag_max{{{labels},query="counts"}} 3.0' in text
    assert f'flinkish_query_records_lag_max{{{labels},query="raw"}}' not in text


def test_other_commands_never_load_the_web_framework(registry_env: FlinkishEnv) -> None:
    for args in (["--help"], ["list", "-a"], ["savepoint", "list"]):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "flinkish_cli", *args],
            env=registry_env.environ(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        imported = {
            line.split("|")[-1].strip().split(".")[0]
            for line in result.stderr.splitlines()
            if "|" in line
        }
        assert "click" in imported, result.stderr[-2000:]
        assert not imported & {"starlette", "uvicorn", "prometheus_client", "pyspark"}, args
    assert Path(FLINKISH).exists()
