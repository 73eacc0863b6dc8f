"""What ``flinkish web`` is allowed and how it presents: its settings, read once from the
configuration (the option table in :mod:`flinkish_cli.config.options` owns each key's
default and meaning)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WebSettings:
    """The endpoint's settings (from the configuration)."""

    version: str
    token: str | None = None
    #: the Connect address of the session cluster this endpoint fronts (``sc://host:port``)
    session_cluster: str | None = None
    #: ``web.cancel.enable``: false refuses every request that changes a job
    cancel_enabled: bool = True
    #: ``web.rescale.enable`` (rescales also need :attr:`cancel_enabled`)
    rescale_enabled: bool = True
    #: ``web.submit.enable``: programs uploaded and run (only where a session cluster is)
    submit_enabled: bool = False
    #: ``flinkish.web.submit.warm-runner``: submitted jobs start in a process started ahead
    warm_runner: bool = True
    #: where uploaded programs are kept (the server's ``env.log.dir``)
    upload_dir: str = ""
    history_size: int = 10
    refresh_ms: int = 3000
    max_body: int = 1 << 20
    #: host names answered besides the bound address, localhost and loopback addresses
    allowed_hosts: tuple[str, ...] = ()
    #: Flink's ``web.access-control-allow-origin``: None sends no CORS header
    allow_origin: str | None = None
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 512
    max_follows: int = 64
    shutdown_timeout: float = 10.0
    #: how long an uploaded program that is not run is kept (seconds)
    upload_timeout: float = 600.0

    @property
    def rescale_allowed(self) -> bool:
        """Whether rescales are taken: ``web.rescale.enable`` and ``web.cancel.enable``."""
        return self.cancel_enabled and self.rescale_enabled

    @classmethod
    def from_config(cls, config: Any, version: str) -> WebSettings:
        token = config.get("flinkish.web.auth-token")
        session = config.get("flinkish.web.session-cluster")
        origin = config.get("web.access-control-allow-origin")
        hosts = [str(config.get("rest.bind-address")), *config.get("flinkish.web.allowed-hosts")]
        if config.get("rest.address"):
            hosts.append(str(config.get("rest.address")))
        return cls(
            version=version,
            token=str(token) if token else None,
            session_cluster=str(session) if session else None,
            cancel_enabled=bool(config.get("web.cancel.enable")),
            rescale_enabled=bool(config.get("web.rescale.enable")),
            submit_enabled=bool(config.get("web.submit.enable")),
            warm_runner=bool(config.get("flinkish.web.submit.warm-runner")),
            upload_dir=str(config.get("env.log.dir")),
            history_size=int(config.get("web.checkpoints.history")),
            refresh_ms=int(config.get("web.refresh-interval").total_seconds() * 1000),
            max_body=int(config.get("rest.server.max-content-length")),
            allowed_hosts=tuple(h.lower().strip("[]") for h in hosts if h),
            allow_origin=str(origin).rstrip("/") if origin else None,
            header_timeout=config.get("flinkish.web.header-timeout").total_seconds(),
            body_timeout=config.get("flinkish.web.body-timeout").total_seconds(),
            max_connections=int(config.get("flinkish.web.max-connections")),
            max_follows=int(config.get("flinkish.web.max-follows")),
            shutdown_timeout=config.get("flinkish.web.shutdown-timeout").total_seconds(),
            upload_timeout=config.get("flinkish.web.upload-timeout").total_seconds(),
        )
