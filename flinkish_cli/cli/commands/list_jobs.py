"""``flinkish list``: running, scheduled and (with ``-a``) terminated jobs, as Flink lists them.

Reads the registry only: no Spark, no JVM. Output is Flink's, line for line: "Waiting for
response...", then per section either its jobs between rules or "No running jobs." /
"No scheduled jobs."; the terminated section (``-a``) is printed only when it has jobs.

A job whose status file cannot be read is listed with the state UNKNOWN in a section of its
own (text) or as ``"state": "UNKNOWN"`` with the reason as ``failure-cause`` (JSON), and a
warning on standard error says why; the other jobs are listed as usual.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, job_client, load_config, output_option
from flinkish_cli.cli.output import echo, print_json, warn

if TYPE_CHECKING:
    from flinkish_cli.registry.history import SavepointRecord
    from flinkish_cli.registry.rescales import RescaleHistory
    from flinkish_cli.registry.status import JobStatus
    from flinkish_cli.registry.store import UnreadableJob

RULE = "-" * 62
RUNNING_HEADER = "------------------ Running/Restarting Jobs -------------------"
SCHEDULED_HEADER = "----------------------- Scheduled Jobs -----------------------"
TERMINATED_HEADER = "---------------------- Terminated Jobs -----------------------"
UNREADABLE_HEADER = "---------------------- Unreadable Jobs -----------------------"
UNKNOWN = "UNKNOWN"
DATE_FORMAT = "%d.%m.%Y %H:%M:%S"


#: Rescale records of a job shown by ``--output json`` (its history keeps more).
RESCALES_SHOWN = 10


def _line(status: JobStatus, now: float) -> str:
    start = time.strftime(DATE_FORMAT, time.localtime(status.start_time))
    state = status.effective_state(now).value
    line = f"{start} : {status.job_id} : {status.name} ({state})"
    # a yarn-application job's YARN application, after Flink's three fields (which stay
    # as Flink prints them, for scripts that read them)
    return f"{line} : {status.yarn_application}" if status.yarn_application else line


def _unreadable_line(job: UnreadableJob) -> str:
    when = (
        time.strftime(DATE_FORMAT, time.localtime(job.modified))
        if job.modified is not None
        else "--.--.---- --:--:--"
    )
    return f"{when} : {job.job_id} : (unreadable status) ({UNKNOWN})"


def _section(header: str, lines: list[str], empty: str | None) -> None:
    if not lines:
        if empty is not None:
            echo(empty)
        return
    echo(header)
    for line in lines:
        echo(line)
    echo(RULE)


def _job_json(
    status: JobStatus,
    now: float,
    savepoint: SavepointRecord | None,
    rescales: RescaleHistory | None = None,
) -> dict[str, Any]:
    """A job for ``--output json``: its status's summary, its last savepoint (the newest
    completed of its history) and, for a job the autoscaler evaluates, ``autoscaler``: its
    latest evaluation (target, direction, reason, the guard that held it back) and its last
    :data:`RESCALES_SHOWN` rescale records, newest first (null otherwise)."""
    document = {**status.summary(now), "last-savepoint": savepoint.summary() if savepoint else None}
    autoscaler = None
    if rescales is not None and (rescales.latest or rescales.rescales):
        latest = rescales.latest or {}
        autoscaler = {
            "parallelism": status.parallelism,
            "latest": {k: latest.get(k) for k in ("time", "target", "direction", "reason",
                                                   "blocked_by")} if latest else None,
            "rescales": [r.to_dict() for r in reversed(rescales.rescales[-RESCALES_SHOWN:])],
        }  # fmt: skip
    document["autoscaler"] = autoscaler
    return document


def _unreadable_json(job: UnreadableJob) -> dict[str, Any]:
    return {
        "jid": job.job_id,
        "name": None,
        "state": UNKNOWN,
        "start-time": -1,
        "end-time": -1,
        "failure-cause": f"The status file is unreadable: {job.reason}",
        "queries": {},
        "restored-from": None,
        "status-file": job.path,
    }


@click.command("list", cls=FlinkCommand, short_help="List jobs.")
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
    if not (running or scheduled or show_all):
        running = scheduled = True  # Flink's default: running and scheduled
    client = job_client(load_config(conf_dir, dynamic)).open()
    if output != "json":
        echo("Waiting for response...")
    now = time.time()
    jobs, unreadable = client.list_jobs()
    states = {s.job_id: s.effective_state(now) for s in jobs}
    ended = [s for s in jobs if states[s.job_id].is_terminal]
    scheduled_jobs = [s for s in jobs if states[s.job_id].is_scheduled]
    live = [
        s for s in jobs if not states[s.job_id].is_terminal and not states[s.job_id].is_scheduled
    ]
    for job in unreadable:
        warn(
            f"The status file of job {job.job_id} is unreadable ({job.reason}); it is listed "
            f"as {UNKNOWN}. It is {job.path}; remove the job's directory if the job is gone."
        )
    show_running, show_scheduled = running or show_all, scheduled or show_all
    if output == "json":
        chosen = (live if show_running else []) + (scheduled_jobs if show_scheduled else [])
        chosen += ended if show_all else []
        savepoints = client.last_savepoints([s.job_id for s in chosen])
        rescales = client.rescale_histories(chosen)
        documents = [
            _job_json(s, now, savepoints[s.job_id], rescales.get(s.job_id)) for s in chosen
        ]
        print_json({"jobs": documents + [_unreadable_json(j) for j in unreadable]})
        return

    def lines(statuses: list[JobStatus]) -> list[str]:
        return [_line(s, now) for s in sorted(statuses, key=lambda s: s.start_time)]

    if show_running:
        _section(RUNNING_HEADER, lines(live), "No running jobs.")
    if show_scheduled:
        _section(SCHEDULED_HEADER, lines(scheduled_jobs), "No scheduled jobs.")
    if show_all:
        _section(TERMINATED_HEADER, lines(ended), None)
    _section(UNREADABLE_HEADER, [_unreadable_line(j) for j in unreadable], None)
