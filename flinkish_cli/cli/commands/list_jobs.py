"""``flinkish list``: running, scheduled and (with ``-a``) terminated jobs, as Flink lists them.

Reads the registry only: no Spark, no JVM.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json

if TYPE_CHECKING:
    from flinkish_cli.registry.status import JobStatus

RULE = "-" * 62


def _line(status: JobStatus, now: float) -> str:
    start = time.strftime("%d.%m.%Y %H:%M:%S", time.localtime(status.start_time))
    state = status.effective_state(now).value
    return f"{start} : {status.job_id} : {status.name} ({state})"


def _section(title: str, jobs: list[JobStatus], now: float, empty: str) -> None:
    if not jobs:
        echo(empty)
        return
    echo(f" {title} ".center(62, "-"))
    for status in sorted(jobs, key=lambda s: s.start_time):
        echo(_line(status, now))
    echo(RULE)


@click.command("list", short_help="List jobs.")
@click.option("-r", "--running", is_flag=True, help="Show only running jobs.")
@click.option("-s", "--scheduled", is_flag=True, help="Show only scheduled jobs.")
@click.option("-a", "--all", "show_all", is_flag=True, help="Show all jobs, terminated too.")
@common_options
@output_option
def list_jobs(
    running: bool,
    scheduled: bool,
    show_all: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """List running and scheduled jobs (-a: terminated ones too), one line each."""
    from flinkish_cli.registry.store import registry_for

    registry = registry_for(load_config(conf_dir, dynamic))
    now = time.time()
    jobs = registry.list()
    states = {s.job_id: s.effective_state(now) for s in jobs}
    live = [
        s
        for s in jobs
        if states[s.job_id].value in ("RUNNING", "RESTARTING", "CANCELLING", "FAILING")
    ]
    sched = [s for s in jobs if states[s.job_id].is_scheduled]
    ended = [s for s in jobs if states[s.job_id].is_terminal]
    show_running = running or show_all or not scheduled
    show_scheduled = scheduled or show_all or not running
    if output == "json":
        chosen = (live if show_running else []) + (sched if show_scheduled else [])
        chosen += ended if show_all else []
        print_json({"jobs": [s.summary(now) for s in chosen]})
        return
    if show_running:
        _section("Running/Restarting Jobs", live, now, "No running jobs.")
    if show_scheduled:
        _section("Scheduled Jobs", sched, now, "No scheduled jobs.")
    if show_all:
        _section("Terminated Jobs", ended, now, "No terminated jobs.")
