"""The ``flinkish`` click group: registers the actions and turns errors into exit statuses.

Actions are imported lazily (see :class:`LazyGroup`) so that ``flinkish --help`` and commands
that need no Spark start fast and never import pyspark.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from flinkish_cli import __version__

#: action name -> "module:attribute" of its click command, in the order ``--help`` lists them.
ACTIONS: dict[str, tuple[str, str]] = {
    "run": ("flinkish_cli.cli.commands.run:run", "Submit a PySpark job, attached or detached."),
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
    "logs": ("flinkish_cli.cli.commands.logs:logs", "Show a job's driver log."),
    "config": ("flinkish_cli.cli.commands.config_cmd:config", "Show the effective configuration."),
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, ACTIONS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Actions"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="flinkish")
def cli() -> None:
    """Run PySpark jobs the way Apache Flink's bin/flink runs Flink jobs.

    Configuration comes from flink-conf.yaml or config.yaml in FLINK_CONF_DIR, --conf-dir
    or ./conf; -D key=value overrides it on every action.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script: run the CLI and map errors to exit statuses."""
    from flinkish_cli.errors import FlinkishError

    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") for a in args)
    verbose = verbose or bool(os.environ.get("FLINKISH_VERBOSE"))
    try:
        cli.main(args=args, prog_name="flinkish", standalone_mode=False)
    except FlinkishError as error:
        if verbose:
            import traceback

            traceback.print_exc()
        _print_error(error.message, error.hint)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        _print_error("Aborted.", None)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as exit_:
        sys.exit(exit_.exit_code)
    except KeyboardInterrupt:
        _print_error("Interrupted.", None)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as error:  # a bug: say so, briefly unless verbose
        if verbose:
            raise
        _print_error(
            f"Internal error: {type(error).__name__}: {error}",
            "This is a bug in flinkish; run again with --verbose for the traceback.",
        )
        sys.exit(70)


def _print_error(message: str, hint: str | None) -> None:
    from flinkish_cli.cli.output import echo

    echo(f"ERROR: {message}", err=True)
    if hint:
        echo(hint, err=True)
