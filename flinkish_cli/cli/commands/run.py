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

from flinkish_cli.cli.flink_args import FlinkCommand, refuse_java
from flinkish_cli.cli.options import common_options, general_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json, warn

#: Flink's deprecation line for -rm (printed on standard error).
RESTORE_MODE_DEPRECATED = "The option 'restoreMode' is deprecated. Please use 'claimMode' instead."
APPLICATION_TARGETS = ("yarn-application", "kubernetes-application")


def _split(values: tuple[str, ...]) -> list[str]:
    """Flink's list flags are comma-separated and may be repeated."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _run_options(func: Any) -> Any:
    """The options of ``run`` (and ``run-application``), in Flink's names."""
    options = [
        click.argument("job", required=False, metavar="<job.py>"),
        click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[job arguments]"),
        click.option(
            "-py",
            "--python",
            "python_file",
            metavar="<pythonFile>",
            help="Python script with the job's entry point (same as <job.py>).",
        ),
        click.option(
            "-pym",
            "--pyModule",
            "py_module",
            metavar="<pythonModule>",
            help="Python module with the job's entry point; needs -pyfs.",
        ),
        click.option(
            "-pyfs",
            "--pyFiles",
            "py_files",
            multiple=True,
            metavar="<pythonFiles>",
            help="Files, directories or zips shipped to the executors (comma-separated).",
        ),
        click.option(
            "-pyarch",
            "--pyArchives",
            "py_archives",
            multiple=True,
            metavar="<arg>",
            help="Archives extracted on the executors; 'archive.zip#dir' names the directory.",
        ),
        click.option(
            "-pyexec",
            "--pyExecutable",
            "py_executable",
            metavar="<arg>",
            help="Python interpreter of the executors (python.executable).",
        ),
        click.option(
            "-pyclientexec",
            "--pyClientExecutable",
            "py_client_executable",
            metavar="<arg>",
            help="Python interpreter of the driver (python.client.executable).",
        ),
        click.option(
            "-pyreq",
            "--pyRequirements",
            "py_requirements",
            metavar="<arg>",
            help="requirements.txt installed and shipped to the executors "
            "('requirements.txt#cache_dir' installs offline).",
        ),
        click.option(
            "-pypath",
            "--pyPythonPath",
            "py_python_path",
            metavar="<arg>",
            help="Python paths of the workers, ':'-separated (python.pythonpath).",
        ),
        click.option(
            "-p",
            "--parallelism",
            type=click.IntRange(min=1),
            metavar="<parallelism>",
            help="Parallelism of the job (parallelism.default).",
        ),
        click.option("-d", "--detached", is_flag=True, help="Return once the job runs."),
        click.option(
            "-s",
            "--fromSavepoint",
            "from_savepoint",
            metavar="<savepointPath>",
            help="Savepoint, or <execution.checkpointing.dir>/<JobID>, to resume from.",
        ),
        click.option(
            "-n",
            "--allowNonRestoredState",
            "allow_non_restored",
            is_flag=True,
            help="Skip savepoint state of queries the job no longer has.",
        ),
        click.option(
            "-cm",
            "--claimMode",
            "claim_mode",
            type=click.Choice(["no_claim", "claim"], case_sensitive=False),
            default=None,
            help="no_claim (default) never modifies the savepoint; claim lets the job take it "
            "over.",
        ),
        click.option(
            "-rm",
            "--restoreMode",
            "restore_mode",
            hidden=True,
            type=click.Choice(["no_claim", "claim"], case_sensitive=False),
            help="Deprecated: use -cm.",
        ),
        click.option(
            "-sae",
            "--shutdownOnAttachedExit",
            "shutdown_on_exit",
            is_flag=True,
            help="Attached: cancel the job when this command ends abruptly, even killed.",
        ),
        click.option("-c", "--class", "java_class", hidden=True, help="Refused (Java only)."),
        click.option(
            "-C", "--classpath", "java_classpath", multiple=True, hidden=True, help="Refused."
        ),
        click.option("-j", "--jarfile", "java_jar", hidden=True, help="Refused (Java only)."),
        common_options,
        output_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command(
    cls=FlinkCommand,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
    short_help="Submit a PySpark job.",
)
@_run_options
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
@_run_options
def run_application(**params: Any) -> None:
    """Flink 1.x's application mode: 'run' with -t yarn-application or kubernetes-application.

    Flink 2.0 removed this action; flinkish keeps it for existing scripts and refuses it
    without an application target, as Flink refused application mode elsewhere.
    """
    _run(application=True, **params)


def _run(
    application: bool,
    job: str | None,
    job_args: tuple[str, ...],
    python_file: str | None,
    py_module: str | None,
    py_files: tuple[str, ...],
    py_archives: tuple[str, ...],
    py_executable: str | None,
    py_client_executable: str | None,
    py_requirements: str | None,
    py_python_path: str | None,
    parallelism: int | None,
    detached: bool,
    from_savepoint: str | None,
    allow_non_restored: bool,
    claim_mode: str | None,
    restore_mode: str | None,
    shutdown_on_exit: bool,
    java_class: str | None,
    java_classpath: tuple[str, ...],
    java_jar: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    from flinkish_cli.client.jobs import resolve_local
    from flinkish_cli.errors import UsageError
    from flinkish_cli.submission.submit import RunRequest

    if java_class is not None:
        raise refuse_java("-c", f"-c/--class {java_class} (a Java entry class)")
    if java_classpath:
        raise refuse_java("-C", "-C/--classpath (the classpath of Java user code)")
    if java_jar is not None:
        raise refuse_java("jar", f"-j/--jarfile {java_jar} (a Java program)")
    general = general_options()
    action = "run-application" if application else "run"
    if general.yarn_application_id is not None:
        raise UsageError(
            f"-yid/--yarnapplicationId cannot be used with '{action}': Spark starts one YARN "
            "application per job and cannot join a running one.",
            "Use -t yarn-application (the job in its own application) or -t yarn-session.",
        )
    script = python_file
    args = list(job_args)
    if script and job:
        args.insert(0, job)
    elif not script and not py_module:
        script = job
    elif py_module and job:
        args.insert(0, job)
    if not script and not py_module:
        raise UsageError(
            "No job given.", f"Usage: flinkish {action} [OPTIONS] <job.py> [arguments]"
        )
    if script and script.lower().endswith(".jar"):
        raise refuse_java("jar", f"{script} (a Java program)")
    if restore_mode is not None:
        echo(RESTORE_MODE_DEPRECATED, err=True)
    request = RunRequest(
        script=script,
        module=py_module,
        args=args,
        py_files=_split(py_files),
        py_archives=_split(py_archives),
        py_executable=py_executable,
        py_client_executable=py_client_executable,
        py_requirements=py_requirements,
        py_python_path=py_python_path,
        parallelism=parallelism,
        detached=detached,
        target=general.execution_target,
        jobmanager=general.jobmanager,
        from_savepoint=resolve_local(from_savepoint) if from_savepoint else None,
        allow_non_restored_state=allow_non_restored,
        claim_mode=(claim_mode or restore_mode or "no_claim").lower(),
        shutdown_on_attached_exit=shutdown_on_exit,
    )
    config = load_config(conf_dir, dynamic, request.config_flags())
    if application:
        _require_application_target(config)
    from flinkish_cli.client.jobs import JobClient

    JobClient(config).submit(request, RunPresenter(output))


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
