"""Serving ``flinkish web``: where it binds, what it refuses, and the line scripts read.

Loopback (``rest.bind-address``: 127.0.0.1) unless configured otherwise; any other address
needs ``flinkish.web.auth-token``, given as a secret reference. ``rest.bind-port`` (which
falls back to ``rest.port``, as in Flink) is a port, a list or a range: the first port that
can be bound is taken, 0 picks a free one. The socket is bound before the server starts, so
ports that are all busy are one clear error; the address is then printed as
``flinkish web: http://<host>:<port>``. The connection's limits (slow headers, the cap on
connections) are :mod:`.protocol`'s, the requests' rules :mod:`.security`'s. Program
uploads (``web.submit.enable``) need ``flinkish.web.auth-token`` on every address,
loopback included, and make the server non-dumpable (:func:`not_dumpable`).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable
from typing import Any

from flinkish_cli.errors import ConfigError
from flinkish_cli.web.limits import Stopping
from flinkish_cli.web.protocol import guarded_protocol
from flinkish_cli.web.security import is_loopback
from flinkish_cli.web.settings import WebSettings

#: The line ``flinkish web`` prints once it listens (scripts and tests read it).
LISTENING = "flinkish web: http://{host}:{port}"


def bind(host: str, ports: Iterable[int], token: str | None, submit: bool = False) -> socket.socket:
    """The listening socket on the first of ``ports`` that can be bound; a
    :class:`ConfigError` for an open address without a token, for program uploads
    (``submit``) without a token on any address, or when no port can be bound."""
    if submit and not token:
        raise ConfigError(
            "web.submit.enable is true and no flinkish.web.auth-token is set: any local user "
            "could run programs as this server's user.",
            "Set flinkish.web.auth-token as a secret reference (e.g. "
            "'${env:FLINKISH_WEB_TOKEN}' in config.yaml), or leave web.submit.enable false.",
        )
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"rest.bind-address is {host}, which other machines can reach, and no "
            "flinkish.web.auth-token is set.",
            "Set flinkish.web.auth-token as a secret reference (e.g. "
            "'${env:FLINKISH_WEB_TOKEN}' in config.yaml), or bind to 127.0.0.1.",
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    tried: list[int] = []
    problem = "no port given"
    for port in ports:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            sock.close()
            tried.append(port)
            problem = error.strerror or str(error)
            if error.errno not in (errno.EADDRINUSE, errno.EACCES):  # else: the next port
                break
            continue
        sock.listen(128)
        return sock
    shown = ", ".join(map(str, tried[:5])) + (
        f" and {len(tried) - 5} more" if len(tried) > 5 else ""
    )
    raise ConfigError(
        f"flinkish web cannot listen on {host} port {shown}: {problem}.",
        "Choose another rest.bind-port (a list or a range is tried in order; 0 picks a free "
        "one) or rest.bind-address.",
    )


def serve(
    app: Any,
    sock: socket.socket,
    settings: WebSettings,
    announce: Any,
    stopping: Stopping | None = None,
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM; ``announce(line)`` once listening.

    On the first signal the server stops taking connections, sets ``stopping`` (the
    follows end at their next look at the log), closes the idle connections and gives the
    requests being served ``flinkish.web.shutdown-timeout`` before it ends them. WebSocket
    upgrades are not taken (no route is one): such a request is an ordinary HTTP request,
    guarded as every other."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if stopping is not None:
                stopping.set()
            super().handle_exit(sig, frame)

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        http=guarded_protocol(
            settings.header_timeout, settings.max_connections, settings.body_timeout
        ),
        ws="none",
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=True,
        proxy_headers=False,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_timeout)),
        h11_max_incomplete_event_size=64 * 1024,
    )
    if settings.submit_enabled:
        not_dumpable()
    server = Server(config)
    announce(LISTENING.format(host=f"[{host}]" if ":" in host else host, port=port))
    server.run(sockets=[sock])


def not_dumpable() -> None:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``), where the
    machine allows it: a process of the same user (a submitted program) then cannot read
    ``/proc/<server>/environ`` or ``mem``, nor attach a debugger, so the server's token
    and secrets in its memory stay out of its reach. Its children are dumpable again (an
    ``exec`` resets it). Root's processes read them anyway; elsewhere a no-op."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return
