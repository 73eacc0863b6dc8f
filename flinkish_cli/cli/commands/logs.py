"""``flinkish logs <JobID> [-f]``: a job's full driver log (Spark's log, the script's output).

The log opened is ``<env.log.dir>/flinkish-<JobID>.log`` of this shell's configuration, never
a path read from the job's status (see :mod:`flinkish_cli.registry.logs`).
"""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, job_client, load_config


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

    client = job_client(load_config(conf_dir, dynamic))
    for chunk in client.log(job_id, follow=follow, last_lines=lines):
        sys.stdout.write(chunk)
        sys.stdout.flush()
