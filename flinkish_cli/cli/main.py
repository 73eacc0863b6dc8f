"""The ``flinkish`` click group: registers the actions and turns errors into exit statuses.

Actions are imported lazily (see :class:`LazyGroup`) so that ``flinkish --help`` and commands
that need no Spark start fast and never import pyspark.

Exit statuses are Flink's: 0 on success, 1 on every error (usage errors included, an unknown
action, no action at all), and 130 when interrupted (Ctrl-C).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import click

from flinkish_cli import __version__

#: The exit statuses of every action (Flink's CLI has the same three; the command reference
#: lists them): success, any error a user can fix or a bug, and an interruption.
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130
EXIT_STATUSES: dict[int, str] = {
    EXIT_OK: "The action did what it was asked (an attached job finished, a savepoint was taken).",
    EXIT_ERROR: (
        "Any error: bad usage (an unknown action or option, a missing argument), a job that "
        "failed or was cancelled while attached, an upgrade whose new program did not become "
        "stable, a refused request, or an internal error."
    ),
    EXIT_INTERRUPTED: "Interrupted (Ctrl-C or SIGTERM) while the action waited.",
}

#: action name -> "module:attribute" of its click command, in the order ``--help`` lists them.
ACTIONS: dict[str, tuple[str, str]] = {
    "run": ("flinkish_cli.cli.commands.run:run", "Submit a PySpark job, attached or detached."),
    "run-application": (
        "flinkish_cli.cli.commands.run:run_application",
        "Flink 1.x's application mode: run with an application target.",
    ),
    "upgrade": (
        "flinkish_cli.cli.commands.upgrade:upgrade",
        "Replace a job's program, keeping its state; roll back if unstable.",
    ),
    "info": ("flinkish_cli.cli.commands.info:info", "Show the plan of a job's queries."),
    "list": ("flinkish_cli.cli.commands.list_jobs:list_jobs", "List running and past jobs."),
    "cancel": ("flinkish_cli.cli.commands.cancel:cancel", "Cancel a running job at once."),
    "stop": ("flinkish_cli.cli.commands.stop:stop", "Stop a job gracefully with a savepoint."),
    "savepoint": (
        "flinkish_cli.cli.commands.savepoint:savepoint",
        "Trigger, inspect or dispose of savepoints.",
    ),
    "checkpoint": (
        "flinkish_cli.cli.commands.checkpoint:checkpoint",
        "Wait for a job's next completed checkpoint.",
    ),
    "state": (
        "flinkish_cli.cli.commands.state:state",
        "List, show or export the state of a savepoint, a checkpoint or a job.",
    ),
    "logs": ("flinkish_cli.cli.commands.logs:logs", "Show a job's driver log."),
    "config": ("flinkish_cli.cli.commands.config_cmd:config", "Show the effective configuration."),
    "web": ("flinkish_cli.cli.commands.web:web", "Serve Flink's REST API and /metrics."),
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported only when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in ACTIONS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = ACTIONS[name][0].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in ACTIONS or not self._available(cmd_name):
            return None
        module_name, attribute = ACTIONS[cmd_name][0].split(":")
        return getattr(importlib.import_module(module_name), attribute)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            from flinkish_cli.errors import UsageError

            actions = ", ".join(f'"{a}"' for a in self.list_commands(ctx))
            raise UsageError(
                f'"{name}" is not a valid action.',
                f"Valid actions are {actions}. Specify the version option (-v or --version) "
                "to print flinkish's version, the help option (-h or --help) to get help.",
            )
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, ACTIONS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Actions"):
                formatter.write_dl(rows)


def version_line() -> str:
    """Flink's version line: ``Version: <v>, Commit ID: <abbreviated commit>``; without the
    commit when flinkish does not run from a git checkout."""
    commit = git_commit(Path(__file__).resolve().parents[2])
    return f"Version: {__version__}" + (f", Commit ID: {commit[:7]}" if commit else "")


def git_commit(root: Path) -> str | None:
    """The commit checked out in ``root`` (read from ``.git``, without running git)."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            text = git.read_text().strip()
            if not text.startswith("gitdir:"):
                return None
            git = (root / text[len("gitdir:") :].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if _is_sha(head) else None
        ref = head[len("ref:") :].strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for base in (git, common):
            if (base / ref).is_file():
                sha = (base / ref).read_text().strip()
                return sha if _is_sha(sha) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _is_sha(parts[0]):
                    return parts[0]
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(version_line())
    ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-v",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print flinkish's version (and git commit) and exit.",
)
def cli() -> None:
    """Run PySpark jobs the way Apache Flink's bin/flink runs Flink jobs.

    Configuration comes from flink-conf.yaml or config.yaml in FLINK_CONF_DIR, --conf-dir
    or ./conf; -D key=value overrides it on every action.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script: run the CLI and map errors to exit statuses."""
    from flinkish_cli.cli.options import VERBOSE
    from flinkish_cli.errors import FlinkishError

    args = sys.argv[1:] if argv is None else argv
    if not args:
        click.echo(
            cli.get_help(
                click.Context(cli, info_name="flinkish", help_option_names=["-h", "--help"])
            )
        )
        _print_error("Please specify an action.", None)
        sys.exit(EXIT_ERROR)

    def verbose() -> bool:
        return VERBOSE["on"] or bool(os.environ.get("FLINKISH_VERBOSE"))

    try:
        status = cli.main(args=args, prog_name="flinkish", standalone_mode=False)
        if isinstance(status, int) and status:  # a command's click.exceptions.Exit(status)
            sys.exit(status)
    except FlinkishError as error:
        if verbose():
            import traceback

            traceback.print_exc()
        _print_error(error.message, error.hint)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        _print_error("Aborted.", None)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as error:
        _print_error(error.format_message(), _usage_hint(error))
        sys.exit(EXIT_ERROR)
    except click.exceptions.Exit as exit_:
        sys.exit(exit_.exit_code)
    except KeyboardInterrupt:
        _print_error("Interrupted.", None)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away (`flinkish logs ... | head`)
        from flinkish_cli.cli.output import discard_output

        discard_output()
        sys.exit(EXIT_OK)
    except Exception as error:  # a bug: say so, briefly unless verbose
        if verbose():
            raise
        _print_error(
            f"Internal error: {type(error).__name__}: {error}",
            "This is a bug in flinkish; run again with --verbose for the traceback.",
        )
        sys.exit(EXIT_ERROR)


def _usage_hint(error: click.ClickException) -> str | None:
    """How to get help, for click's usage errors (unknown option, missing argument...)."""
    ctx = getattr(error, "ctx", None)
    if ctx is None:
        return None
    return f"Use the help option (-h or --help) to get help on the command: {ctx.command_path} -h"


def _print_error(message: str, hint: str | None) -> None:
    from flinkish_cli.cli.output import echo

    echo(f"ERROR: {message}", err=True)
    if hint:
        echo(hint, err=True)
