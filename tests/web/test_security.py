"""``flinkish web`` tried as an attacker would, on its default 127.0.0.1 without a token: a
page of another origin in a real browser (headless Chromium) forges requests and frames the
dashboard; raw sockets send rebinding Hosts, malformed tokens and requests, and hold
hundreds of connections open with headers that never finish.

The job is a live job's control channel (:class:`~tests.fixtures.fake_driver.FakeDriver`
answers what reaches it, as the driver does), and the savepoint is a real one, so "nothing
changed" is checked where it would show: no control request reached the job, it is still
RUNNING, no directory was written, the savepoint and its record are as they were.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry.history import SavepointHistory, SavepointRecord, SavepointState, Trigger
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.savepoints.create import take_savepoint
from flinkish_cli.storage import LocalStorage
from tests.fixtures.browser import chromium
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web
from tests.savepoints.checkpoints import fake_checkpoint

JOB = "5e" * 16
ATTACKER = Path(__file__).with_name("attacker")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    root = tmp_path_factory.mktemp("security")
    return FlinkishEnv.under(root)


@pytest.fixture(scope="module")
def job(env: FlinkishEnv) -> Iterator[FakeDriver]:
    driver = FakeDriver(JobRegistry.open(str(env.checkpoints)), JOB)
    yield driver
    driver.close()


@pytest.fixture(scope="module")
def savepoint(env: FlinkishEnv, job: FakeDriver) -> str:
    """A real savepoint of the job, recorded in its history."""
    storage = LocalStorage(str(env.root))
    checkpoint = fake_checkpoint(env.checkpoints / JOB / "counts", committed=1)
    path = take_savepoint(
        storage, {"counts": str(checkpoint)}, storage, str(env.savepoints), JOB, "job", "4.3.0"
    )
    record = SavepointRecord(JOB, Trigger.MANUAL, SavepointState.COMPLETED, path)
    SavepointHistory(job.registry).record(record)
    return path


@pytest.fixture(scope="module")
def web(env: FlinkishEnv, job: FakeDriver) -> Iterator[WebServer]:
    options = ("-D", "flinkish.web.header-timeout=2 s", "-D", "flinkish.web.body-timeout=2 s")
    with running_web(env, *options) as server:
        yield server


@pytest.fixture(scope="module")
def attacker_site() -> Iterator[str]:
    """The attacker's own server: another origin (``localhost`` and another port)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ATTACKER))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}"
    server.shutdown()


def _raw(web: WebServer, data: bytes, timeout: float = 10) -> bytes:
    """What the server answers to ``data`` on a connection of its own, until it closes."""
    host, port = web.address.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and _complete(answer):
                break
    return answer


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _status_and_errors(answer: bytes) -> tuple[int, list[str]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)["errors"]


def _request(path: str, host: str, *headers: str, method: str = "GET", body: str = "") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *headers]
    if body:
        lines.append(f"Content-Length: {len(body.encode())}")
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


def _job_untouched(job: FakeDriver, env: FlinkishEnv, savepoint: str) -> None:
    job.answer_pending()  # anything that reached the control channel is in job.requests now
    assert job.requests == []
    assert job.registry.get(JOB).state is JobState.RUNNING
    assert (Path(savepoint) / "_metadata").is_file()
    [record] = SavepointHistory(job.registry).of_job(JOB)
    assert record.state is SavepointState.COMPLETED


# -- cross-site requests, in a real browser ---------------------------------------------------
def test_a_page_of_another_origin_changes_nothing(
    web: WebServer, job: FakeDriver, env: FlinkishEnv, savepoint: str, attacker_site: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    forged = env.root / "forged-savepoints"
    query = f"target={web.url}&job={JOB}&savepoint={savepoint}&directory={forged}"
    with chromium() as browser:
        browser.get(f"{attacker_site}/attack.html?{query}")
        WebDriverWait(browser, 60).until(lambda b: b.title == "settled")
        results = json.loads(browser.find_element(By.TAG_NAME, "body").get_attribute(
            "data-results"
        ))  # fmt: skip
        # What needs a preflight never left the browser: this server grants no CORS.
        assert "json fetch blocked" in results and "patch blocked" in results
        # The framed dashboard was not rendered (X-Frame-Options, frame-ancestors).
        browser.switch_to.frame(browser.find_element(By.ID, "framed"))
        assert browser.find_elements(By.ID, "refreshed") == []
        assert "flinkish" not in browser.page_source
        browser.switch_to.default_content()
    _job_untouched(job, env, savepoint)
    assert not forged.exists()


def test_forgeries_get_403_with_flinks_error_json_and_clients_without_a_page_still_act(
    web: WebServer, job: FakeDriver, env: FlinkishEnv, savepoint: str
) -> None:
    host = web.address
    other = "Origin: http://localhost:1"
    forgeries = [
        _request(f"/jobs/{JOB}/stop", host, other, method="POST"),
        _request(f"/jobs/{JOB}/stop", host, "Origin: null", method="POST"),
        _request(f"/jobs/{JOB}/stop", host, "Referer: http://evil.example/x", method="POST"),
        _request(
            f"/v1/jobs/{JOB}/savepoints",
            host,
            "Content-Type: text/plain",
            method="POST",
            body=json.dumps({"target-directory": str(env.root / "forged")}),
        ),
        _request(
            "/savepoint-disposal",
            host,
            "Content-Type: application/x-www-form-urlencoded",
            method="POST",
            body="a=b",
        ),
        _request(f"/jobs/{JOB}?mode=cancel", host, other, method="PATCH"),
        _request(
            f"/jobs/{JOB}/stop",
            host,
            "Origin: http://localhost:1",
            "Content-Type: application/json",
            method="POST",
            body="{}",
        ),
    ]
    for forgery in forgeries:
        status, errors = _status_and_errors(_raw(web, forgery))
        assert status == 403, forgery
        assert len(errors) == 1 and ("Cross-site" in errors[0] or "application/json" in errors[0])
    _job_untouched(job, env, savepoint)
    assert not (env.root / "forged").exists()
    # The server's own origin, and a client that is no browser page (no Origin), still act:
    own = f"Origin: {web.url}"
    json_type = "Content-Type: application/json; charset=UTF-8"
    answer = _raw(web, _request(f"/jobs/{JOB}/checkpoints", host, own, json_type,
                                method="POST", body="{}"))  # fmt: skip
    assert b" 202 " in answer.split(b"\r\n")[0]
    answer = _raw(web, _request(f"/jobs/{JOB}/checkpoints", host, json_type, method="POST"))
    assert b" 202 " in answer.split(b"\r\n")[0]
    job.answer_pending()
    assert [r.action for r in job.requests] == ["checkpoint", "checkpoint"]
    job.requests.clear()


# -- names the server is known by ---------------------------------------------------------------
@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "10.0.0.7"])
def test_a_rebinding_host_is_refused_before_anything_is_read(web: WebServer, host: str) -> None:
    port = web.address.split(":")[1]
    status, errors = _status_and_errors(
        _raw(web, _request("/jobs/overview", host.format(port=port)))
    )
    assert status == 421
    assert "flinkish.web.allowed-hosts" in errors[0] and JOB not in errors[0]


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "127.0.0.2"]
)
def test_the_servers_own_names_are_served(web: WebServer, host: str) -> None:
    port = web.address.split(":")[1]
    answer = _raw(web, _request("/jobs/overview", host.format(port=port)))
    assert answer.startswith(b"HTTP/1.1 200") and JOB.encode() in answer


def test_a_configured_name_is_served(env: FlinkishEnv) -> None:
    options = ("-D", "flinkish.web.allowed-hosts=flink.example.internal, other.example")
    with running_web(env, *options) as web:
        answer = _raw(web, _request("/jobs/overview", "flink.example.internal:8081"))
        assert answer.startswith(b"HTTP/1.1 200")
        assert _status_and_errors(_raw(web, _request("/jobs", "third.example")))[0] == 421


# -- headers -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", ["/", "/assets/dashboard.js", "/jobs/overview", f"/jobs/{JOB}", "/metrics", "/nope"]
)
def test_every_answer_carries_the_headers_a_dashboard_should_send(
    web: WebServer, path: str
) -> None:
    reply = web.get(path)
    headers = {k.lower(): v for k, v in reply.headers.items()}
    assert headers["x-frame-options"] == "DENY"
    policy = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert "access-control-allow-origin" not in headers  # no CORS unless configured
    if not path.startswith("/assets/"):
        assert headers["cache-control"] == "no-store"


def test_cors_only_as_configured_with_flinks_key(env: FlinkishEnv, job: FakeDriver) -> None:
    dashboard = "http://grafana.example:3000"
    with running_web(env, "-D", f"web.access-control-allow-origin={dashboard}") as web:
        reply = web.get("/jobs/overview", headers={"Origin": dashboard})
        assert reply.headers["access-control-allow-origin"] == dashboard
        preflight = web.request(
            "OPTIONS", f"/jobs/{JOB}/checkpoints",
            headers={"Origin": dashboard, "Access-Control-Request-Method": "POST"},
        )  # fmt: skip
        assert preflight.status == 204
        assert "POST" in preflight.headers["access-control-allow-methods"]
        acted = web.request("POST", f"/jobs/{JOB}/checkpoints", {}, headers={"Origin": dashboard})
        assert acted.status == 202
        refused = web.request(
            "POST", f"/jobs/{JOB}/stop", {}, headers={"Origin": "http://x.example"}
        )
        assert refused.status == 403
    job.answer_pending()
    assert [r.action for r in job.requests] == ["checkpoint"]
    job.requests.clear()


# -- malformed requests and tokens ----------------------------------------------------------------
def test_malformed_tokens_headers_and_request_lines_get_400_or_401_never_500(
    env: FlinkishEnv,
) -> None:
    token = "t0ken-for-malformed-tests"
    options = ("-D", "flinkish.web.auth-token=${env:WEB_TOKEN}")
    with running_web(env, *options, environ={"WEB_TOKEN": token}) as web:
        host = f"Host: {web.address}"
        cases = [
            (
                b"GET /jobs HTTP/1.1\r\n"
                + host.encode()
                + b"\r\nAuthorization: Bearer \xff\xfe\x80\r\n\r\n",
                401,
            ),
            (
                b"GET /jobs HTTP/1.1\r\n" + host.encode() + b"\r\nAuthorization: \xc3\xa9\r\n\r\n",
                401,
            ),
            (b"GET /jobs HTTP/1.1\r\n" + host.encode() + b"\r\nAuthorization: Bearer\r\n\r\n", 401),
            (b"GARBAGE\r\n\r\n", 400),
            (b"GET /jo\xffbs HTTP/1.1\r\n" + host.encode() + b"\r\n\r\n", 400),
            (b"GET /jobs HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),
            (b"GET /jobs HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            (b"GET /jobs HTTP/1.1\r\n" + host.encode() + b"\r\nX: a\x00b\r\n\r\n", 400),
            (b"POST /jobs HTTP/1.1\r\n" + host.encode() + b"\r\nContent-Length: ab\r\n\r\n", 400),
            (b"GET /jobs HTTP/1.1\r\n" + host.encode() + b"\r\nX" * 70000 + b"\r\n\r\n", 400),
        ]
        for data, expected in cases:
            status, errors = _status_and_errors(_raw(web, data))
            assert (status, len(errors)) == (expected, 1), data[:80]
            assert token not in errors[0]
        good = f"Authorization: Bearer {token}"
        assert _raw(web, _request("/jobs", web.address, good)).startswith(b"HTTP/1.1 200")
        web.process.terminate()
        _, logged = web.process.communicate(timeout=15)
    assert "Traceback" not in logged and "Internal" not in logged


def test_a_body_that_never_arrives_gets_408(web: WebServer) -> None:
    head = _request(f"/jobs/{JOB}/checkpoints", web.address, "Content-Type: application/json",
                    "Content-Length: 100", method="POST")  # fmt: skip
    status, errors = _status_and_errors(_raw(web, head + b'{"checkpointType"'))
    assert status == 408 and "flinkish.web.body-timeout" in errors[0]


# -- slow clients ---------------------------------------------------------------------------------
def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _held(web: WebServer, clients: list[socket.socket]) -> int:
    """How many of ``clients``' connections the server process has accepted and still holds.

    Matched by socket inode in ``/proc/net/tcp``: the server's end of each connection has the
    server's port as local port and the client's port as remote port. Counting only these keeps
    the figure free of whatever else the server opens or closes meanwhile.
    """
    held = set()
    for name in os.listdir(f"/proc/{web.process.pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{web.process.pid}/fd/{name}")
            if target.startswith("socket:["):
                held.add(target[8:-1])
    ports = {sock.getsockname()[1] for sock in clients if sock.fileno() >= 0}
    server_port = int(web.address.rsplit(":", 1)[1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if (int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) in ports
                and inode in held):  # fmt: skip
            count += 1
    return count


def _wait_until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within 30 s"
        time.sleep(0.05)


def _probe(web: WebServer) -> float:
    """Seconds until a whole request on a new connection is answered."""
    started = time.monotonic()
    answer = _raw(web, _request("/jobs/overview", web.address))
    assert answer.startswith(b"HTTP/1.1 200")
    return time.monotonic() - started


def _slow_connections(web: WebServer, count: int) -> list[socket.socket]:
    host, port = web.address.split(":")
    slow = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(b"GET /jobs/overview HTTP/1.1\r\nHo")
        slow.append(sock)
    return slow


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (after a 408, or silently)."""
    sock.settimeout(0)
    try:
        while sock.recv(4096):  # the 408's bytes, if any, before the close
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def test_300_slow_connections_neither_block_others_nor_stay_open(env: FlinkishEnv) -> None:
    # The header deadline is longer than opening 300 connections takes on a loaded machine, so
    # the server must hold all of them at once before the first one's deadline passes.
    with running_web(env, "-D", "flinkish.web.header-timeout=15 s") as web:
        before = _open_fds(web.process.pid)
        slow = _slow_connections(web, 300)
        try:
            _wait_until(lambda: _held(web, slow) == 300)  # it holds them all
            # Others are answered meanwhile (the median of five, each on a connection of its own).
            assert statistics.median(_probe(web) for _ in range(5)) < 1.0
            # Sending a byte now and then does not keep a connection: its headers have a deadline.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(_closed_by_server(s) for s in slow):
                for sock in slow:
                    with contextlib.suppress(OSError):
                        sock.send(b"s")
                time.sleep(0.2)
            assert all(_closed_by_server(s) for s in slow)
        finally:
            for sock in slow:
                sock.close()
        _wait_until(lambda: _open_fds(web.process.pid) <= before + 5)


def test_past_the_connection_cap_the_slowest_are_closed_first(env: FlinkishEnv) -> None:
    with running_web(env, "-D", "flinkish.web.max-connections=40") as web:
        before = _open_fds(web.process.pid)
        slow = _slow_connections(web, 100)
        try:
            assert statistics.median(_probe(web) for _ in range(5)) < 1.0
            _wait_until(lambda: _open_fds(web.process.pid) <= before + 41)
            assert sum(_closed_by_server(s) for s in slow) >= 60
        finally:
            for sock in slow:
                sock.close()
