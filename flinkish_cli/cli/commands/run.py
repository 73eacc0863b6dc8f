"""``flinkish run``: submit a PySpark job, as ``flink run -py`` does, attached or detached.

Also ``run-application``, the action Flink 1.x had for application mode (Flink 2.0 removed
it): flinkish runs it as ``run``, provided the target is an application one
(``-t yarn-application`` / ``kubernetes-application``, or execution.target), and refuses it
otherwise, as Flink refused application mode on other targets.

Attached, standard output carries Flink's lines ("Job has been submitted with JobID ...",
then "Program execution finished", "Job with JobID ... has finished.", "Job Runtime: ...")
and the script's own output; flinkish's line per completed micro-batch goes to standard
error, or into the live view on a terminal.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import load_config
from flinkish_cli.cli.output import echo, print_json, warn
from flinkish_cli.cli.program_options import program_options, program_request

APPLICATION_TARGETS = ("yarn-application", "kubernetes-application")


@click.command(
    cls=FlinkCommand,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
    short_help="Submit a PySpark job.",
)
@program_options
def run(**params: Any) -> None:
    """Run a PySpark job: flinkish run [OPTIONS] <job.py> [job arguments].

    Prints "Job has been submitted with JobID <id>". Attached (the default) it follows the
    job until it ends: exit status 0 when it finished, 1 when it failed or was cancelled.
    Ctrl-C or SIGTERM stops the job gracefully.
    """
    _run(application=False, **params)


@click.command(
    "run-application",
    cls=FlinkCommand,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
    short_help="Run a job in application mode (Flink 1.x).",
)
@program_options
def run_application(**params: Any) -> None:
    """Flink 1.x's application mode: 'run' with -t yarn-application or kubernetes-application.

    Flink 2.0 removed this action; flinkish keeps it for existing scripts and refuses it
    without an application target, as Flink refused application mode elsewhere.
    """
    _run(application=True, **params)


def _run(
    application: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
    **params: Any,
) -> None:
    action = "run-application" if application else "run"
    request = program_request(action, params)
    config = load_config(conf_dir, dynamic, request.config_flags())
    if application:
        _require_application_target(config)
    from flinkish_cli.client.connect import submit

    submit(config, request, RunPresenter(output))


def _require_application_target(config: Any) -> None:
    from flinkish_cli.errors import UsageError

    target = str(config.get("execution.target") or "local")
    if target not in APPLICATION_TARGETS:
        raise UsageError(
            f"'run-application' needs an application target, and the target is {target}.",
            "Add -t yarn-application or -t kubernetes-application, or use 'flinkish run' for "
            f"{target}.",
        )
    warn(f"'run-application' was removed in Flink 2.0; flinkish runs it as 'run -t {target}'.")


class RunPresenter:
    """How ``run`` shows a job: Flink's lines on standard output, flinkish's batch lines on
    standard error (a live view instead on a terminal), or one JSON document."""

    def __init__(self, output: str) -> None:
        from flinkish_cli.cli.output import is_terminal

        self.json = output == "json"
        self.live_view: Any = None
        self.terminal = is_terminal() and not self.json

    def notice(self, message: str) -> None:
        from flinkish_cli.cli.output import warn

        warn(message)

    def submitted(self, job_id: str) -> None:
        if not self.json:
            echo(f"Job has been submitted with JobID {job_id}")

    def output_line(self, line: str) -> None:
        if self.live_view is not None:
            self.live_view.console.print(line, markup=False, highlight=False)
        elif not self.json:
            echo(line)

    def update(self, update: Any) -> None:
        if self.json:
            return
        if self.terminal:
            self._live(update.status)
            return
        for name, progress in update.batches:  # off standard output: scripts parse Flink's
            echo(format_batch(name, progress), err=True)

    def _live(self, status: Any) -> None:
        from flinkish_cli.cli.live import job_table

        if self.live_view is None:
            from rich.live import Live

            from flinkish_cli.cli.output import console

            self.live_view = Live(job_table(status), console=console(), refresh_per_second=4)
            self.live_view.start()
        else:
            self.live_view.update(job_table(status))

    def close(self) -> None:
        if self.live_view is not None:
            self.live_view.stop()
            self.live_view = None

    def ended(self, status: Any, detached: bool) -> None:
        self.close()
        if self.json:
            print_json(status.summary())
            return
        if detached:
            return
        state = status.effective_state().value
        if state == "FINISHED":  # Flink's JobExecutionResult, printed by its client
            runtime_ms = int(((status.end_time or time.time()) - status.start_time) * 1000)
            echo("Program execution finished")
            echo(f"Job with JobID {status.job_id} has finished.")
            echo(f"Job Runtime: {runtime_ms} ms")
            echo()

    def interrupted(self, job_id: str, signum: int, hard: bool) -> None:
        action = "Cancelling" if hard else "Stopping"
        echo(f"{action} job {job_id} ({signal.Signals(signum).name})...", err=True)


def format_batch(name: str, progress: Any) -> str:
    """The plain line for one completed micro-batch (stable: scripts and cron logs read it)."""
    watermark = progress.watermark or "-"
    return (
        f"{progress.timestamp} query={name} batch={progress.batch_id} "
        f"inputRows={progress.input_rows} "
        f"inputRowsPerSecond={progress.input_rows_per_second:.1f} "
        f"processedRowsPerSecond={progress.processed_rows_per_second:.1f} "
        f"stateRows={progress.state_rows} watermark={watermark}"
    )
