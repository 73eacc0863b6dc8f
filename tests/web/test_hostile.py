"""``flinkish web`` under hostile load, tried from an attacker's side on the same machine: a
real server on 127.0.0.1, raw sockets (no HTTP library between the attacker and the
server), a registry of RUNNING jobs whose drivers are
:class:`~tests.fixtures.fake_driver.FakeDriver` (one of them never answers, as a driver
stuck in a long batch).

Each attack is first what broke the server (a connection held for ever after an early
refusal; the cap then turning everyone away; forty follows or forty rescales taking the
threads every request is served on; a switched-off server rescaling; an upload unpacking
without bound), then refused; throughout, a well-formed ``GET /jobs/overview`` must still
be answered 200 within a second, and one SIGTERM must stop the server within its grace.
Every loop is bounded in count and in time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry.logs import log_path
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.web.flink_json import vertex_id
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flinkish_env import FLINKISH, FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

JOB = "a7" * 16  #: answers what reaches it
SILENT = "b8" * 16  #: never answers (a driver busy for an hour)
TOKEN = "hostile-test-token-0123456789"
TOKEN_ENV = {"FLINKISH_WEB_TOKEN": TOKEN}
WITH_TOKEN = ("-D", "flinkish.web.auth-token=${env:FLINKISH_WEB_TOKEN}")
FAST = ("-D", "flinkish.web.header-timeout=2 s", "-D", "flinkish.web.body-timeout=2 s")
#: How long a refused connection may stay open: the linger (≤ the 2 s body timeout) and slack.
CLOSED_WITHIN = 6.0


class SilentDriver(FakeDriver):
    """A driver that keeps its job RUNNING (heartbeats) but never takes a request."""

    def answer_pending(self) -> None:
        return


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    return FlinkishEnv.under(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def jobs(env: FlinkishEnv) -> Iterator[tuple[FakeDriver, FakeDriver]]:
    registry = JobRegistry.open(str(env.checkpoints))
    answering, silent = FakeDriver(registry, JOB), SilentDriver(registry, SILENT)
    env.logs.mkdir(exist_ok=True)
    for job in (JOB, SILENT):
        Path(log_path(str(env.logs), job)).write_text("driver started\nbatch 1 committed\n")
    yield answering, silent
    answering.close()
    silent.close()


@pytest.fixture(scope="module")
def web(env: FlinkishEnv, jobs: Any) -> Iterator[WebServer]:
    options = (*FAST, *WITH_TOKEN, "-D", "flinkish.web.max-connections=20")
    with running_web(env, *options, environ=TOKEN_ENV) as server:
        yield server


# -- a raw client ---------------------------------------------------------------------------
def _connect(web: WebServer, timeout: float = 5.0) -> socket.socket:
    host, port = web.address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def _head(method: str, path: str, headers: dict[str, str] | None = None, **more: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in {**(headers or {}), **more}.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _authorised(**headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", **headers}


def _read_head(sock: socket.socket, deadline: float) -> tuple[int, dict[str, str], bytes]:
    """The answer's status and headers (read before ``deadline``) and what followed them."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {data[:200]!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, rest


def _reply(sock: socket.socket, within: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """A whole answer with a Content-Length, read within ``within`` seconds."""
    deadline = time.monotonic() + within
    status, headers, body = _read_head(sock, deadline)
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes the connection within ``seconds`` (what it still sends is
    read and dropped)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def _overview_within_a_second(web: WebServer) -> None:
    """A well-formed request on a new connection is answered 200 before a 1 s deadline."""
    started = time.monotonic()
    with _connect(web, timeout=1.0) as sock:
        sock.sendall(_head("GET", "/jobs/overview", _authorised()))
        status, _, body = _reply(sock, within=1.0)
    assert status == 200, body
    assert time.monotonic() - started < 1.0
    assert {j["jid"] for j in json.loads(body)["jobs"]} >= {JOB, SILENT}


# -- the early refusals ---------------------------------------------------------------------
EARLY = {
    "413": ("POST", "/jobs/overview", _authorised(**{"Content-Length": "999999999"})),
    "403": ("POST", f"/jobs/{JOB}/stop", _authorised(Origin="http://evil.example")),
    "401": ("POST", f"/jobs/{JOB}/stop", {}),
    "404": ("POST", "/no/such/route", _authorised()),
}


def _refused_and_held(web: WebServer, case: str) -> tuple[socket.socket, int]:
    """A client that sends a refused request's head, reads the answer, sends one byte of
    the body (which cancelled uvicorn's keep-alive timer) and stays silent."""
    method, path, headers = EARLY[case]
    headers = {"Content-Type": "application/json", "Content-Length": "1000", **headers}
    sock = _connect(web)
    sock.sendall(_head(method, path, headers))
    status, _, _ = _reply(sock)
    with contextlib.suppress(OSError):  # closed already: refused, as it should be
        sock.sendall(b"{")
    return sock, status


@pytest.mark.parametrize("case", sorted(EARLY))
def test_a_connection_refused_before_its_body_is_not_held(web: WebServer, case: str) -> None:
    sock, status = _refused_and_held(web, case)
    with sock:
        assert status == int(case)
        assert _closed_within(sock, CLOSED_WITHIN), f"a {case} left its connection open"


def test_connections_held_after_refusals_do_not_turn_others_away(web: WebServer) -> None:
    held = []
    try:
        for _ in range(20):  # the cap
            sock, status = _refused_and_held(web, "401")
            held.append(sock)
            assert status == 401
        _overview_within_a_second(web)
    finally:
        for sock in held:
            sock.close()


def test_a_body_dripped_a_byte_at_a_time_is_cut_at_the_body_timeout(web: WebServer) -> None:
    headers = _authorised(**{"Content-Type": "application/json", "Content-Length": "64"})
    with _connect(web) as sock:
        sock.sendall(_head("POST", f"/jobs/{JOB}/checkpoints", headers))
        deadline = time.monotonic() + 10
        answer = b""
        for _ in range(60):  # a byte every 0.2 s: never silent for the 2 s body timeout
            if time.monotonic() > deadline:
                break
            try:
                sock.sendall(b" ")
                sock.settimeout(0.2)
                answer += sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if b"\r\n\r\n" in answer:
                break
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


# -- the low findings -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("Origin", f"http://{'127.0.0.1'}", "http://evil.example"),
        ("Content-Type", "application/json", "text/plain"),
        ("Host", "127.0.0.1", "evil.example"),
        ("Authorization", f"Bearer {TOKEN}", "Bearer wrong"),
    ],
)
def test_a_security_header_given_twice_is_refused(
    web: WebServer, jobs: Any, name: str, first: str, second: str
) -> None:
    answering, _ = jobs
    before = len(answering.requests)
    base = _authorised(**{"Content-Type": "application/json"})
    lines = [f"POST /jobs/{JOB}/checkpoints HTTP/1.1"]
    if name != "Host":
        lines.append("Host: 127.0.0.1")
    lines += [f"{k}: {v}" for k, v in base.items() if k != name]
    lines += [f"{name}: {first}", f"{name}: {second}", "Content-Length: 2"]
    with _connect(web) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n{}").encode())
        status, _, body = _reply(sock)
    assert status == 400, body
    if name != "Host":  # two Hosts: h11 refuses the request itself
        assert "more than once" in json.loads(body)["errors"][0]
    assert len(answering.requests) == before


def test_a_websocket_upgrade_is_guarded_like_any_request(web: WebServer) -> None:
    upgrade = {
        "Host": "evil.example",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }

    def asked(path: str) -> int:
        fields = "".join(f"{k}: {v}\r\n" for k, v in upgrade.items())
        with _connect(web) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\n{fields}\r\n".encode())
            return _reply(sock)[0]

    assert asked("/") == 421
    upgrade["Host"] = "127.0.0.1"
    assert asked("/jobs") == 401  # no token: the token's check was not skipped


@pytest.mark.parametrize("target", ["../../etc", "relative/dir", "/tmp/a\x00b", "/tmp/a\nb"])
def test_a_savepoint_target_that_is_relative_or_holds_control_characters_is_refused(
    web: WebServer, jobs: Any, env: FlinkishEnv, target: str
) -> None:
    answering, _ = jobs
    before = len(answering.requests)
    reply = web.request(
        "POST",
        f"/jobs/{JOB}/savepoints",
        body={"target-directory": target, "cancel-job": False},
        headers=_authorised(),
    )
    assert reply.status == 400, reply
    [message] = reply.json()["errors"]
    assert "target" in message.lower()
    assert len(answering.requests) == before


# -- rescales: a trigger, and the switches --------------------------------------------------
def _requirements(parallelism: int) -> dict[str, Any]:
    return {
        vertex_id(JOB, q): {"parallelism": {"lowerBound": 1, "upperBound": parallelism}}
        for q in ("counts", "raw")
    }


def test_a_rescale_is_answered_at_once_with_a_trigger_that_is_polled(
    web: WebServer, jobs: Any
) -> None:
    answering, _ = jobs
    reply = web.request(
        "PUT", f"/jobs/{JOB}/resource-requirements", body=_requirements(3), headers=_authorised()
    )
    assert reply.status == 200, reply
    trigger = reply.json()["request-id"]
    deadline = time.monotonic() + 20
    status = None
    while time.monotonic() < deadline:
        polled = web.get(f"/jobs/{JOB}/resource-requirements/{trigger}", headers=_authorised())
        assert polled.status == 200, polled
        status = polled.json()
        if status["status"]["id"] == "COMPLETED":
            break
        time.sleep(0.1)
    assert status is not None and status["status"]["id"] == "COMPLETED", status
    assert status["operation"]["savepoint"].endswith("-rescale")
    assert answering.rescaled_to == 3


@pytest.mark.parametrize(
    ("switch", "cancel", "rescale"),
    [("web.cancel.enable=false", False, False), ("web.rescale.enable=false", True, False)],
)
def test_a_switched_off_server_changes_no_job(
    env: FlinkishEnv, jobs: Any, switch: str, cancel: bool, rescale: bool
) -> None:
    answering, _ = jobs
    with running_web(env, "-D", switch) as web:
        before = len(answering.requests)
        features = web.get("/config").json()["features"]
        assert (features["web-cancel"], features["web-rescale"]) == (cancel, rescale)
        put = web.request("PUT", f"/jobs/{JOB}/resource-requirements", body=_requirements(4))
        assert put.status == 403 and "disabled" in put.json()["errors"][0], put
        changes = [
            ("PATCH", f"/jobs/{JOB}", None),
            ("POST", f"/jobs/{JOB}/stop", {"drain": False}),
            ("POST", f"/jobs/{JOB}/savepoints", {"cancel-job": True}),
        ]
        for method, path, body in changes if not cancel else ():  # else: it would end JOB
            reply = web.request(method, path, body=body)
            assert reply.status == 403, (path, reply)
        assert len(answering.requests) == before
        assert env.job(JOB)["state"] == JobState.RUNNING.value


# -- follows --------------------------------------------------------------------------------
def _follow(web: WebServer, job: str = JOB) -> tuple[socket.socket, int]:
    sock = _connect(web)
    sock.sendall(_head("GET", f"/flinkish/registry/jobs/{job}/log?follow=true", _authorised()))
    status, _, _ = _read_head(sock, time.monotonic() + 5)
    return sock, status


def test_follows_are_capped_and_end_when_their_clients_leave(env: FlinkishEnv, jobs: Any) -> None:
    options = (*WITH_TOKEN, "-D", "flinkish.web.max-follows=5")
    with running_web(env, *options, environ=TOKEN_ENV) as web:
        held = []
        try:
            for _ in range(5):
                sock, status = _follow(web)
                held.append(sock)
                assert status == 200
            sock, status = _follow(web)
            sock.close()
            assert status == 503
        finally:
            for sock in held:
                sock.close()
        deadline, status = time.monotonic() + 10, 503
        while status == 503 and time.monotonic() < deadline:  # the follows notice, and end
            sock, status = _follow(web)
            sock.close()
            if status == 503:
                time.sleep(0.1)
        assert status == 200


# -- the capstone ---------------------------------------------------------------------------
def _rescale_held(web: WebServer) -> tuple[socket.socket, int]:
    body = json.dumps(_requirements(5)).encode()
    headers = _authorised(**{"Content-Type": "application/json", "Content-Length": str(len(body))})
    sock = _connect(web)
    sock.sendall(_head("PUT", f"/jobs/{SILENT}/resource-requirements", headers) + body)
    status, _, _ = _reply(sock)
    return sock, status


def test_under_load_a_whole_request_is_answered_within_a_second_and_one_sigterm_stops_it(
    env: FlinkishEnv, jobs: Any
) -> None:
    grace = 5.0
    options = (
        *FAST, *WITH_TOKEN,
        "-D", "flinkish.web.max-connections=100",
        "-D", f"flinkish.web.shutdown-timeout={grace:g} s",
    )  # fmt: skip
    with running_web(env, *options, environ=TOKEN_ENV) as web, contextlib.ExitStack() as held:
        for i in range(110):  # early refusals whose clients hold on
            sock, status = _refused_and_held(web, ("413", "403", "401", "404")[i % 4])
            held.enter_context(sock)
            assert status in (413, 403, 401, 404)
        _overview_within_a_second(web)
        for _ in range(45):
            sock, status = _follow(web)
            held.enter_context(sock)
            assert status == 200
        _overview_within_a_second(web)
        for _ in range(40):
            sock, status = _rescale_held(web)
            held.enter_context(sock)
            assert status == 200
        _overview_within_a_second(web)
        started = time.monotonic()
        web.process.send_signal(signal.SIGTERM)
        try:
            web.process.wait(timeout=grace + 3)
        except subprocess.TimeoutExpired:
            pytest.fail(f"flinkish web did not stop within {grace + 3:g} s of one SIGTERM")
        assert time.monotonic() - started < grace + 3
        errors = web.process.stderr.read() if web.process.stderr else ""
        # uvicorn ends by the signal it stopped for, once stopped (as a shell expects)
        assert web.process.returncode in (0, -signal.SIGTERM), errors
        assert "Traceback" not in errors


# -- uploads and submitted programs ---------------------------------------------------------
def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def submitting(env: FlinkishEnv, jobs: Any) -> Iterator[WebServer]:
    options = (
        *WITH_TOKEN,
        "-D", "web.submit.enable=true",
        "-D", "flinkish.web.submit.warm-runner=false",
        "-D", "flinkish.web.session-cluster=sc://127.0.0.1:15002",
        "-D", "flinkish.web.upload-timeout=3 s",
    )  # fmt: skip
    with running_web(env, *options, environ=TOKEN_ENV) as server:
        yield server


def _upload(web: WebServer, archive: bytes) -> Any:
    import base64

    body = {"name": "job.py", "archive": base64.b64encode(archive).decode()}
    return web.request("POST", "/flinkish/jars/upload", body=body, headers=_authorised())


def _uploads(env: FlinkishEnv) -> list[Path]:
    return sorted(env.logs.glob(".upload-*"))


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ({"job.py": b"print(1)\n", "zeros.bin": bytes(100 << 20)}, "compress"),
        ({f"m{i}.py": b"x = 1\n" for i in range(5000)}, "entries"),
    ],
    ids=["a-zip-bomb", "too-many-entries"],
)
def test_an_upload_beyond_its_bounds_is_refused_and_leaves_nothing(
    submitting: WebServer, env: FlinkishEnv, entries: dict[str, bytes], words: str
) -> None:
    before = _uploads(env)
    archive = _zip(entries)
    assert len(archive) < 1 << 20  # within the request body's bound: the unpacking is the attack
    reply = _upload(submitting, archive)
    assert reply.status == 400, reply
    [message] = reply.json()["errors"]
    assert words in message
    assert _uploads(env) == before


def test_an_upload_that_is_not_run_is_removed_after_its_time(
    submitting: WebServer, env: FlinkishEnv
) -> None:
    reply = _upload(submitting, _zip({"job.py": b"print(1)\n"}))
    assert reply.status == 200, reply
    upload = env.logs / f".upload-{reply.json()['filename']}"
    assert upload.is_dir()
    deadline = time.monotonic() + 30
    while upload.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not upload.exists()


def test_uploads_are_refused_without_a_token_on_loopback_too(env: FlinkishEnv) -> None:
    process = subprocess.run(
        [FLINKISH, "web", "-D", "rest.bind-port=0", "-D", "web.submit.enable=true"],
        env=env.environ(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode != 0
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert any("web.submit.enable" in line and "flinkish.web.auth-token" in line for line in lines)
    assert "Traceback" not in process.stderr
    assert "flinkish web: http" not in process.stdout


def test_a_literal_token_in_the_configuration_file_is_warned_about(
    tmp_path: Path,
) -> None:
    env = FlinkishEnv.under(tmp_path)
    env.write_conf({"flinkish.web.auth-token": "written-in-the-file"})
    result = env.run("list")
    assert "flinkish.web.auth-token" in result.stderr
    assert "written-in-the-file" not in result.stderr + result.stdout


def test_requests_waiting_for_a_silent_driver_are_bounded_and_expired_ones_swept(
    web: WebServer, env: FlinkishEnv
) -> None:
    from flinkish_cli.client.asking import MAX_WAITING
    from flinkish_cli.rest.wire import TIMEOUT_HEADER

    job = "c9" * 16
    silent = SilentDriver(JobRegistry.open(str(env.checkpoints)), job)
    try:
        headers = _authorised(**{TIMEOUT_HEADER: "8"})  # each expires 8 s after it is sent

        def trigger() -> int:
            path = f"/jobs/{job}/checkpoints"
            return web.request("POST", path, body={}, headers=headers).status

        statuses = [trigger() for _ in range(MAX_WAITING + 1)]
        assert statuses == [202] * MAX_WAITING + [409]
        deadline, status = time.monotonic() + 30, 409
        while status == 409 and time.monotonic() < deadline:  # the expired ones are swept
            time.sleep(0.5)
            status = trigger()
        assert status == 202
        control = env.checkpoints / job / "_flinkish" / "control"
        assert len(list(control.glob("*.request.json"))) <= MAX_WAITING
    finally:
        silent.close()


def test_a_client_that_stops_reading_its_answer_is_cut_off(
    web: WebServer, env: FlinkishEnv
) -> None:
    job = "d0" * 16  # a log of 32 MiB, asked for whole and never read
    size = 32 << 20
    Path(log_path(str(env.logs), job)).write_bytes(b"x" * (size - 1) + b"\n")
    host, port = web.address.rsplit(":", 1)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(5)
        sock.connect((host, int(port)))
        sock.sendall(_head("GET", f"/flinkish/registry/jobs/{job}/log", _authorised()))
        time.sleep(4)  # the attack itself: 2 s (the body timeout) of not reading, and slack
        received, deadline = 0, time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 20)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            received += len(chunk)
    assert received < size  # cut off, not waited for


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to start two processes of another user (setpriv)",
)
def test_a_process_of_the_same_user_cannot_read_the_servers_environment() -> None:
    """What a submitted program would try: read ``/proc/<server>/environ`` as the server's
    own user. Both processes run as ``nobody``; the first makes itself non-dumpable as
    ``flinkish web`` does with uploads on."""
    import sys

    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    server = subprocess.Popen(
        [*as_nobody, sys.executable, "-c",
         "import sys, time; from flinkish_cli.web.server import not_dumpable; "
         "not_dumpable(); print('ready', flush=True); sys.stdin.read()"],
        env={"PATH": os.environ.get("PATH", ""), "SERVER_TOKEN": TOKEN,
             "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        reader = subprocess.run(
            [*as_nobody, sys.executable, "-c",
             f"print(open('/proc/{server.pid}/environ', 'rb').read())"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert reader.returncode != 0 and "Permission denied" in reader.stderr
        assert TOKEN not in reader.stdout
    finally:
        server.communicate(input="", timeout=30)
