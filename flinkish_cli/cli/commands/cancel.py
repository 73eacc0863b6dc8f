"""``flinkish cancel <JobID>``: stop a running job at once; it ends CANCELED."""

from __future__ import annotations

import click

from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json


@click.command(short_help="Cancel a running job.")
@click.argument("job_id", metavar="<Job ID>")
@click.option(
    "-s",
    "--withSavepoint",
    "with_savepoint",
    metavar="<targetDirectory>",
    hidden=True,
    help="Deprecated in Flink: use 'flinkish stop'.",
)
@common_options
@output_option
def cancel(
    job_id: str,
    with_savepoint: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Cancel a running job: its queries stop at once and it ends CANCELED."""
    from flinkish_cli.errors import UsageError
    from flinkish_cli.registry.actions import cancel_job
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.registry.store import registry_for

    if with_savepoint:
        raise UsageError(
            "Cancelling with a savepoint is deprecated, as in Flink.",
            f"Use: flinkish stop --savepointPath {with_savepoint} {job_id}",
        )
    job_id = parse_job_id(job_id)
    registry = registry_for(load_config(conf_dir, dynamic))
    if output != "json":
        echo(f"Cancelling job {job_id}.")
    status = cancel_job(registry, job_id)
    if output == "json":
        print_json(status.summary())
    else:
        echo(f"Cancelled job {job_id}.")
