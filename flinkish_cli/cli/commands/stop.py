"""``flinkish stop [-p [dir]] [-d] [-detached] [-type t] <JobID>``: stop with a savepoint.

As Flink's: ``-p/--savepointPath`` takes an optional directory (without one, or without
``-p`` at all, execution.checkpointing.savepoint-dir); ``stop -p <JobID>`` reads the word
after ``-p`` as the job. ``-d`` is ``--drain`` here (process all available input first).
``-detached`` writes the request, prints the trigger id and returns; the job carries it out.
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand, format_type, job_and_target
from flinkish_cli.cli.options import (
    common_options,
    detached_trigger_option,
    job_client,
    load_config,
    output_option,
    savepoint_dir_option,
    savepoint_type_option,
)
from flinkish_cli.cli.output import echo, print_json, print_trigger, warn


@click.command(cls=FlinkCommand, short_help="Stop a job with a savepoint.")
@click.argument("args", nargs=-1, metavar="<Job ID>")
@savepoint_dir_option(
    "-p",
    "--savepointPath",
    "savepoint_path",
    "[<savepointPath>]",
    "Directory of the savepoint (without one: execution.checkpointing.savepoint-dir).",
)
@click.option(
    "-d", "--drain", is_flag=True, help="Process all available input before taking the savepoint."
)
@detached_trigger_option
@savepoint_type_option()
@common_options
@output_option
def stop(
    args: tuple[str, ...],
    savepoint_path: str | None,
    drain: bool,
    detached: bool,
    savepoint_type: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Stop a running job between micro-batches, take a savepoint, end it FINISHED."""
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.registry.status import JobState

    job_text, target, extra = job_and_target(args, savepoint_path, "Missing JobId")
    if extra:
        warn(f"Ignoring arguments after the JobID: {' '.join(extra)}")
    job_id = parse_job_id(job_text)
    client = job_client(load_config(conf_dir, dynamic))
    fmt = format_type(savepoint_type)
    text = output != "json"
    if text:
        doing = "Draining" if drain else "Suspending"
        echo(f'{doing} job "{job_id}" with a {fmt} savepoint.')
    if detached:
        if text:
            echo(f"Triggering stop-with-savepoint in detached mode for job {job_id}.")
        trigger_id = client.stop_detached(job_id, target, drain, fmt)
        line = f"Successfully trigger stop-with-savepoint in detached mode, triggerId: {trigger_id}"
        print_trigger(job_id, trigger_id, line, text)
        return
    if text:
        echo(f"Triggering stop-with-savepoint for job {job_id}.")
        echo("Waiting for response...")
    outcome = client.stop(job_id, target, drain, fmt)
    if text:
        echo(f"Savepoint completed. Path: {outcome.path}")
    else:
        print_json({"jid": job_id, "savepoint": outcome.path, "state": outcome.state.value})
    problem = outcome.ended_as(JobState.FINISHED)
    if problem is not None:
        raise problem
