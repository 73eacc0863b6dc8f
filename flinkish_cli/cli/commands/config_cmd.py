"""``flinkish config``: the effective configuration, key by key, and what Spark gets from it.

Each key shows its value (secrets as ``******``), where the value came from, its status
(mapped, approximate, runtime, passthrough, not-applicable) and its Spark settings. Reads
the configuration only: no Spark, no JVM, no pyspark import.
"""

from __future__ import annotations

from typing import Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, is_terminal, print_json, print_table

STATUS_STYLES = {
    "mapped": "green",
    "approximate": "yellow",
    "runtime": "cyan",
    "passthrough": "blue",
    "not-applicable": "dim",
}


def _as_json(entry: Any) -> dict[str, Any]:
    return {
        "key": entry.key,
        "value": entry.text,
        "source": str(entry.source),
        "status": entry.status,
        "spark": dict(entry.spark),
        "description": entry.description,
    }


def _spark_text(spark: dict[str, str], separator: str) -> str:
    return separator.join(f"{k}={v}" for k, v in spark.items())


def _print_one(entry: Any) -> None:
    rows = [
        ("Key", entry.key),
        ("Value", entry.text or "(none)"),
        ("Source", str(entry.source)),
        ("Status", entry.status),
        ("Spark", _spark_text(entry.spark, "\n" if is_terminal() else "; ") or "—"),
        ("Description", entry.description),
    ]
    if is_terminal():
        from rich.markup import escape

        print_table(None, ["Field", "Value"], [[name, escape(value)] for name, value in rows])
        return
    for name, value in rows:
        echo(f"{name + ':':<13}{value}")


def _marked_up(row: list[str]) -> list[str]:
    """A row for rich: text escaped (values may hold brackets), the status coloured."""
    from rich.markup import escape

    cells = [escape(cell) for cell in row]
    style = STATUS_STYLES.get(row[3])
    if style:
        cells[3] = f"[{style}]{cells[3]}[/{style}]"
    return cells


def _print_all(config: Any, entries: list[Any]) -> None:
    from flinkish_cli.config import to_spark
    from flinkish_cli.config.sources import display_path

    terminal = is_terminal()
    separator = "\n" if terminal else "; "
    rows = [
        [e.key, e.text or "(none)", str(e.source), e.status, _spark_text(e.spark, separator)]
        for e in entries
    ]
    if terminal:
        rows = [_marked_up(row) for row in rows]
    if config.source_file is not None:
        title = f"Configuration from {display_path(config.source_file)}"
    elif config.conf_dir is not None:
        title = f"Configuration: defaults (no config.yaml or flink-conf.yaml in {config.conf_dir})"
    else:
        title = "Configuration: defaults (no ./conf directory)"
    print_table(
        title,
        ["Key", "Value", "Source", "Status", "Spark"],
        rows,
        styles={"Key": "bold"},
    )
    echo(f"Spark master without -m or -t: {to_spark(config).master}")


@click.command("config", cls=FlinkCommand, short_help="Show the effective configuration.")
@click.option(
    "-k",
    "--key",
    "key",
    metavar="KEY",
    default=None,
    help="Show only this key (its current or a deprecated name).",
)
@common_options
@output_option
def config(
    key: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Show every configuration key in effect: value, source, status and Spark settings.

    Values come from the registry defaults, then config.yaml or flink-conf.yaml, then -D.
    Secret values show as ******. Warnings (deprecated or ignored keys) go to stderr.
    """
    from flinkish_cli.config.options import classify
    from flinkish_cli.errors import ConfigError

    configuration = load_config(conf_dir, dynamic)  # prints its warnings
    if key is not None:
        try:
            classify(key)
            entries = [configuration.entry(key)]
        except KeyError as error:
            suggestion = getattr(error, "suggestion", None)
            guess = f"; did you mean {suggestion}?" if suggestion else ""
            raise ConfigError(
                f"{key}: not a configuration key in effect{guess}",
                "Run 'flinkish config' to list them; docs/configuration.md lists all keys.",
            ) from None
    else:
        entries = configuration.entries()
    if output == "json":
        print_json([_as_json(e) for e in entries])
    elif key is not None:
        _print_one(entries[0])
    else:
        _print_all(configuration, entries)
