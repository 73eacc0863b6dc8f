"""``flinkish savepoint``: trigger (``<JobID> [dir]``), dispose (``-d``), inspect (``info``).

Flink's forms and lines: ``savepoint <JobID> [<target directory>]`` (``-detached``: print the
trigger id and return), ``savepoint -d <path>``; flinkish adds ``savepoint info <path>``.
``-j/--jarfile`` (a Java program for disposing) is refused: a flinkish savepoint needs none.
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand, format_type, refuse_java, require_job
from flinkish_cli.cli.options import (
    common_options,
    detached_trigger_option,
    job_client,
    load_config,
    output_option,
    savepoint_type_option,
)
from flinkish_cli.cli.output import echo, print_json, print_table, print_trigger, source_offsets


@click.command(cls=FlinkCommand, short_help="Trigger, dispose of, inspect or list savepoints.")
@click.argument(
    "args", nargs=-1, metavar="<Job ID> [<target directory>] | info <path> | list [<Job ID>]"
)
@click.option("-d", "--dispose", metavar="<path>", help="Path of a savepoint to dispose of.")
@detached_trigger_option
@savepoint_type_option()
@click.option("-j", "--jarfile", metavar="<jarfile>", hidden=True, help="Refused (Java only).")
@click.option("--no-rows", is_flag=True, help="info: skip counting state rows (no Spark).")
@common_options
@output_option
def savepoint(
    args: tuple[str, ...],
    dispose: str | None,
    detached: bool,
    savepoint_type: str | None,
    jarfile: str | None,
    no_rows: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Take a savepoint of a running job, dispose of one (-d), show one (info <path>), or
    list a job's savepoints, or every job's (list [<JobID>])."""
    from flinkish_cli.errors import UsageError

    if jarfile is not None:
        raise refuse_java("-j", f"-j/--jarfile {jarfile} (a program JAR)")
    text = output != "json"
    client = job_client(load_config(conf_dir, dynamic))
    if dispose:
        if text:
            echo(f"Disposing savepoint '{dispose}'.")
            echo("Waiting for response...")
        client.dispose_savepoint(dispose)
        if text:
            echo(f"Savepoint '{dispose}' disposed.")
        else:
            print_json({"disposed": dispose})
        return
    if args and args[0] == "info":
        if len(args) < 2:
            raise UsageError("Name the savepoint: flinkish savepoint info <path>")
        _show_info(client.savepoint_info(args[1], rows=not no_rows), output)
        return
    if args and args[0] == "list":
        if len(args) > 2:
            raise UsageError("Usage: flinkish savepoint list [<JobID>]")
        _show_history(client.savepoint_history(args[1] if len(args) == 2 else None), output)
        return
    from flinkish_cli.registry.jobid import parse_job_id

    job_text, rest = require_job(args, "Missing JobID. Specify a Job ID to trigger a savepoint.")
    job_id = parse_job_id(job_text)
    target = rest[0] if rest else None
    if len(rest) >= 2 and text:
        echo("Provided more arguments than required. Ignoring not needed arguments.")
    fmt = format_type(savepoint_type)
    if detached:
        if text:
            echo(f"Triggering savepoint in detached mode for job {job_id}.")
        trigger_id = client.savepoint_detached(job_id, target, fmt)
        line = f"Successfully trigger manual savepoint, triggerId: {trigger_id}"
        print_trigger(job_id, trigger_id, line, text)
        return
    if text:
        echo(f"Triggering savepoint for job {job_id}.")
        echo("Waiting for response...")
    path = client.savepoint(job_id, target, fmt)
    if not text:
        print_json({"jid": job_id, "savepoint": path})
        return
    echo(f"Savepoint completed. Path: {path}")
    echo("You can resume your program from this savepoint with the run command.")


def _show_history(records: list, output: str) -> None:
    """``savepoint list``: one line (one JSON object) per savepoint, newest first."""
    if output == "json":
        print_json({"savepoints": [record.summary() for record in records]})
        return
    if not records:
        echo("No savepoints.")
        return
    print_table(
        None,
        ["time", "job", "trigger", "state", "size", "path"],
        [
            [
                _time(record.time),
                record.job_id,
                record.trigger.value,
                record.state.value,
                "-" if record.size is None else str(record.size),
                record.path,
            ]
            for record in records
        ],
    )


def _time(epoch: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(epoch).strftime("%d.%m.%Y %H:%M:%S")


def _show_info(summary: dict, output: str) -> None:
    if output == "json":
        print_json(summary)
        return
    echo(f"{summary['kind'].capitalize()} {summary['path']}")
    if summary["kind"] == "savepoint":
        echo(
            f"Job {summary['job-id']} ({summary['job-name']}), taken {summary['created']} "
            f"by flinkish {summary['flinkish-version']} on Spark {summary['spark-version']}"
        )
        echo(f"{summary['files']} files, {summary['bytes']} bytes")
    rows = []
    for query in summary["queries"]:
        operators = query["stateful-operators"] or [None]
        for operator in operators:
            rows.append(
                [
                    query["name"],
                    _batch(query["last-committed-batch"]),
                    str(query["shuffle-partitions"] or "-"),
                    (query["state-store-provider"] or "-").rsplit(".", 1)[-1],
                    str(operator["id"]) if operator else "-",
                    str(operator["partitions"]) if operator else "-",
                    ", ".join(f"{k}={v}" for k, v in (operator or {}).get("rows", {}).items())
                    or "-",
                    source_offsets(query["source-offsets"]),
                ]
            )
    print_table(
        None,
        [
            "query",
            "batch",
            "partitions",
            "state store",
            "operator",
            "op partitions",
            "state rows",
            "source offsets",
        ],
        rows,
    )


def _batch(batch: int) -> str:
    """A query's last committed batch; ``-`` for one saved before its first (-1)."""
    return "-" if batch < 0 else str(batch)
