"""The guard in front of every route of ``flinkish web``: what a request must be before any
handler sees it, and the headers every answer carries.

A server on ``127.0.0.1`` is reachable by every page the user's browser opens, so the guard
refuses, in this order, each with Flink's error JSON:

1. **A name the server is not known by** (421): the ``Host`` must be the address the
   connection arrived at, the bound address, ``rest.address``, ``localhost``, a loopback
   address, or a name in ``flinkish.web.allowed-hosts``. A DNS-rebinding page reaches the
   server under its own name, and is refused before it reads anything.
2. **A request from another site that changes something** (403): for any method but GET,
   HEAD and OPTIONS, an ``Origin`` (else a ``Referer``) other than the server's own origin
   or the origin named by ``web.access-control-allow-origin`` (``*`` does not count here),
   and a body or ``Content-Type`` other than ``application/json``. A page of another origin
   can send neither without a CORS preflight, which this server does not grant; Flink's CLI,
   curl and Prometheus send no ``Origin`` and keep working, and so does the dashboard
   (same origin, JSON).
3. **A missing or wrong bearer token** (401), when ``flinkish.web.auth-token`` is set (the
   page and its assets need none: they hold no job data). Any header bytes are compared as
   bytes: a malformed token is a 401, never a 500.
4. **A body too large or too slow** (413 past ``rest.server.max-content-length``, 400 for a
   malformed ``Content-Length``, 408 when it is not all in ``flinkish.web.body-timeout``
   after its first read).

Before these, a request with two of a header these rules read (``Host``, ``Origin``,
``Referer``, ``Content-Type``, ``Authorization``) is a 400: which one a rule read and which
one the framework behind it reads must not differ. A WebSocket scope is closed unanswered
(the server takes no upgrades, and no route is one). A refusal answered before the body
was read ends the connection (:mod:`.protocol`).

Every answer gets :data:`~.replies.SECURITY_HEADERS` (no framing, no inline script, no
sniffing, no referrer) and, but for the page's static assets, ``Cache-Control: no-store``;
the CORS header only when ``web.access-control-allow-origin`` is set, with Flink's meaning.
Slow or too many connections are the protocol's concern (:mod:`.protocol`).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
from typing import Any
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flinkish_cli.web import dashboard
from flinkish_cli.web.replies import SECURITY_HEADERS, errors
from flinkish_cli.web.settings import WebSettings

log = logging.getLogger("flinkish.web")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: Headers the rules read, each allowed once: with two, which one a rule reads and which one
#: a framework behind it reads could differ (a 400 instead).
SINGLE_HEADERS = {
    "host": "Host",
    "origin": "Origin",
    "referer": "Referer",
    "content-type": "Content-Type",
    "authorization": "Authorization",
}
JSON_MEDIA_TYPE = "application/json"


class Refused(Exception):
    """A request the guard answers itself, with Flink's error JSON."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class BodyTimeout(Exception):
    """The request's body did not arrive within ``flinkish.web.body-timeout``."""


def split_host(value: str) -> tuple[str, int | None]:
    """``host[:port]`` of a ``Host`` header or an origin's netloc, host lowercased without
    brackets or a trailing dot; :class:`ValueError` when it is not one."""
    parts = urlsplit(f"//{value}")
    host, port = parts.hostname, parts.port  # .port raises ValueError for a bad port
    if not host or any(c in value for c in "/?#@\\ ") or value != value.strip():
        raise ValueError(value)
    return host.rstrip("."), port


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Guard:
    """ASGI middleware applying the module's rules before the application."""

    def __init__(self, app: ASGIApp, settings: WebSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route is one; the server takes no upgrades
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # the lifespan
            await self.app(scope, receive, send)
            return
        send = self._with_headers(scope, send)
        headers: dict[str, bytes] = {}
        twice: list[str] = []
        for raw_name, value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            if name in headers and name in SINGLE_HEADERS:
                twice.append(name)
            headers.setdefault(name, value)
        try:
            if twice:
                shown = SINGLE_HEADERS[twice[0]]
                raise Refused(400, f"Bad request: the {shown} header is given more than once.")
            host = self._check_host(scope, headers)
            if scope["method"] == "OPTIONS" and self._preflight(headers):
                await _answer(scope, receive, send, 204, None, self._preflight_headers())
                return
            if scope["method"] not in SAFE_METHODS:
                self._check_same_site(scope, headers, host)
            self._check_token(scope, headers)
            length = self._check_length(headers)
        except Refused as refused:
            await _answer(scope, receive, send, refused.status, refused.message, refused.headers)
            return
        await self._run(scope, self._timed_body(receive, length), send)

    # -- the rules --------------------------------------------------------------------------
    def _check_host(self, scope: Scope, headers: dict[str, bytes]) -> tuple[str, int | None]:
        server = scope.get("server") or ("", None)
        raw = headers.get("host")
        if raw is None:  # HTTP/1.0 without a Host: no browser sends that
            return str(server[0]), server[1]
        try:
            host, port = split_host(raw.decode("latin-1"))
        except ValueError:
            raise Refused(400, "Bad request: the Host header is not host[:port].") from None
        known = {str(server[0]).lower(), *self.settings.allowed_hosts}
        if host in known or is_loopback(host):
            return host, port
        raise Refused(
            421,
            f"This server is not known as {host[:64]!r} (a page of another site may be "
            "trying to reach it: DNS rebinding). Reach it by its address, or add the name to "
            "flinkish.web.allowed-hosts.",
        )

    def _check_same_site(
        self, scope: Scope, headers: dict[str, bytes], host: tuple[str, int | None]
    ) -> None:
        origin = _origin_of(headers)
        if origin is not None and not self._own_origin(origin, scope, host):
            raise Refused(
                403,
                f"Cross-site request refused: a page of {origin[:80]} may not change jobs "
                "here. Use this server's own dashboard, a client without a browser (Flink's "
                "CLI, flinkish, curl), or name that origin in web.access-control-allow-origin.",
            )
        media = headers.get("content-type", b"").split(b";")[0].strip().lower()
        has_body = headers.get("content-length", b"0").strip() not in (b"0", b"") or (
            "transfer-encoding" in headers
        )
        if (has_body or media) and media != JSON_MEDIA_TYPE.encode():
            shown = media.decode("latin-1")[:64] or "none"
            raise Refused(
                403,
                f"Refused a request body of type {shown}: send it as "
                "'Content-Type: application/json' (a page of another site cannot).",
            )

    def _own_origin(self, origin: str, scope: Scope, host: tuple[str, int | None]) -> bool:
        allowed = self.settings.allow_origin
        if allowed and allowed != "*" and origin.lower() == allowed.lower():
            return True
        parts = urlsplit(origin)
        scheme = scope.get("scheme", "http")
        try:
            given = split_host(parts.netloc)
        except ValueError:
            return False
        default = 443 if scheme == "https" else 80
        return (
            parts.scheme == scheme
            and given[0] == host[0]
            and (given[1] or default) == (host[1] or default)
        )

    def _check_token(self, scope: Scope, headers: dict[str, bytes]) -> None:
        token = self.settings.token
        if token is None or dashboard.is_public(scope.get("path", "")):
            return
        scheme, _, given = headers.get("authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token.encode()):
            return
        raise Refused(
            401,
            "Unauthorized: this endpoint needs 'Authorization: Bearer <token>' "
            "(flinkish.web.auth-token).",
            {"WWW-Authenticate": 'Bearer realm="flinkish"'},
        )

    def _check_length(self, headers: dict[str, bytes]) -> int:
        raw = headers.get("content-length", b"0").strip() or b"0"
        if not raw.isdigit():
            raise Refused(400, "Bad request: the Content-Length header is not a number.")
        if int(raw) > self.settings.max_body:
            raise Refused(413, too_large(self.settings.max_body))
        return int(raw)

    # -- CORS, with Flink's key -------------------------------------------------------------
    def _preflight(self, headers: dict[str, bytes]) -> bool:
        allowed = self.settings.allow_origin
        origin = headers.get("origin", b"").decode("latin-1")
        return (
            bool(allowed)
            and "access-control-request-method" in headers
            and (allowed == "*" or origin.lower() == str(allowed).lower())
        )

    def _preflight_headers(self) -> dict[str, str]:
        return {
            "Access-Control-Allow-Methods": "GET, HEAD, POST, PATCH",
            "Access-Control-Allow-Headers": "Authorization, Content-Type",
            "Access-Control-Max-Age": "600",
        }

    def _with_headers(self, scope: Scope, send: Send) -> Send:
        extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
        if not scope.get("path", "").startswith(dashboard.PUBLIC_PREFIX):
            extra.append((b"cache-control", b"no-store"))
        if self.settings.allow_origin:
            extra.append((b"access-control-allow-origin", self.settings.allow_origin.encode()))
            if self.settings.allow_origin != "*":
                extra.append((b"vary", b"Origin"))

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in extra}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + extra}
            await send(message)

        return sending

    # -- the body and the application -------------------------------------------------------
    def _timed_body(self, receive: Receive, length: int) -> Receive:
        """The body, read within ``flinkish.web.body-timeout`` in all (from its first read:
        a client sending a byte now and then is as slow as one that sends nothing)."""
        limit, timeout = self.settings.max_body, self.settings.body_timeout
        received, complete = 0, False
        deadline: float | None = None

        async def receiving() -> Message:
            nonlocal received, complete, deadline
            if complete:
                return await receive()
            now = asyncio.get_running_loop().time()
            deadline = now + timeout if deadline is None else deadline
            try:
                message = await asyncio.wait_for(receive(), max(deadline - now, 0.001))
            except asyncio.TimeoutError:
                raise BodyTimeout from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if received > limit:
                    raise HTTPException(413)
            return message

        return receiving

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except BodyTimeout:  # answered already by the app's handler, or answered here
            if not started:
                message = too_slow(self.settings.body_timeout)
                await _answer(scope, receive, send, 408, message, {"Connection": "close"})
        except Exception as error:  # answered already by the app's handler, or answered here
            log.error("Internal error on %s: %r", scope.get("path", "?"), error)
            if not started:
                await _answer(scope, receive, send, 500, "Internal server error.")


def _origin_of(headers: dict[str, bytes]) -> str | None:
    """The page's origin that sent the request: ``Origin``, else ``Referer``'s; None from a
    client that is not a browser page."""
    origin = headers.get("origin")
    if origin is not None:
        return origin.decode("latin-1").strip().rstrip("/")
    referer = headers.get("referer")
    if referer is None:
        return None
    parts = urlsplit(referer.decode("latin-1").strip())
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "null"


def too_slow(timeout: float) -> str:
    return f"The request's body did not arrive within {timeout:g} s (flinkish.web.body-timeout)."


def too_large(limit: int) -> str:
    return (
        f"The request body is larger than {limit} bytes. Try to raise "
        "[rest.server.max-content-length]."
    )


async def _answer(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    message: str | None,
    headers: dict[str, str] | None = None,
) -> None:
    response: Any
    if message is None:
        from starlette.responses import Response

        response = Response(status_code=status, headers=headers)
    else:
        response = errors(status, message, headers=headers)
    await response(scope, receive, send)
