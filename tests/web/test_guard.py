"""The guard (:class:`flinkish_cli.web.security.Guard`) at its seam: ASGI messages in, the
answer out, an application behind it that records whether it was reached. Fast; the same
rules over real HTTP and in a real browser are in ``test_security.py``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from flinkish_cli.web.security import Guard, split_host
from flinkish_cli.web.settings import WebSettings

SERVER = ("127.0.0.1", 8081)


class App:
    """An application that answers 200 and remembers each request it saw."""

    def __init__(self, read_body: bool = False) -> None:
        self.seen: list[dict[str, Any]] = []
        self.read_body = read_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.seen.append(scope)
        if self.read_body:
            while (await receive()).get("more_body"):
                pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def _call(
    guard: Guard,
    method: str = "GET",
    path: str = "/jobs",
    headers: dict[str, str] | None = None,
    body: list[bytes] | None = None,
    hang: bool = False,
) -> tuple[int, dict[str, str], Any]:
    """The guard's answer; ``hang``: the client never sends what follows ``body``."""
    raw_headers = [(k.lower().encode(), v.encode("latin-1")) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": method, "path": path, "headers": raw_headers,
             "server": SERVER, "scheme": "http", "query_string": b""}  # fmt: skip
    chunks = list(body or [b""])
    sent: list[dict] = []

    async def receive() -> dict:
        if not chunks:
            await asyncio.sleep(3600)  # a client that never sends the rest
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks) or hang}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    got = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], got, json.loads(answer) if answer else None


def _guard(app: App | None = None, **settings: Any) -> tuple[Guard, App]:
    app = app or App()
    return Guard(app, WebSettings(version="test", **settings)), app


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8081", 200),
        ("localhost", 200),
        ("LocalHost.:8081", 200),
        ("[::1]:8081", 200),
        ("127.8.9.10", 200),
        ("flink.internal", 200),  # configured
        ("evil.example:8081", 421),
        ("192.168.1.10:8081", 421),
        ("a b", 400),
        ("host:port", 400),
        ("user@127.0.0.1", 400),
    ],
)
def test_the_host_must_be_a_name_of_this_server(host: str, status: int) -> None:
    guard, app = _guard(allowed_hosts=("flink.internal",))
    got, _, body = _call(guard, headers={"Host": host})
    assert got == status
    assert bool(app.seen) is (status == 200)
    if status != 200:
        assert len(body["errors"]) == 1


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({}, True),  # no Origin, no Referer: a client that is not a browser page
        ({"Origin": "http://127.0.0.1:8081"}, True),
        ({"Referer": "http://127.0.0.1:8081/#/job/x"}, True),
        ({"Origin": "http://127.0.0.1:8082"}, False),  # another port is another origin
        ({"Origin": "https://127.0.0.1:8081"}, False),
        ({"Origin": "http://localhost:8081"}, False),  # not the name this request used
        ({"Origin": "null"}, False),
        ({"Referer": "http://evil.example/page"}, False),
        ({"Referer": "about:blank"}, False),
        ({"Origin": "http://grafana.example"}, True),  # web.access-control-allow-origin
    ],
)
def test_changes_only_from_the_servers_own_origin(headers: dict[str, str], allowed: bool) -> None:
    guard, app = _guard(allow_origin="http://grafana.example")
    for method in ("POST", "PATCH", "DELETE", "PUT"):
        status, _, _ = _call(guard, method, headers={"Host": "127.0.0.1:8081", **headers})
        assert (status == 200) is allowed and (status == 403) is not allowed
    assert len(app.seen) == (4 if allowed else 0)


def test_a_wildcard_cors_origin_reads_but_never_changes() -> None:
    guard, _ = _guard(allow_origin="*")
    other = {"Host": "127.0.0.1:8081", "Origin": "http://any.example"}
    status, headers, _ = _call(guard, "GET", headers=other)
    assert status == 200 and headers["access-control-allow-origin"] == "*"
    assert _call(guard, "POST", headers=other)[0] == 403


@pytest.mark.parametrize(
    ("content_type", "body", "allowed"),
    [
        (None, b"", True),
        ("application/json", b"{}", True),
        ("Application/JSON; charset=UTF-8", b"{}", True),
        ("text/plain", b"{}", False),
        ("text/plain", b"", False),
        ("application/x-www-form-urlencoded", b"a=b", False),
        ("multipart/form-data; boundary=x", b"--x--", False),
        (None, b"{}", False),
        ("application/jsonp", b"{}", False),
    ],
)
def test_a_body_is_json_or_nothing(content_type: str | None, body: bytes, allowed: bool) -> None:
    guard, _ = _guard(App(read_body=True))
    headers = {"Host": "localhost", "Content-Length": str(len(body))}
    if content_type:
        headers["Content-Type"] = content_type
    status, _, answer = _call(guard, "POST", headers=headers, body=[body])
    assert (status == 200) is allowed
    if not allowed:
        assert status == 403 and "application/json" in answer["errors"][0]


@pytest.mark.parametrize(
    "authorization",
    ["", "Bearer", "Bearer wrong", "s3cret", "Basic czNjcmV0", "Bearer s3cret\xff", "Bearer \xe9"],
)
def test_a_wrong_or_malformed_token_is_401(authorization: str) -> None:
    guard, app = _guard(token="s3cret")
    headers = {"Host": "localhost", "Authorization": authorization}
    status, got, answer = _call(guard, headers=headers)
    assert status == 401 and got["www-authenticate"].startswith("Bearer")
    assert "s3cret" not in json.dumps(answer) and app.seen == []
    assert _call(guard, headers={"Host": "localhost", "Authorization": "Bearer s3cret"})[0] == 200
    assert _call(guard, path="/assets/dashboard.js", headers={"Host": "localhost"})[0] == 200


def test_a_body_too_large_or_too_slow_or_misdeclared() -> None:
    guard, _ = _guard(App(read_body=True), max_body=1024, body_timeout=0.2)
    json_post = {"Host": "localhost", "Content-Type": "application/json"}
    assert _call(guard, "POST", headers={**json_post, "Content-Length": "2048"})[0] == 413
    assert _call(guard, "POST", headers={**json_post, "Content-Length": "12a"})[0] == 400
    slow = {**json_post, "Content-Length": "100"}
    status, headers, answer = _call(guard, "POST", headers=slow, body=[b"{"], hang=True)
    assert status == 408 and headers["connection"] == "close"
    assert "flinkish.web.body-timeout" in answer["errors"][0]


def test_every_answer_carries_the_security_headers_and_no_store_but_assets() -> None:
    guard, _ = _guard()
    for path, cached in [("/jobs", False), ("/", False), ("/assets/uPlot.min.css", True)]:
        _, headers, _ = _call(guard, path=path, headers={"Host": "localhost"})
        assert headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert ("cache-control" not in headers) is cached
        assert "access-control-allow-origin" not in headers
    _, headers, _ = _call(guard, headers={"Host": "evil.example"})  # refusals carry them too
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"


def test_a_preflight_is_granted_only_to_the_configured_origin() -> None:
    guard, app = _guard(allow_origin="http://grafana.example")
    ask = {"Host": "localhost", "Access-Control-Request-Method": "POST"}
    status, headers, _ = _call(
        guard, "OPTIONS", headers={**ask, "Origin": "http://grafana.example"}
    )
    assert status == 204 and "POST" in headers["access-control-allow-methods"]
    status, _, _ = _call(guard, "OPTIONS", headers={**ask, "Origin": "http://evil.example"})
    assert status == 200 and len(app.seen) == 1  # not granted here: the router's 404 answers


def test_split_host() -> None:
    assert split_host("LOCALHOST:8081") == ("localhost", 8081)
    assert split_host("[::1]") == ("::1", None)
    for bad in ("", ":80", "a/b", "h:99999", " x"):
        with pytest.raises(ValueError):
            split_host(bad)
