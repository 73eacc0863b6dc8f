"""``flinkish cancel [-s [dir]] <JobID>``: stop a running job at once; it ends CANCELED.

``-s/--withSavepoint [dir]`` is Flink's deprecated "cancel with a savepoint": flinkish takes
the savepoint between micro-batches (as ``stop`` does), then the job ends CANCELED. Without a
directory the default one (execution.checkpointing.savepoint-dir) is used; ``cancel -s
<JobID>`` reads the word after ``-s`` as the job, as Flink does.
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand, format_type, job_and_target
from flinkish_cli.cli.options import (
    common_options,
    job_client,
    load_config,
    output_option,
    savepoint_dir_option,
    savepoint_type_option,
)
from flinkish_cli.cli.output import echo, print_json, warn


@click.command(cls=FlinkCommand, short_help="Cancel a running job.")
@click.argument("args", nargs=-1, metavar="<Job ID>")
@savepoint_dir_option(
    "-s",
    "--withSavepoint",
    "with_savepoint",
    "[<targetDirectory>]",
    "Deprecated (use 'stop'): take a savepoint, then cancel. Without a directory, "
    "execution.checkpointing.savepoint-dir.",
)
@savepoint_type_option("With -s: canonical or native (Spark has one format; both give the same).")
@common_options
@output_option
def cancel(
    args: tuple[str, ...],
    with_savepoint: str | None,
    savepoint_type: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Cancel a running job: its queries stop at once and it ends CANCELED."""
    from flinkish_cli.registry.jobid import parse_job_id

    text = output != "json"
    if with_savepoint is None:
        job_text, _, extra = job_and_target(
            args, None, "Missing JobID. Specify a JobID to cancel a job."
        )
        _ignore(extra)
        job_id = parse_job_id(job_text)
        _cancel(job_id, load_config(conf_dir, dynamic), text)
        return
    job_text, target, extra = job_and_target(
        args, with_savepoint, "Missing JobID. Specify a JobID to cancel a job."
    )
    _ignore(extra)
    job_id = parse_job_id(job_text)
    client = job_client(load_config(conf_dir, dynamic))
    fmt = format_type(savepoint_type)
    if text:
        echo(
            'DEPRECATION WARNING: Cancelling a job with savepoint is deprecated. Use "stop" '
            "instead."
        )
        where = f"to {target}." if target else "to default savepoint directory."
        echo(f"Cancelling job {job_id} with {fmt} savepoint {where}")
    from flinkish_cli.registry.status import JobState

    outcome = client.stop(job_id, target, False, fmt, end_state=JobState.CANCELED)
    if text:
        echo(f"Cancelled job {job_id}. Savepoint stored in {outcome.path}.")
    else:
        print_json({"jid": job_id, "savepoint": outcome.path, "state": outcome.state.value})
    problem = outcome.ended_as(JobState.CANCELED)
    if problem is not None:
        raise problem


def _cancel(job_id: str, config: object, text: bool) -> None:
    client = job_client(config)
    if text:
        echo(f"Cancelling job {job_id}.")
    status = client.cancel(job_id)
    if text:
        echo(f"Cancelled job {job_id}.")
    else:
        print_json(status.summary())


def _ignore(extra: tuple[str, ...]) -> None:
    if extra:
        warn(f"Ignoring arguments after the JobID: {' '.join(extra)}")
