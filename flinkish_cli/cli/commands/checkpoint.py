"""``flinkish checkpoint <JobID>``: wait for the job's next completed checkpoint."""

from __future__ import annotations

import click

from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json


@click.command(short_help="Wait for a job's next checkpoint.")
@click.argument("job_id", metavar="<Job ID>")
@click.option(
    "-full",
    "--full",
    is_flag=True,
    help="Accepted for Flink compatibility: every Spark checkpoint is complete.",
)
@common_options
@output_option
def checkpoint(
    job_id: str,
    full: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Wait until every query of the job has committed its next micro-batch."""
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.savepoints import service

    job_id = parse_job_id(job_id)
    if output != "json":
        echo(f"Triggering checkpoint for job {job_id}.")
    result = service.checkpoint(load_config(conf_dir, dynamic), job_id)
    if output == "json":
        print_json({"jid": job_id, **result})
        return
    for name, batch in sorted(result["batches"].items()):
        echo(f"query={name} batch={batch}")
    echo(f"Checkpoint completed. Path: {result['path']}")
