"""``flinkish web``: serve Flink's REST API and Prometheus metrics over the job registry.

Binds ``rest.bind-address`` (127.0.0.1) and the first free port of ``rest.bind-port`` (which
falls back to ``rest.port``, 8081, as in Flink; 0 for any free port), prints
``flinkish web: http://<host>:<port>`` once it listens, and runs until Ctrl-C or SIGTERM.
With ``web.submit.enable`` (and ``flinkish.web.submit.warm-runner``), it keeps one spare
job process started ahead for submitted programs, stopped with the server. Needs the ``web``
extra (Starlette, uvicorn, prometheus_client), which only this command
imports.
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, load_config
from flinkish_cli.cli.output import echo


@click.command(cls=FlinkCommand, short_help="Serve Flink's REST API and /metrics.")
@common_options
def web(dynamic: tuple[str, ...], conf_dir: str | None, verbose: bool) -> None:
    """Serve Flink's REST API (for Flink's own CLI and tools) and Prometheus metrics over
    the job registry, on rest.bind-address:rest.bind-port (127.0.0.1:8081)."""
    from flinkish_cli import __version__
    from flinkish_cli.errors import UsageError

    config = load_config(conf_dir, dynamic)
    try:
        from flinkish_cli.web.app import WebSettings, create_app
        from flinkish_cli.web.limits import Stopping
        from flinkish_cli.web.server import bind, serve
    except ImportError as error:
        raise UsageError(
            f"flinkish web needs the 'web' extra ({error.name} is not installed).",
            "Install it with: pip install 'flinkish[web]' (scripts/setup.sh does).",
        ) from None
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.client.uploads import Uploads
    from flinkish_cli.registry.logroll import roll_own_stderr

    settings = WebSettings.from_config(config, __version__)
    address, ports = str(config.get("rest.bind-address")), config.get("rest.bind-port")
    sock = bind(address, ports, settings.token, settings.submit_enabled)
    client = JobClient(config, keep_reads=True).open()
    uploads = Uploads(client)
    roll_own_stderr(config)
    if settings.submit_enabled and settings.session_cluster and settings.warm_runner:
        uploads.keep_warm_runner()  # submitted programs start in a process started ahead
    stopping = Stopping()
    try:
        serve(create_app(client, settings, stopping, uploads), sock, settings, echo, stopping)
    finally:
        uploads.close()
