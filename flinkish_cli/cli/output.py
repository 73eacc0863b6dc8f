"""How results reach the user: rich on a terminal, plain text in pipes, JSON for scripts.

A command builds plain data (rows of strings, dictionaries) and hands it to the functions
here; they decide the presentation:

- ``--output json`` prints one JSON document on standard output, nothing else.
- On a terminal (and without ``NO_COLOR``), tables are rich tables with colour.
- Otherwise output is plain, stable text that scripts may parse.

A reader that goes away (``flinkish list | head -1``) does not interrupt the command: as with
Flink's client, the rest of the output is dropped and the command carries on to its end, so
its exit status is the action's, never a broken pipe's.

rich is imported only when something is rendered on a terminal, to keep start-up fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

OUTPUT_FORMATS = ("text", "json")


def is_terminal(stream: IO[str] | None = None) -> bool:
    """True when ``stream`` (standard output by default) is an interactive terminal."""
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def use_color() -> bool:
    """Colour only on a terminal and never when ``NO_COLOR`` is set (https://no-color.org)."""
    return is_terminal() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def console(stderr: bool = False) -> Any:
    """A rich console for the terminal, honouring ``NO_COLOR``."""
    from rich.console import Console

    return Console(stderr=stderr, no_color=not use_color(), highlight=False, soft_wrap=False)


def echo(line: str = "", err: bool = False) -> None:
    """Print one plain line (to standard error with ``err``), flushing so pipes see it at once."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(line + "\n")
        stream.flush()
    except BrokenPipeError:
        discard_output(stream)


def discard_output(stream: IO[str] | None = None) -> None:
    """The reader of ``stream`` (standard output by default) is gone: send the rest of it,
    and whatever is still buffered, to /dev/null."""
    stream = stream or sys.stdout
    try:
        descriptor = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def print_json(document: Any) -> None:
    """Print ``document`` as indented JSON on standard output."""
    echo(json.dumps(document, indent=2, sort_keys=False, default=str))


def print_trigger(job_id: str, trigger_id: str, line: str, text: bool) -> None:
    """A detached trigger's answer: Flink's ``line`` as text, else ``jid`` and ``trigger-id``."""
    if text:
        echo(line)
    else:
        print_json({"jid": job_id, "trigger-id": trigger_id})


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    styles: Mapping[str, str] | None = None,
) -> None:
    """Print a table: rich on a terminal, tab-free aligned plain text otherwise.

    ``styles`` maps a column name to a rich style, used on a terminal only.
    """
    if is_terminal():
        from rich.table import Table

        table = Table(title=title, show_lines=False, header_style="bold")
        for name in columns:
            table.add_column(name, style=(styles or {}).get(name), overflow="fold")
        for row in rows:
            table.add_row(*row)
        console().print(table)
        return
    if title:
        echo(title)
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in rows:
        echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def warn(message: str) -> None:
    """Print a warning line on standard error."""
    echo(f"WARNING: {message}", err=True)


def source_offsets(offsets: list[Any], limit: int = 60) -> str:
    """A query's source offsets (Spark's offset log, one value per source) in a table cell.
    A Kafka source's, ``{"topic": {"partition": offset}}``, as Kafka's tools name them:
    ``topic-partition=offset``, each one (they are what a restored job starts from); any
    other source's as compact JSON, cut at ``limit`` characters."""
    import json

    parts = []
    for source in offsets:
        if _kafka_offsets(source):
            parts += [
                f"{topic}-{partition}={offset}"
                for topic, partitions in sorted(source.items())
                for partition, offset in sorted(partitions.items(), key=lambda p: int(p[0]))
            ]
        else:
            text = json.dumps(source, separators=(",", ":"))
            parts.append(text if len(text) <= limit else text[: limit - 3] + "...")
    return " ".join(parts) or "-"


def _kafka_offsets(source: Any) -> bool:
    return (
        isinstance(source, dict)
        and bool(source)
        and all(
            isinstance(partitions, dict)
            and bool(partitions)
            and all(str(p).isdigit() and isinstance(o, int) for p, o in partitions.items())
            for partitions in source.values()
        )
    )
