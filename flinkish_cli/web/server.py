"""Serving ``flinkish web``: where it binds, what it refuses, and the line scripts read.

Loopback (``rest.bind-address``: 127.0.0.1) unless configured otherwise; any other address
needs ``flinkish.web.auth-token``, given as a secret reference. The socket is bound before
the server starts, so a busy port is one clear error, and port 0 picks a free one; the
address is then printed as ``flinkish web: http://<host>:<port>``.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from flinkish_cli.errors import ConfigError

#: The line ``flinkish web`` prints once it listens (scripts and tests read it).
LISTENING = "flinkish web: http://{host}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int, token: str | None) -> socket.socket:
    """The listening socket; a :class:`ConfigError` for an open address without a token or
    an address that cannot be bound."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"rest.bind-address is {host}, which other machines can reach, and no "
            "flinkish.web.auth-token is set.",
            "Set flinkish.web.auth-token as a secret reference (e.g. "
            "'${env:FLINKISH_WEB_TOKEN}' in config.yaml), or bind to 127.0.0.1.",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ConfigError(
            f"flinkish web cannot listen on {host}:{port}: {error.strerror or error}.",
            "Choose another rest.bind-port (0 picks a free one) or rest.bind-address.",
        ) from None
    sock.listen(128)
    return sock


def serve(app: Any, sock: socket.socket, announce: Any) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM; ``announce(line)`` once listening."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=True,
        proxy_headers=False,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = uvicorn.Server(config)
    announce(LISTENING.format(host=f"[{host}]" if ":" in host else host, port=port))
    server.run(sockets=[sock])
