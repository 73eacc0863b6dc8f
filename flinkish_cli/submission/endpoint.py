"""``-m host:port``, as in Flink: the REST endpoint of the cluster (``flinkish web``), which
tells the client where its session cluster's Spark Connect server is.

A user knows one address, as with Flink's JobManager: ``scripts/start-cluster.sh --session``
starts the Connect server and ``flinkish web`` in front of it (given the Connect address as
``flinkish.web.session-cluster``), and ``flinkish run -m host:port`` asks that endpoint::

    GET http://host:port/flinkish/cluster   {"session-cluster": "sc://127.0.0.1:15002",
                                             "registry": {"location": ..., "id": ...}, ...}

The same document says which registry the endpoint serves (``registry``: its location and
id, never a secret), which flinkish's CLI compares with its own configuration's before any
other command goes through the endpoint (:mod:`flinkish_cli.client.connect`).

``rest.address``/``rest.port`` name the same endpoint in the configuration. ``sc://host:port``
still names a Connect server directly, without asking anyone; :func:`is_spark_master` owns
the rule of which ``-m`` values name a Spark master rather than an endpoint.

Compatibility: before this, a bare ``host:port`` named the Connect server itself. When what
answers at ``host:port`` speaks HTTP/2 only (a Spark Connect server's gRPC port answers an
HTTP/1.1 request with an HTTP/2 frame, at once), the address is taken as the Connect server,
with a notice to write ``sc://host:port``: old command lines keep working.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass

from flinkish_cli.errors import JobError
from flinkish_cli.rest.messages import CLUSTER

#: The document's key holding the Connect address (``sc://host:port``) or null.
SESSION_KEY = "session-cluster"
#: The document's key holding the registry it serves: ``{"location": ..., "id": ...}``.
REGISTRY_KEY = "registry"
#: The document's key saying whether it takes programs (``web.submit.enable``).
SUBMIT_KEY = "submit"
#: The document's key holding the server's flinkish version.
VERSION_KEY = "flinkish-version"
TIMEOUT_SECONDS = 10.0
_START_HINT = (
    "Start a session cluster with scripts/start-cluster.sh --session (it starts flinkish web "
    "at its REST address), or give the Spark Connect server itself as -m sc://host:port."
)


@dataclass(frozen=True)
class SessionCluster:
    """Where a job for the endpoint goes: its Connect address, and a notice for the user
    when the address was taken in its old meaning."""

    master: str
    notice: str | None = None


def is_spark_master(value: str) -> bool:
    """Whether ``-m`` names a Spark master (``local``, ``local[N]``, ``local-cluster[...]``,
    ``spark://``, ``sc://``, ``k8s://``, ``yarn``, Flink's ``yarn-cluster``) rather than a
    REST endpoint ``host:port`` (``localhost:8081`` is an endpoint)."""
    value = value.strip()
    return value in ("local", "yarn", "yarn-cluster") or value.startswith(
        ("local[", "local-cluster[", "spark://", "k8s://", "sc://")
    )


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 in brackets) as (host, port)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def session_cluster(
    address: str, token: str | None = None, timeout: float = TIMEOUT_SECONDS
) -> SessionCluster:
    """Ask the REST endpoint at ``address`` (``host:port``) for its session cluster.

    :class:`JobError` naming what is wrong when nothing answers, when it is a REST endpoint
    other than flinkish web's, when it refuses the token, or when it fronts no session
    cluster.
    """
    host, port = split_address(address)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request("GET", CLUSTER.path, headers=headers)
        response = connection.getresponse()
        body = response.read(1 << 16)
    except (http.client.HTTPException, ConnectionResetError):
        return SessionCluster(
            f"sc://{address}",
            f"{address} is a Spark Connect server, not flinkish's REST endpoint: -m host:port "
            f"now names flinkish web (as Flink's -m names the JobManager); write -m "
            f"sc://{address} to name the Connect server itself.",
        )
    except (TimeoutError, OSError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise JobError(f"Nothing answers at {address} ({reason}).", _START_HINT) from None
    finally:
        connection.close()
    if response.status == 401:
        raise JobError(
            f"flinkish web at {address} needs its token.",
            "Set flinkish.web.auth-token to the endpoint's token, by reference "
            "(${env:VAR} or ${file:path}).",
        )
    try:
        document = json.loads(body) if response.status == 200 else None
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict) or SESSION_KEY not in document:
        raise JobError(
            f"{address} answers HTTP {response.status} to {CLUSTER.path}: it is not flinkish "
            "web's REST endpoint.",
            "Give -m the address flinkish web prints (scripts/start-cluster.sh --session), or "
            "the Spark Connect server itself as -m sc://host:port.",
        )
    master = document[SESSION_KEY]
    if not isinstance(master, str) or not master.startswith("sc://"):
        raise JobError(f"flinkish web at {address} fronts no session cluster.", _START_HINT)
    return SessionCluster(master)
