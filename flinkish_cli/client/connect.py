"""Which transport a command's job client uses: ``flinkish web`` (the REST endpoint, as
Flink's CLI always uses its JobManager's) or the registry in storage.
:func:`job_client` decides once per command, by these rules:

1. **``-m host:port``** names the endpoint: every job action goes through it
   (:class:`~flinkish_cli.client.rest.RestJobClient`). Before anything else the CLI asks it
   which registry it serves (``GET /flinkish/cluster``), with the configuration's token.
   An endpoint where nothing answers, that answers as something else (another HTTP server,
   a Spark Connect server's HTTP/2 port), that serves another registry than this
   configuration's ``execution.checkpointing.dir``, or that refuses the token, is one
   error naming it, exit status 1, never a silent fall-back: a script must know which it
   asked. ``-m`` with a Spark master (``local[N]``, ``spark://``, ``sc://``, ``yarn``,
   ``k8s://``) names no endpoint: the registry in storage, as before.
2. **``rest.address``** (with ``rest.port``, 8081 by default; Flink's default
   ``config.yaml`` sets both) names the endpoint in the configuration: it is used when a
   ``flinkish web`` of the same registry answers there with this token, and the registry
   is read in storage otherwise (nothing listens, something else listens, another registry,
   the token refused), so a Flink user's configuration works with or without the server.
   Nothing answering is told within :data:`PROBE_TIMEOUT`.
3. Otherwise, the registry in storage (:class:`~flinkish_cli.client.jobs.JobClient`,
   imported only then: a command through an endpoint loads no storage client).

``--verbose`` says which, and why (``note``). "The same registry" compares the registries'
locations (:class:`~flinkish_cli.registry.store.RegistryIdentity`: a local directory by its
real absolute path, an S3 path with its endpoint), computed here without touching the
storage: a registry on a local disk is taken to be the same one on another host when the
path is the same (a shared file system).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.base import JobClientBase
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.registry.store import registry_identity

if TYPE_CHECKING:
    from flinkish_cli.client.upgrade.outcome import (
        UpgradeOutcome,
        UpgradePresenter,
        UpgradeRequest,
    )
    from flinkish_cli.registry.status import JobStatus
    from flinkish_cli.submission.run import Presenter
    from flinkish_cli.submission.submit import RunRequest

#: How long a command waits for the endpoint of ``rest.address`` before it reads storage.
PROBE_TIMEOUT = 1.0
#: How long a command waits for the endpoint ``-m`` names.
TIMEOUT = 10.0
_TOKEN_HINT = (
    "Set flinkish.web.auth-token to the endpoint's token, by reference (${env:VAR} or "
    "${file:path})."
)


class EndpointRefused(JobError):
    """The endpoint cannot serve this configuration's jobs (see the module's rules)."""


class ConnectServerPort(EndpointRefused):
    """``-m host:port`` answers as no HTTP/1.1 server: a Spark Connect server's port, which
    ``run`` and ``upgrade`` still take (Flink's old ``-m`` style; ``run``'s own handling)."""


def endpoint_of(jobmanager: str) -> str | None:
    """The REST endpoint (``host:port``) that ``-m`` names, or None for a Spark master;
    a :class:`UsageError` for a value that is neither."""
    from flinkish_cli.submission.endpoint import is_spark_master

    value = jobmanager.strip()
    if is_spark_master(value):
        return None
    if value.startswith("http://"):
        value = value[len("http://") :].rstrip("/")
    host, _, port = value.rpartition(":")
    if host and port.isdigit() and 0 < int(port) < 65536 and "/" not in value:
        return value
    raise UsageError(
        f"'{jobmanager}' is not the address of a REST endpoint (host:port) or a Spark master.",
        "Give -m the address flinkish web prints (host:port), or leave -m out: rest.address "
        "and rest.port, else the registry in storage (execution.checkpointing.dir).",
    )


def configured_endpoint(config: Any) -> str | None:
    """The endpoint ``rest.address``/``rest.port`` name (``host:port``), or None."""
    address = config.get("rest.address")
    if not address:
        return None
    host = str(address).strip()
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{host}:{config.get('rest.port').first}"


def job_client(
    config: Any, jobmanager: str | None = None, note: Callable[[str], None] | None = None
) -> JobClientBase:
    """The job client for a command: through the endpoint, or over storage (see the
    module's rules); ``note`` receives one line saying which (for ``--verbose``)."""
    say = note or (lambda _line: None)
    if jobmanager is not None:
        address = endpoint_of(jobmanager)
        if address is not None:
            client = _through(config, address, "-m", TIMEOUT)
            say(f"Using {client.transport} (-m), registry {client.identity().location}.")
            return client
        why = f"-m {jobmanager} names a Spark master, not a REST endpoint"
    else:
        address = configured_endpoint(config)
        if address is not None:
            try:
                client = _through(config, address, "rest.address", PROBE_TIMEOUT)
            except EndpointRefused as refused:
                why = refused.message.rstrip(".")
            else:
                say(f"Using {client.transport} (rest.address, rest.port).")
                return client
        else:
            why = "no REST endpoint is configured (rest.address)"
    from flinkish_cli.client.jobs import JobClient

    local = JobClient(config)
    say(f"Reading the registry in storage ({local.registry.storage.describe()}): {why}.")
    return local


def submit(config: Any, request: RunRequest, presenter: Presenter) -> JobStatus:
    """Run a job (``flinkish run``): in the flinkish web ``-m`` names when it takes programs
    (:func:`submission_client`), else from this machine
    (:meth:`~flinkish_cli.client.jobs.JobClient.submit`). The job's status when it ran, or
    ended."""
    remote = submission_client(config, request)
    if remote is not None:  # -m names a flinkish web that takes programs
        return remote.submit(request, presenter)  # type: ignore[no-any-return]
    from flinkish_cli.client.jobs import JobClient

    return JobClient(config).submit(request, presenter)


def upgrade(config: Any, request: UpgradeRequest, presenter: UpgradePresenter) -> UpgradeOutcome:
    """Upgrade a job (``flinkish upgrade``, :mod:`.upgrade`): in the flinkish web ``-m``
    names (one that takes no programs is an error), else here, on the registry in storage."""
    remote = submission_client(config, request.program, carried_out="upgrade")
    if remote is not None:
        return remote.upgrade(request, presenter)  # type: ignore[no-any-return]
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.client.upgrade.machine import Upgrade

    return Upgrade(JobClient(config), request, presenter).run()


def submission_client(config: Any, request: Any, carried_out: str | None = None) -> Any:
    """``run -m host:port``: the REST client of the endpoint when it is a flinkish web of this
    configuration's registry that takes programs (``web.submit.enable``); None otherwise,
    and ``run`` asks the endpoint for its session cluster and runs the program from this
    machine, as before (an endpoint that refuses is then named by that path's errors).

    ``carried_out`` names a command the endpoint carries out whole (``upgrade``): an endpoint
    that cannot be used (nothing answers, something else answers, another registry, the token
    refused, ``-m`` neither an endpoint nor a Spark master) or a flinkish web of this registry
    that takes no programs is then an error naming it, never a silent fall back to this
    machine and the registry in storage; a Connect server's port (:class:`ConnectServerPort`)
    is ``run``'s old ``-m`` style, taken from this machine as before."""
    if not request.jobmanager or request.target is not None:
        return None
    try:
        address = endpoint_of(request.jobmanager)
    except UsageError:
        if carried_out is not None:
            raise
        return None
    if address is None:
        return None
    from flinkish_cli.submission.endpoint import SUBMIT_KEY

    try:
        client = _through(config, address, "-m", TIMEOUT)
    except EndpointRefused as refused:
        if carried_out is not None and not isinstance(refused, ConnectServerPort):
            raise
        return None
    if not client.cluster.get(SUBMIT_KEY):
        client.endpoint.close()
        if carried_out is not None:
            raise JobError(
                f"flinkish web at {address} takes no programs (web.submit.enable is false "
                f"there), so it cannot carry out '{carried_out}'.",
                "Set web.submit.enable: true for that flinkish web, or give -m the session "
                f"cluster's Connect server (-m sc://host:port) to {carried_out} from this "
                "machine.",
            )
        return None
    return client


def _through(config: Any, address: str, named_by: str, timeout: float) -> Any:
    """The REST client of ``address`` once it has shown it serves the configuration's
    registry (:func:`~flinkish_cli.registry.store.registry_identity`: no I/O)."""
    from flinkish_cli.client.http import Endpoint
    from flinkish_cli.client.rest import RestJobClient

    token = config.get("flinkish.web.auth-token")
    endpoint = Endpoint(address, str(token) if token else None, TIMEOUT)
    document = _cluster_document(endpoint, bool(token), timeout)
    ours = registry_identity(config)
    theirs = _registry_of(document, address)
    if theirs != ours.id:
        endpoint.close()
        location = (document.get("registry") or {}).get("location")
        raise EndpointRefused(
            f"flinkish web at {address} serves the registry {location}, not this "
            f"configuration's {ours.location} (execution.checkpointing.dir).",
            f"Give {named_by} the address of the flinkish web of this registry, or use that "
            "registry's configuration.",
        )
    client = RestJobClient(config, endpoint, ours)
    client.cluster = document
    return client


def _cluster_document(endpoint: Any, has_token: bool, timeout: float) -> dict[str, Any]:
    import http.client  # only a command that asks an endpoint pays for it

    from flinkish_cli.rest.messages import CLUSTER
    from flinkish_cli.submission.endpoint import SESSION_KEY

    address = endpoint.address
    try:
        reply = endpoint.request(CLUSTER.method, CLUSTER.path, timeout=timeout)
    except (http.client.HTTPException, ConnectionResetError):
        raise ConnectServerPort(
            f"{address} does not answer as flinkish web (not HTTP/1.1: a Spark Connect "
            "server's port?).",
            "Give -m the address flinkish web prints (flinkish web: http://host:port); a "
            "Connect server (sc://host:port) takes only 'run'.",
        ) from None
    except (TimeoutError, OSError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise EndpointRefused(
            f"Nothing answers at {address} ({reason}).",
            "Start flinkish web there, or give -m the address it prints; without -m (and "
            "rest.address) the registry is read in storage.",
        ) from None
    if reply.status == 401:
        if has_token:
            raise EndpointRefused(
                f"flinkish web at {address} refuses this configuration's token.", _TOKEN_HINT
            )
        raise EndpointRefused(f"flinkish web at {address} needs its token.", _TOKEN_HINT)
    try:
        document = json.loads(reply.body) if reply.status == 200 else None
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict) or SESSION_KEY not in document:
        endpoint.close()
        raise EndpointRefused(
            f"{address} answers HTTP {reply.status} to {CLUSTER.path}: it is not flinkish "
            "web's REST endpoint.",
            "Give -m the address flinkish web prints (flinkish web: http://host:port), or "
            "leave -m out to read the registry in storage.",
        )
    return document


def _registry_of(document: dict[str, Any], address: str) -> str:
    registry = document.get("registry")
    found = registry.get("id") if isinstance(registry, dict) else None
    if not isinstance(found, str):
        version = document.get("flinkish-version", "an older version")
        raise EndpointRefused(
            f"flinkish web at {address} does not say which registry it serves (it is "
            f"flinkish {version}).",
            "Run the same flinkish version there, or leave -m out to read the registry in storage.",
        )
    return found
