"""Flink's answers: JSON bodies, and errors as ``{"errors": [...]}`` with Flink's status
codes (404 for an unknown path, method, job or trigger; 400 for a request that does not
match; 413 for a body too large; 409 when the job cannot do it now), never a traceback.

One owner for the headers every answer of ``flinkish web`` carries (:data:`SECURITY_HEADERS`)
and for the error body, which the HTTP protocol layer (:mod:`.protocol`), the guard
(:mod:`.security`) and the handlers all send. An error the job client raised travels whole
beside Flink's body, in the ``Flinkish-Error`` header (:mod:`flinkish_cli.rest.wire`), for
flinkish's own CLI."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from flinkish_cli.errors import FlinkishError
from flinkish_cli.rest.messages import Message
from flinkish_cli.rest.wire import ERROR_HEADER, error_header

JSON_TYPE = "application/json; charset=UTF-8"

#: Sent with every answer: never framed (clickjacking), no script but the page's own files,
#: no type sniffing, no referrer to other sites.
SECURITY_HEADERS: dict[str, str] = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class FlinkError(Exception):
    """An error answered as Flink's ``{"errors": [message]}`` with ``status``; ``cause``, the
    job client's error behind it, if any, goes whole in the ``Flinkish-Error`` header."""

    def __init__(self, status: int, message: str, cause: FlinkishError | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.cause = cause


def errors(
    status: int,
    *messages: str,
    headers: dict[str, str] | None = None,
    cause: FlinkishError | None = None,
) -> Response:
    """Flink's error body: exactly one key, ``errors``; ``cause`` in ``Flinkish-Error``."""
    if cause is not None:
        headers = {**(headers or {}), ERROR_HEADER: error_header(cause)}
    return JSONResponse({"errors": list(messages)}, status, headers, media_type=JSON_TYPE)


def ok(document: Any, status: int = 200) -> Response:
    return JSONResponse(document, status, media_type=JSON_TYPE)


def raw_error(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 error answer as bytes, for the protocol layer, which answers before
    any request exists (a malformed request line, headers too slow), then closes."""
    body = json.dumps({"errors": [message]}).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        f"Content-Type: {JSON_TYPE}",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in SECURITY_HEADERS.items()),
        "Cache-Control: no-store",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def route(message: Message, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    """The route serving ``message`` (its method and path, :mod:`flinkish_cli.rest.messages`)
    with ``endpoint``."""
    return Route(message.path, endpoint, methods=[message.method])
