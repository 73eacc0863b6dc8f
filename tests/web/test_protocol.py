"""The HTTP/1.1 connection of ``flinkish web`` at its seam: the guarded h11 protocol on a
listening socket served the way uvicorn serves the one ``flinkish web`` binds (re-created
from its descriptor), without a process or a framework's test client."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from flinkish_cli.web.protocol import guarded_protocol


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]}
    )
    await send({"type": "http.response.body", "body": b"hello"})


async def _serve_two_requests() -> tuple[list[int], list[bytes]]:
    config = uvicorn.Config(_hello, http=guarded_protocol(10.0, 8), log_level="warning")
    config.load()
    state = ServerState()
    nodelay: list[int] = []

    class Probe(config.http_protocol_class):  # type: ignore[name-defined,misc]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    served = socket.fromfd(listener.fileno(), listener.family, listener.type)  # as uvicorn
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Probe(config=config, server_state=state, app_state={}), sock=served
    )
    replies = []
    try:
        reader, writer = await asyncio.open_connection(*listener.getsockname())
        for _ in range(2):  # the second request is the one Nagle's algorithm held back
            writer.write(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            replies.append(await reader.readexactly(len(b"hello")))
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
        listener.close()
    return nodelay, replies


def test_connections_send_without_nagles_delay_on_a_socket_uvicorn_recreated() -> None:
    """uvicorn serves a listening socket it re-creates from its descriptor; asyncio then
    leaves Nagle's algorithm on for the connections it accepts, and a kept-alive client's
    second request waited 40 ms for its body (the response's head and body are two
    writes). Every connection of flinkish web has TCP_NODELAY set."""
    nodelay, replies = asyncio.run(_serve_two_requests())
    assert replies == [b"hello", b"hello"]
    assert len(nodelay) == 1 and nodelay[0] != 0
