"""``flinkish logs <JobID> [-f]``: a job's full driver log (Spark's log, the script's output).

The log opened is ``<env.log.dir>/flinkish-<JobID>.log`` of this shell's configuration, never
a path read from the job's status (see :mod:`flinkish_cli.registry.logs`).
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, load_config


@click.command(cls=FlinkCommand, short_help="Show a job's driver log.")
@click.argument("job_id", metavar="<Job ID>")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the job ends.")
@click.option(
    "-n", "--lines", type=click.IntRange(min=0), default=None, help="Only the last N lines."
)
@common_options
def logs(
    job_id: str,
    follow: bool,
    lines: int | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
) -> None:
    """Print the driver log of a job; -f follows it while the job runs."""
    import sys

    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.registry.logs import stream_log
    from flinkish_cli.registry.store import registry_for

    config = load_config(conf_dir, dynamic)
    log_dir = str(config.get("env.log.dir"))
    chunks = stream_log(
        registry_for(config), parse_job_id(job_id), log_dir, follow=follow, last_lines=lines
    )
    for chunk in chunks:
        sys.stdout.write(chunk)
        sys.stdout.flush()
