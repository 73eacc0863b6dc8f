"""Exit 0 when each TCP port given is free on 127.0.0.1, else 1 (the cluster scripts' check
before they start a server; 0 means "any port" and is always free)."""

from __future__ import annotations

import socket
import sys


def free(port: int) -> bool:
    """Whether a server could bind ``port`` on 127.0.0.1 now."""
    if port == 0:
        return True
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


if __name__ == "__main__":
    sys.exit(0 if all(free(int(p)) for p in sys.argv[1:]) else 1)
