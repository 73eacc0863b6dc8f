"""Options shared by every action, as Flink's CLI has them: ``-D``, ``--conf-dir``, ``--verbose``.

:func:`common_options` adds them to a command; :func:`load_config` turns them, together
with the command's own flags, into the effective :class:`~flinkish_cli.config.Configuration`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def common_options(func: F) -> F:
    """Add ``-D key=value``, ``--conf-dir`` and ``--verbose`` to a command."""
    func = click.option(
        "-D",
        "dynamic",
        multiple=True,
        metavar="<property=value>",
        help="Override a configuration key (repeatable); wins over the configuration file.",
    )(func)
    func = click.option(
        "--conf-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Directory holding flink-conf.yaml or config.yaml "
        "(FLINK_CONF_DIR wins; default ./conf).",
    )(func)
    func = click.option(
        "-v", "--verbose", is_flag=True, default=False, help="Show Python tracebacks on errors."
    )(func)
    return func


def output_option(func: F) -> F:
    """Add ``--output text|json`` (``-o``) for commands that scripts read."""
    return click.option(
        "-o",
        "--output",
        "output",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format; json is stable for scripts.",
    )(func)


def load_config(
    conf_dir: str | None, dynamic: tuple[str, ...], flags: Mapping[str, str] | None = None
) -> Any:
    """Read the effective configuration (file, then ``-D``, then command flags); its
    warnings (deprecated or not-applicable keys) go to standard error."""
    from flinkish_cli.cli.output import warn
    from flinkish_cli.config import load_configuration

    config = load_configuration(conf_dir=conf_dir, dynamic=dynamic, flags=dict(flags or {}))
    for message in config.warnings:
        warn(message)
    return config
