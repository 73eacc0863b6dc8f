"""The HTTP/1.1 connection of ``flinkish web``: uvicorn's h11 protocol with the limits a
server left running on a laptop needs, which uvicorn does not have.

This module is the one place uvicorn's ``H11Protocol`` is extended (uvicorn 0.30+, its
documented ``Config(http=<protocol class>)`` seam); the handlers never see a connection.

- **Slow headers**: a connection whose request line and headers are not complete within
  ``flinkish.web.header-timeout`` (after it opens, or after its previous answer) is answered
  408 and closed; one that sent nothing is closed silently (a browser's pre-opened socket).
  uvicorn times out only idle keep-alive connections, so a client sending its headers a
  byte at a time held its connection forever.
- **An answer sent before the request was read whole** (a refusal before the body: 413,
  403, 401, 404): the connection is not kept for another request. The server stops writing
  (``FIN``), reads and discards what the client still sends for at most
  :data:`LINGER_SECONDS` (within ``flinkish.web.body-timeout``), so the client reads the
  answer instead of a reset, then closes. uvicorn cancels its keep-alive timer when body
  bytes arrive, so such a connection was otherwise held for as long as the client liked.
- **A client that stops reading** an answer (the socket's buffer full) is closed after
  ``flinkish.web.body-timeout``.
- **A cap on connections** (``flinkish.web.max-connections``): past it, a connection that is
  neither reading a head nor being served is closed first (one lingering after an early
  answer, then one idle between requests, the oldest of each), then the one that has waited
  longest for its request's headers, so slow clients cannot crowd out the ones that send
  whole requests; when every connection is being served, the new one is answered 503 and
  closed.
- **Malformed requests** (a bad request line, header or framing, or a target uvicorn cannot
  decode) are answered 400 with Flink's error JSON instead of uvicorn's plain text, and
  never reach the application.

Every state of a connection has its deadline: the head's (above), the body's (the guard,
:mod:`.security`, where the body is read), the linger after an early answer, the stalled
write; a request being served is bounded by its handler.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from flinkish_cli.web.replies import raw_error

log = logging.getLogger("flinkish.web")


#: The longest an early answer's connection is read (and what arrives discarded) before it
#: is closed; never longer than ``flinkish.web.body-timeout``.
LINGER_SECONDS = 2.0


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline in every state of a connection and a
    connection cap; configured per server by :func:`guarded_protocol`."""

    header_timeout: ClassVar[float] = 10.0
    body_timeout: ClassVar[float] = 30.0
    max_connections: ClassVar[int] = 512

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._stall_deadline: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        self._received = False
        self._lingering = False

    # -- the deadline for a request's head --------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)
        self._await_head()
        self._keep_within_cap()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        self._cancel_stall_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # what follows an early answer: read and dropped
            return
        self._received = True
        super().data_received(data)

    def handle_events(self) -> None:
        try:
            super().handle_events()
        except Exception as error:  # uvicorn could not make a request of it (e.g. its target)
            self.send_400_response(f"the request could not be read ({type(error).__name__})")
            return
        if self._waiting_for_head() is False:
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or not self._cycle_done():
            return  # closed, or a pipelined request is being served
        if self.conn.their_state is h11.IDLE:
            self._await_head()
        else:  # answered before the request was read whole: end the connection
            self._linger()

    def _cycle_done(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _waiting_for_head(self) -> bool:
        """True while the current request's line and headers are not all in."""
        return not self._lingering and self.conn.their_state is h11.IDLE and self._cycle_done()

    def _await_head(self) -> None:
        self._cancel_head_deadline()
        self._received = False
        self._waiting_since = self.loop.time()
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_too_slow)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or not self._waiting_for_head():
            return
        if self._received:
            message = (
                f"The request's headers did not arrive within {self.header_timeout:g} s "
                "(flinkish.web.header-timeout)."
            )
            self.transport.write(raw_error(408, "Request Timeout", message))
        self.transport.close()

    # -- after an early answer ---------------------------------------------------------------
    def _linger(self) -> None:
        """Stop writing, drop what the client still sends, close within the linger."""
        self._lingering = True
        self._unset_keepalive_if_required()
        self._cancel_head_deadline()
        self._waiting_since = self.loop.time()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        linger = min(LINGER_SECONDS, self.body_timeout)
        self._head_deadline = self.loop.call_later(linger, self._close)

    def _close(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    # -- a client that stops reading --------------------------------------------------------
    def pause_writing(self) -> None:
        super().pause_writing()
        self._cancel_stall_deadline()
        self._stall_deadline = self.loop.call_later(self.body_timeout, self._stalled)

    def resume_writing(self) -> None:
        self._cancel_stall_deadline()
        super().resume_writing()

    def _cancel_stall_deadline(self) -> None:
        if self._stall_deadline is not None:
            self._stall_deadline.cancel()
            self._stall_deadline = None

    def _stalled(self) -> None:
        self._stall_deadline = None
        log.warning("A client read nothing of its answer for %g s: closing", self.body_timeout)
        self.transport.abort()  # its buffer is full: nothing more can be written

    # -- the cap on connections -------------------------------------------------------------
    def _eviction_rank(self) -> int | None:
        """Which connections go first past the cap: 0 lingering after an early answer, 1 idle
        between requests, 2 reading a head slowly; None while its request is served."""
        if self._lingering:
            return 0
        if self._waiting_for_head():
            return 2 if self._received else 1
        return None

    def _keep_within_cap(self) -> None:
        if len(self.connections) <= self.max_connections:
            return
        open_ = [c for c in self.connections if not c.transport.is_closing()]
        if len(open_) <= self.max_connections:
            return
        ranked = [
            (rank, c._waiting_since, id(c), c)
            for c in open_
            if c is not self
            and isinstance(c, GuardedH11Protocol)
            and (rank := c._eviction_rank()) is not None
        ]
        if ranked:
            oldest = min(ranked)[3]
            oldest._cancel_head_deadline()
            oldest.transport.close()
            return
        log.warning("flinkish web has %d connections open: refusing one", len(self.connections))
        message = (
            f"flinkish web has {self.max_connections} connections open, all busy "
            "(flinkish.web.max-connections); try again."
        )
        self.transport.write(raw_error(503, "Service Unavailable", message))
        self.transport.close()

    # -- upgrades ---------------------------------------------------------------------------
    def _unsupported_upgrade_warning(self) -> None:
        """An ``Upgrade`` header is served as plain HTTP (the server takes no upgrades):
        nothing logged, so a client cannot fill the log with uvicorn's advice to install a
        WebSocket library."""

    # -- malformed requests -----------------------------------------------------------------
    def send_400_response(self, msg: str) -> None:
        """Flink's error JSON for a request that is not HTTP/1.1 as it should be."""
        self._cancel_head_deadline()
        detail = msg.rstrip(".")
        self.transport.write(raw_error(400, "Bad Request", f"Bad request: {detail}."))
        self.transport.close()


def _no_delay(transport: asyncio.Transport) -> None:
    """Turn Nagle's algorithm off on the connection's socket.

    asyncio does this for the TCP sockets it accepts, but only when the listening socket says
    it is TCP (``proto``); uvicorn serves a socket it re-creates from its descriptor
    (``socket.fromfd``, ``proto`` 0), so its connections kept Nagle on. uvicorn writes a
    response's head and body apart, and on a kept-alive connection the body then waited for
    the client's delayed ACK: 40 ms on every request after a connection's first.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def guarded_protocol(
    header_timeout: float, max_connections: int, body_timeout: float = 30.0
) -> type[GuardedH11Protocol]:
    """The protocol class for one server, with its limits."""
    limits = {
        "header_timeout": header_timeout,
        "max_connections": max_connections,
        "body_timeout": body_timeout,
    }
    return type("GuardedH11Protocol", (GuardedH11Protocol,), limits)
