"""``flinkish state ls|show|export``: the state of a savepoint, a retained checkpoint or a job.

What each names: a savepoint path, a job's retained checkpoint
(``<execution.checkpointing.dir>/<JobID>``), one query's checkpoint directory (a script's
``checkpointLocation``), or a JobID (its queries' checkpoints at their latest committed
batches, read from a copy: the running job's files are never written). Flink's State
Processor API reads a savepoint's operators by uid; here a query is named by its identity
(``--query``), an operator by Spark's operator id (``--operator``, from 0) and a store by
its name (``--store``: ``default``, a join's ``left``/``right``, a transformWithState
variable), as ``state ls`` lists them.

- ``ls``: every query, its stateful operators, their stores with key and value schemas,
  partitions, rows and bytes;
- ``show``: a store's rows, the biggest keys first (a key's size: the bytes of its rows in
  Spark's JSON, then their number), ``--limit`` rows per store (20), ``--key`` for one key
  (a value compared with each field of the key, or a JSON object of fields); a table on a
  terminal and in plain text, one JSON document with ``-o json``, JSON lines with
  ``-o jsonl`` (one object per row, with its query, operator and store);
- ``export <dir>``: each chosen store as Parquet (default) or JSON lines under
  ``<dir>/<query>/<operator>/<store>/`` (local or ``s3://``), with ``_state.json``
  describing it; a non-empty directory is refused unless ``--overwrite``.

These start a local Spark session, only once what is named has been checked, and say so on
standard error first ("Starting Spark to read the state...") on a terminal or with
``--verbose``. Bad input is one message and exit status 1, with nothing read or written.
The files are read by this process from storage (a JobID's checkpoints where the registry
in storage says they are), so the job client here is the storage one, ``-m`` or not: reading
state through ``flinkish web`` is its REST API's (``/flinkish/jobs/:jobid/state``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, is_terminal, print_json, print_table, source_offsets
from flinkish_cli.config.units import human_bytes

TARGET = "<savepoint | checkpoint | JobID>"


@click.group(short_help="Read the state of a savepoint, a checkpoint or a job.")
def state() -> None:
    """Read the state of a savepoint, a retained checkpoint or a running job: list its
    stateful operators (ls), show their keys and values (show), export them (export)."""


def _selection(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--operator",
        type=click.IntRange(min=0),
        metavar="<id>",
        help="Only this stateful operator (Spark's operator id, from 0; see 'state ls').",
    )(func)
    return click.option(
        "--query", metavar="<name>", help="Only this query (its name, as 'state ls' lists it)."
    )(func)


def _store_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--store",
        metavar="<name>",
        help="Only this store: default, a join's left or right, a transformWithState variable.",
    )(func)


def _notice(verbose: bool) -> Callable[[str], None]:
    """Says what is starting, on standard error, on a terminal or with --verbose."""

    def notice(text: str) -> None:
        if verbose or is_terminal(sys.stderr):
            echo(text, err=True)

    return notice


def _client(conf_dir: str | None, dynamic: tuple[str, ...]) -> Any:
    from flinkish_cli.client.jobs import JobClient

    return JobClient(load_config(conf_dir, dynamic))


@state.command("ls", cls=FlinkCommand, short_help="List stateful operators and their stores.")
@click.argument("named", metavar=TARGET)
@_selection
@common_options
@output_option
def ls(
    named: str,
    query: str | None,
    operator: int | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """List the queries, stateful operators and stores of a savepoint, a retained checkpoint
    or a job: key and value schemas, partitions, rows and bytes."""
    client = _client(conf_dir, dynamic)
    listing = client.state_listing(named, query, operator, _notice(verbose))
    if output == "json":
        print_json(listing.summary())
        return
    what = {"savepoint": "Savepoint", "checkpoint": "Checkpoint", "job": "The checkpoints of"}
    job = f" (job {listing.job_id})" if listing.job_id and listing.kind != "job" else ""
    echo(f"{what.get(listing.kind, listing.kind)} {listing.path}{job}")
    rows = []
    for q in listing.queries:
        offsets = source_offsets(q.source_offsets)
        if not q.operators:
            note = "no state yet" if q.batch < 0 else "stateless"
            rows.append([q.name, _batch(q.batch), "-", note, "-", "-", "-", "-", "-", "-", offsets])
        for op in q.operators:
            for store in op.stores:
                rows.append(
                    [
                        q.name,
                        _batch(q.batch),
                        str(op.operator_id),
                        op.kind,
                        str(op.partitions),
                        store.name,
                        store.key_schema,
                        store.value_schema,
                        "-" if store.rows is None else str(store.rows),
                        human_bytes(store.bytes if store.bytes is not None else op.bytes)
                        + ("" if store.bytes is not None or len(op.stores) == 1 else " (all)"),
                        offsets,
                    ]
                )
    print_table(
        None,
        [
            "query",
            "batch",
            "operator",
            "kind",
            "partitions",
            "store",
            "key schema",
            "value schema",
            "rows",
            "bytes",
            "source offsets",
        ],
        rows,
    )


def _batch(batch: int) -> str:
    return "-" if batch < 0 else str(batch)


@state.command("show", cls=FlinkCommand, short_help="Show keys and values, biggest keys first.")
@click.argument("named", metavar=TARGET)
@_selection
@_store_option
@click.option(
    "--key",
    metavar="<value | JSON>",
    help="Only this key: a value compared with each field of the key, or a JSON object "
    'of key fields (\'{"key": "k0"}\').',
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Rows shown per store, biggest keys first.",
)
@common_options
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help="text: a table; json: one document; jsonl: one JSON object per row.",
)
def show(
    named: str,
    query: str | None,
    operator: int | None,
    store: str | None,
    key: str | None,
    limit: int,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Show the keys and values of a savepoint's, a checkpoint's or a job's state, the
    biggest keys first (a key's size: the bytes of its rows in Spark's JSON, then how many
    rows it has)."""
    client = _client(conf_dir, dynamic)
    shown = client.state_rows(named, query, operator, store, key, limit, _notice(verbose))
    if output == "json":
        stores = [s.summary() for s in shown]
        print_json({"source": named, "key": key, "limit": limit, "stores": stores})
        return
    if output == "jsonl":
        for one in shown:
            for line in one.lines():
                echo(json.dumps(line, separators=(",", ":")))
        return
    for index, one in enumerate(shown):
        if index:
            echo()
        matched = f" for --key {key}" if key is not None else ""
        echo(
            f"== Query '{one.query}', operator {one.operator_id}, store {one.store} at batch "
            f"{one.batch}: {len(one.rows)} of {one.total} rows{matched}, biggest keys first =="
        )
        if not one.rows:
            echo("(no rows)")
            continue
        print_table(
            None,
            ["key", "value", "partition", "key rows", "key bytes"],
            [
                [
                    _compact(row.key),
                    "-" if row.value is None else _compact(row.value),
                    str(row.partition),
                    str(row.key_rows),
                    str(row.key_bytes),
                ]
                for row in one.rows
            ],
        )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


@state.command("export", cls=FlinkCommand, short_help="Export state as Parquet or JSON lines.")
@click.argument("named", metavar=TARGET)
@click.argument("directory", metavar="<directory>")
@_selection
@_store_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "jsonl"]),
    default="parquet",
    show_default=True,
    help="Parquet, or JSON lines (one object per row).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Write into a directory that is not empty, replacing the stores' directories.",
)
@common_options
@output_option
def export(
    named: str,
    directory: str,
    query: str | None,
    operator: int | None,
    store: str | None,
    fmt: str,
    overwrite: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Export the state of a savepoint, a checkpoint or a job into a directory (local or
    s3://), one dataset per store: <directory>/<query>/<operator>/<store>/."""
    client = _client(conf_dir, dynamic)
    result = client.export_state(
        named, directory, fmt, query, operator, store, overwrite, _notice(verbose)
    )
    if output == "json":
        print_json(result.summary())
        return
    kind = "Parquet" if fmt == "parquet" else "JSON lines"
    echo(f"Exported {len(result.stores)} store(s) of {result.source} as {kind} to {result.target}")
    print_table(
        None,
        ["query", "operator", "store", "rows", "path"],
        [[s.query, str(s.operator_id), s.store, str(s.rows), s.path] for s in result.stores],
    )
