"""``flinkish savepoint``: trigger (``<JobID> [dir]``), dispose (``-d``), inspect (``info``)."""

from __future__ import annotations

import click

from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json, print_table


@click.command(short_help="Trigger, dispose of or inspect savepoints.")
@click.argument("job_id", metavar="<Job ID> | info <path>", required=False)
@click.argument("target", metavar="[<target directory>]", required=False)
@click.option("-d", "--dispose", metavar="<path>", help="Path of a savepoint to dispose of.")
@click.option(
    "-type",
    "--type",
    "savepoint_type",
    type=click.Choice(["canonical", "native"]),
    default=None,
    help="Accepted for Flink compatibility: Spark has one format.",
)
@click.option("--no-rows", is_flag=True, help="info: skip counting state rows (no Spark).")
@common_options
@output_option
def savepoint(
    job_id: str | None,
    target: str | None,
    dispose: str | None,
    savepoint_type: str | None,
    no_rows: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Take a savepoint of a running job, dispose of one (-d), or show one (info <path>)."""
    from flinkish_cli.errors import UsageError
    from flinkish_cli.savepoints import service

    config = load_config(conf_dir, dynamic)
    if dispose:
        service.dispose(config, dispose)
        if output == "json":
            print_json({"disposed": dispose})
        else:
            echo(f"Savepoint '{dispose}' disposed.")
        return
    if job_id == "info":
        if not target:
            raise UsageError("Name the savepoint: flinkish savepoint info <path>")
        _show_info(service.info(config, target, rows=not no_rows), output)
        return
    if not job_id:
        raise UsageError("Name the job: flinkish savepoint <JobID> [<target directory>]")
    from flinkish_cli.registry.jobid import parse_job_id

    job_id = parse_job_id(job_id)
    if output != "json":
        echo(f"Triggering savepoint for job {job_id}.")
        echo("Waiting for response...")
    path = service.trigger(config, job_id, target)
    if output == "json":
        print_json({"jid": job_id, "savepoint": path})
        return
    echo(f"Savepoint completed. Path: {path}")
    echo("You can resume your program from this savepoint with the run command.")


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
                    str(query["last-committed-batch"]),
                    str(query["shuffle-partitions"] or "-"),
                    (query["state-store-provider"] or "-").rsplit(".", 1)[-1],
                    str(operator["id"]) if operator else "-",
                    str(operator["partitions"]) if operator else "-",
                    ", ".join(f"{k}={v}" for k, v in (operator or {}).get("rows", {}).items())
                    or "-",
                    _offsets(query["source-offsets"]),
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


def _offsets(offsets: list) -> str:
    import json

    text = json.dumps(offsets, separators=(",", ":"))
    return text if len(text) <= 60 else text[:57] + "..."
