"""``flinkish checkpoint [-full] <JobID>``: wait for the job's next completed checkpoint.

Prints Flink's lines; the checkpoint's number is the job's highest committed micro-batch id
plus one (each micro-batch is a checkpoint; batch 0 is checkpoint 1). The checkpoint's
directory and each query's batch go to standard error (and into ``--output json``).
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand, require_job
from flinkish_cli.cli.options import common_options, job_client, load_config, output_option
from flinkish_cli.cli.output import echo, print_json


@click.command(cls=FlinkCommand, short_help="Wait for a job's next checkpoint.")
@click.argument("args", nargs=-1, metavar="<Job ID>")
@click.option(
    "-full",
    "--full",
    is_flag=True,
    help="Accepted for Flink compatibility: every Spark checkpoint is complete.",
)
@common_options
@output_option
def checkpoint(
    args: tuple[str, ...],
    full: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Wait until every query of the job has committed its next micro-batch."""
    from flinkish_cli.registry.jobid import parse_job_id

    job_text, _ = require_job(args, "Missing JobID. Specify a Job ID to manipulate a checkpoint.")
    job_id = parse_job_id(job_text)
    client = job_client(load_config(conf_dir, dynamic))
    text = output != "json"
    if text:
        echo(f"Triggering checkpoint for job {job_id}.")
        echo("Waiting for response...")
    done = client.checkpoint(job_id)
    if not text:
        print_json({"jid": job_id, **done.to_result(), "id": done.checkpoint_id})
        return
    kind = "(FULL)" if full else ""
    echo(f"Checkpoint{kind} {done.checkpoint_id} for job {job_id} completed.")
    echo("You can resume your program from this checkpoint with the run command.")
    batches = ", ".join(f"{name} at batch {b}" for name, b in sorted(done.batches.items()))
    echo(f"Checkpoint directory: {done.path} ({batches or 'no active query'})", err=True)
