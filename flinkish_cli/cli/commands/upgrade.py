"""``flinkish upgrade [options] <JobID> <job.py> [args]``: replace a job's program, keep
its state, and roll back when the new program does not become stable.

What it prints, for scripts: Flink's lines where Flink has one ("Savepoint completed. Path:
<p>", "Job has been submitted with JobID <id>", once for the new job and once for a
rollback's), notices on standard error (a fallback to the last state, a rollback starting),
then one final line (or, with ``--output json``, one document) saying how it ended. Exit
status 0 only when the new program runs and is stable; 1 after a rollback, when the new
program is left unstable (``--no-rollback``, or output a rollback would have to undo), when
both failed, and on any refusal (then the old job is untouched).

With ``-m host:port`` naming a ``flinkish web`` that takes programs (``web.submit.enable``),
the new program is uploaded and the server carries the upgrade out; the lines and exit
statuses are the same (:func:`~flinkish_cli.client.connect.upgrade`). A flinkish web
of this registry that takes no programs is refused (exit 1), never a silent upgrade from
storage.
"""

from __future__ import annotations

from typing import Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import load_config
from flinkish_cli.cli.output import echo, print_json
from flinkish_cli.cli.program_options import program_options, program_request


@click.command(
    cls=FlinkCommand,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
    short_help="Replace a job's program, keeping its state.",
)
@click.option(
    "--upgrade-mode",
    "upgrade_mode",
    type=click.Choice(["savepoint", "last-state", "stateless"], case_sensitive=False),
    default="savepoint",
    show_default=True,
    help="savepoint: stop with a savepoint, start from it; last-state: start from the job's "
    "latest retained checkpoint; stateless: start empty.",
)
@click.option(
    "--savepointPath",
    "savepoint_path",
    metavar="<savepointPath>",
    help="Directory of the upgrade's savepoint (else execution.checkpointing.savepoint-dir).",
)
@click.option(
    "--no-rollback",
    is_flag=True,
    help="Leave a new program that does not become stable to its restart strategy.",
)
@click.argument("job_id", metavar="<JobID>")
@program_options
def upgrade(
    job_id: str,
    upgrade_mode: str,
    savepoint_path: str | None,
    no_rollback: bool,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
    **params: Any,
) -> None:
    """Upgrade a running job to a new program: flinkish upgrade [OPTIONS] <JobID> <job.py>
    [job arguments].

    The new program must become stable (every query started and committed a batch, no
    failure) within flinkish.upgrade.readiness.timeout, or the previous program resumes from
    the upgrade's savepoint. Exit status 0 only when the new program is stable. run's
    options apply (-p rescales, -n, -D, -m, -t); the new job always runs detached.
    """
    from flinkish_cli.client import connect
    from flinkish_cli.client.base import resolve_local
    from flinkish_cli.client.upgrade.outcome import UpgradeMode, UpgradeRequest
    from flinkish_cli.errors import UsageError
    from flinkish_cli.registry.jobid import parse_job_id

    for flag, given in (
        ("-s", params.get("from_savepoint")),
        ("-sae", params.get("shutdown_on_exit")),
    ):
        if given:
            raise UsageError(
                f"{flag} cannot be used with 'upgrade': the new program starts from the job's "
                "state and always runs detached.",
                "Use 'flinkish run' to start a program from a savepoint of your choice.",
            )
    old = parse_job_id(job_id)
    request = program_request("upgrade", params)
    config = load_config(conf_dir, dynamic, request.config_flags())
    presenter = UpgradeLines(output)
    outcome = connect.upgrade(
        config,
        UpgradeRequest(
            job_id=old,
            program=request,
            mode=UpgradeMode(upgrade_mode.lower()),
            savepoint_dir=resolve_local(savepoint_path) if savepoint_path else None,
            rollback=not no_rollback,
        ),
        presenter,
    )
    if presenter.json:
        print_json(outcome.summary())
    else:
        echo(outcome.line)
    if outcome.result.value != "STABLE":
        raise click.exceptions.Exit(1)


class UpgradeLines:
    """Flink's lines on standard output, notices on standard error; nothing but the final
    document with ``--output json``."""

    def __init__(self, output: str) -> None:
        self.json = output == "json"

    def savepoint(self, path: str) -> None:
        if not self.json:
            echo(f"Savepoint completed. Path: {path}")

    def submitted(self, job_id: str) -> None:
        if not self.json:
            echo(f"Job has been submitted with JobID {job_id}")

    def notice(self, message: str) -> None:
        echo(message, err=True)
