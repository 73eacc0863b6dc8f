"""``flinkish stop [--savepointPath DIR] [--drain] <JobID>``: stop gracefully with a savepoint."""

from __future__ import annotations

import click

from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json


@click.command(short_help="Stop a job with a savepoint.")
@click.argument("job_id", metavar="<Job ID>")
@click.option(
    "-p",
    "--savepointPath",
    "savepoint_path",
    metavar="<savepointPath>",
    help="Directory of the savepoint (default execution.checkpointing.savepoint-dir).",
)
@click.option(
    "-d", "--drain", is_flag=True, help="Process all available input before taking the savepoint."
)
@click.option(
    "-type",
    "--type",
    "savepoint_type",
    type=click.Choice(["canonical", "native"]),
    default=None,
    help="Accepted for Flink compatibility: Spark has one format.",
)
@common_options
@output_option
def stop(
    job_id: str,
    savepoint_path: str | None,
    drain: bool,
    savepoint_type: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Stop a running job between micro-batches, take a savepoint, end it FINISHED."""
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.savepoints import service

    job_id = parse_job_id(job_id)
    config = load_config(conf_dir, dynamic)
    if output != "json":
        echo(f'Suspending job "{job_id}" with a savepoint.')
    path = service.stop(config, job_id, savepoint_path, drain)
    if output == "json":
        print_json({"jid": job_id, "savepoint": path, "state": "FINISHED"})
    else:
        echo(f"Savepoint completed. Path: {path}")
