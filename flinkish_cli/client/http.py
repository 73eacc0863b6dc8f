"""The REST job client's HTTP transport: :class:`Endpoint`, one ``flinkish web`` reached
over HTTP/1.1 with keep-alive (and its token), and :class:`Reply`, an answer with the job
client's error it may carry whole (:mod:`flinkish_cli.rest.wire`). Only the standard
library's ``http.client``: the CLI starts fast and imports no web framework."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.rest.wire import ERROR_HEADER, error_from_header


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def error(self) -> FlinkishError | None:
        """The job client's error the server sent whole, if any."""
        return error_from_header(self.headers.get(ERROR_HEADER))

    def messages(self) -> str:
        """Flink's ``errors`` of the body, joined (or the start of a body that is not one)."""
        try:
            found = json.loads(self.body).get("errors")
        except (ValueError, AttributeError, RecursionError):
            found = None
        if isinstance(found, list) and found:
            return "; ".join(str(e) for e in found)[:500]
        return self.body[:200].decode("utf-8", "replace").strip() or "no message"


class Endpoint:
    """One ``flinkish web`` (``host:port``), reached over HTTP/1.1 with keep-alive and, when
    the configuration has one, its token (``flinkish.web.auth-token``, sent as a bearer
    token, never shown)."""

    def __init__(self, address: str, token: str | None, timeout: float = 10.0) -> None:
        from flinkish_cli.submission.endpoint import split_address

        self.address = address
        self.host, self.port = split_address(address)
        self.timeout = timeout
        self._token = token
        self._connection: http.client.HTTPConnection | None = None

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        sent = {"Accept": "application/json", "Content-Type": "application/json"}
        if self._token:
            sent["Authorization"] = f"Bearer {self._token}"
        return {**sent, **(extra or {})}

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        connection.connect()
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return connection

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """One request on the kept connection (a new one when the server closed it while it
        was idle); OSError and http.client's errors when the server cannot be reached."""
        data = None if body is None else json.dumps(body).encode()
        wait = self.timeout if timeout is None else timeout
        for attempt in (1, 2):
            reused = self._connection is not None
            if self._connection is None:
                self._connection = self._connect(wait)
            connection = self._connection
            connection.sock.settimeout(wait)
            try:
                connection.request(method, path, body=data, headers=self.headers(headers))
                response = connection.getresponse()
                reply = Reply(response.status, response.headers, response.read())
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if reused and attempt == 1:  # closed while idle: it never saw this request
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if response.will_close:
                self.close()
            return reply
        raise AssertionError  # pragma: no cover

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        expect: tuple[int, ...] = (200,),
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """:meth:`request`, its failures as the errors the user reads: the job client's
        error the server sent, or a :class:`JobError` naming the endpoint."""
        try:
            reply = self.request(method, path, body, headers, timeout)
        except (OSError, http.client.HTTPException) as error:
            raise self.gone(error) from None
        if reply.status in expect:
            return reply
        raise reply.error() or JobError(
            f"flinkish web at {self.address} answered {method} {path.split('?')[0]} with "
            f"HTTP {reply.status}: {reply.messages()}",
            "Is it the same flinkish version as this CLI? Its log says more.",
        )

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        reply = self.call(method, path, **kwargs)
        try:
            return json.loads(reply.body)
        except (ValueError, RecursionError):
            raise self.not_understood(path, "it is not JSON") from None

    def gone(self, error: BaseException) -> JobError:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return JobError(
            f"flinkish web at {self.address} stopped answering ({reason}).",
            "See whether it still runs; what the command asked may or may not have been done "
            "('flinkish list -a' shows the jobs' states).",
        )

    def not_understood(self, path: str, why: str) -> JobError:
        return JobError(
            f"flinkish web at {self.address} answered {path.split('?')[0]} with a document "
            f"flinkish cannot read: {why}.",
            "Is it the same flinkish version as this CLI?",
        )

    def stream(
        self, path: str, timeout: float | None, method: str = "GET", body: Any = None
    ) -> Iterator[bytes]:
        """The body of an answer as it arrives, on a connection of its own (a log followed,
        an upgrade's events); ``timeout`` bounds each wait for more."""
        connection = self._connect(timeout)
        data = None if body is None else json.dumps(body).encode()
        accept = {"Accept": "text/plain" if body is None else "application/x-ndjson"}
        try:
            connection.request(method, path, body=data, headers=self.headers(accept))
            response = connection.getresponse()
            if response.status != 200:
                reply = Reply(response.status, response.headers, response.read())
                raise reply.error() or JobError(
                    f"flinkish web at {self.address} answered {method} {path.split('?')[0]} "
                    f"with HTTP {reply.status}: {reply.messages()}"
                )
            while chunk := response.read1(65536):
                yield chunk
        except (OSError, http.client.HTTPException) as error:
            raise self.gone(error) from None
        finally:
            connection.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
