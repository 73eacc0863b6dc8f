"""``-m host:port`` names flinkish web, which names its session cluster: asked over real
HTTP of a real ``flinkish web``; every other answer is one clear error."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.submission.endpoint import session_cluster
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import running_web

SESSION = "sc://127.0.0.1:15777"


def test_flinkish_web_names_its_session_cluster(flinkish_env: FlinkishEnv) -> None:
    option = ("-D", f"flinkish.web.session-cluster={SESSION}")
    with running_web(flinkish_env, *option) as web:
        assert session_cluster(web.address) == session_cluster(web.address, None)
        assert session_cluster(web.address).master == SESSION
        assert session_cluster(web.address).notice is None


def test_an_endpoint_without_a_session_cluster(flinkish_env: FlinkishEnv) -> None:
    with running_web(flinkish_env) as web, pytest.raises(JobError) as error:
        session_cluster(web.address)
    assert "fronts no session cluster" in error.value.message
    assert "start-cluster.sh --session" in (error.value.hint or "")


def test_a_token_protected_endpoint(flinkish_env: FlinkishEnv) -> None:
    options = ("-D", f"flinkish.web.session-cluster={SESSION}")
    options += ("-D", "flinkish.web.auth-token=${env:WEB_TOKEN}")
    with running_web(flinkish_env, *options, environ={"WEB_TOKEN": "tok-123"}) as web:
        with pytest.raises(JobError, match="needs its token"):
            session_cluster(web.address)
        with pytest.raises(JobError, match="needs its token"):
            session_cluster(web.address, "wrong")
        assert session_cluster(web.address, "tok-123").master == SESSION


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_nothing_listening() -> None:
    port = _free_port()
    with pytest.raises(JobError) as error:
        session_cluster(f"127.0.0.1:{port}")
    assert f"Nothing answers at 127.0.0.1:{port}" in error.value.message
    assert "sc://host:port" in (error.value.hint or "")


@pytest.fixture
def other_http_server() -> Iterator[str]:
    """Some other REST endpoint (the standard library's file server)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_another_rest_endpoint_is_not_taken_for_flinkish_web(other_http_server: str) -> None:
    with pytest.raises(JobError, match="answers HTTP 404 to /flinkish/cluster: it is not"):
        session_cluster(other_http_server)
