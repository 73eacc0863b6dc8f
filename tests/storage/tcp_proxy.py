"""A small TCP proxy on loopback for fault injection: put it between a client and a real
server (the moto S3 server) to stop, slow or stall the connection, without mocking either.

    with TcpProxy(("127.0.0.1", 5000)) as proxy:
        settings = server.settings(s3_endpoint=proxy.endpoint)
        proxy.delay = 0.01          # every forwarded piece waits 10 ms (pieces of proxy.piece)
        proxy.stall()               # bytes stop flowing, connections stay open
        proxy.unstall()
        proxy.stop()                # the endpoint is gone: every connection is reset
        proxy.start()               # back on the same port, the server's data untouched

The port stays bound from the first start to the end of the ``with`` block (a stopped proxy
resets each connection at once), so no other process can take it in between.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from typing import Any


class TcpProxy:
    """Forwards every connection to ``upstream``; see the module docstring."""

    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self.port = port
        self.delay = 0.0
        self.piece = 64 * 1024
        self.requests = 0  # connections accepted
        self.refused = 0  # connections reset while stopped
        self._stalled = threading.Event()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._running = False  # forwarding; False: stopped, every connection is reset
        self._acceptor: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> TcpProxy:
        """Forward connections: the first time on a new port, then again on the same one."""
        if self._listener is not None:
            self._running = True
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._running = True
        self._acceptor = self._spawn(self._accept_loop, listener)
        return self

    def stop(self) -> None:
        """Reset every open connection and each new one (a server that went away)."""
        self._running = False
        with self._lock:
            sockets, self._sockets = list(self._sockets), set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.close()
        with self._lock:
            threads = [t for t in self._threads if t is not self._acceptor]
        for thread in threads:
            thread.join(timeout=5)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]

    def close(self) -> None:
        """Stop, and give the port back."""
        self.stop()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)

    def stall(self) -> None:
        """Hold every byte from now on (connections stay open, nothing arrives)."""
        self._stalled.set()

    def unstall(self) -> None:
        self._stalled.clear()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.unstall()
        self.close()

    # -- forwarding --------------------------------------------------------------------------
    def _spawn(self, target: Any, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True, name="tcp-proxy")
        thread.start()  # started before it is listed: stop() may join any listed thread
        with self._lock:
            self._threads.append(thread)
        return thread

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            if not self._running:  # stopped: reset the connection at once
                self.refused += 1
                with contextlib.suppress(OSError):
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            self.requests += 1
            with self._lock:
                self._sockets.update((client, server))
            pair = [2]  # pumps of this connection still running
            self._spawn(self._pump, client, server, pair)
            self._spawn(self._pump, server, client, pair)

    def _pump(self, source: socket.socket, dest: socket.socket, pair: list[int]) -> None:
        """Copy ``source`` to ``dest`` until either ends; the second pump of a connection to
        end closes both sockets (a long run of connections must not run out of files)."""
        poller = select.poll()  # not select(): it fails on descriptors past 1024
        try:  # a stop may have closed the socket before this pump began (ValueError)
            poller.register(source, select.POLLIN)
            while self._running:
                if not poller.poll(100):
                    continue
                data = source.recv(self.piece)
                if not data:
                    with contextlib.suppress(OSError):
                        dest.shutdown(socket.SHUT_WR)
                    return
                while self._stalled.is_set() and self._running:
                    time.sleep(0.05)
                if self.delay:
                    time.sleep(self.delay)
                dest.sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                pair[0] -= 1
                done = not pair[0]
                if done:
                    self._sockets.difference_update((source, dest))
            if done:
                for sock in (source, dest):
                    with contextlib.suppress(OSError):
                        sock.close()
