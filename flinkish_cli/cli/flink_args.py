"""Flink's command-line rules that click does not know, shared by the actions.

- Options whose value is optional (``stop -p [dir]``, ``cancel -s [dir]``): Flink's parser
  (commons-cli, optional argument) takes the next word as the value unless it starts with
  ``-``; when no positional argument is left, the action reads that value as the JobID and
  uses the default savepoint directory. :func:`job_and_target` applies the same rule.
- ``-type canonical|native`` in any case (:func:`format_type`).
- Java-only input is refused in one line that says what to use instead (:func:`refuse_java`).
- Every long option also with one dash (``-savepointPath``, ``-dispose``, ``-fromSavepoint``),
  as commons-cli's ``DefaultParser`` reads a word that is not a short option
  (:class:`FlinkCommand`, the class of every action).
"""

from __future__ import annotations

from typing import Any

import click

from flinkish_cli.errors import UsageError

#: The value click gives an optional-value option given without a value.
NO_VALUE = ""

FORMAT_TYPES = ("canonical", "native")


def job_and_target(
    args: tuple[str, ...], value: str | None, missing: str
) -> tuple[str, str | None, tuple[str, ...]]:
    """The JobID, the target directory (None: the default one) and any extra arguments of
    an action with an optional-value option (``value``: None when the option is absent,
    :data:`NO_VALUE` when it was given without a value), by Flink's rule."""
    if args:
        return args[0], (value or None), args[1:]
    if value:  # `stop -p <JobID>`: the value is the job, the directory the default one
        return value, None, ()
    raise UsageError(missing, "Use the help option (-h or --help) to get help on the command.")


def require_job(args: tuple[str, ...], missing: str) -> tuple[str, tuple[str, ...]]:
    """The JobID (the first argument) and the extra arguments."""
    if not args:
        raise UsageError(missing, "Use the help option (-h or --help) to get help on the command.")
    return args[0], args[1:]


def format_type(value: str | None) -> str:
    """Flink's savepoint format name (CANONICAL, NATIVE) for ``-type`` in any case."""
    return (value or "canonical").upper()


def refuse_java(option: str, what: str) -> UsageError:
    """The one-line refusal of a Java-only option or file, saying what to use instead."""
    advice = {
        "-c": "pass the PySpark script itself (flinkish run job.py, -py job.py or -pym module).",
        "-C": "JVM libraries for Spark go in pipeline.jars (-D pipeline.jars=<jars>) or "
        "spark.jars.packages.",
        "-j": "disposing of a flinkish savepoint needs no program: flinkish savepoint -d <path>.",
        "jar": "run a PySpark script (flinkish run job.py); JVM libraries for it go in "
        "pipeline.jars.",
    }[option]
    return UsageError(f"flinkish runs Python jobs: {what} is Java-only; {advice}")


class FlinkCommand(click.Command):
    """A click command that also reads each ``--name`` option as ``-name``.

    Flink's parser (commons-cli's ``DefaultParser``) looks a word ``-name`` up as a short
    option first, then as a long one, so ``flink savepoint -dispose <path>`` disposes and
    ``flink run -fromSavepoint <path>`` restores. Click would read ``-dispose`` as ``-d ispose``.
    The single-dash spellings are added to the parser only (help lists each option once), for
    names that are not already an option of the command; a short option keeps its meaning.
    """

    def make_parser(self, ctx: click.Context) -> Any:  # click's parser class is private
        parser = super().make_parser(ctx)
        taken = {name for param in self.get_params(ctx) for name in _names(param)}
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                _add_single_dash(param, parser, ctx, taken)
        return parser


def _names(param: click.Parameter) -> list[str]:
    return [*param.opts, *param.secondary_opts]


def _single_dash(names: list[str], taken: set[str]) -> list[str]:
    return [f"-{n[2:]}" for n in names if n.startswith("--") and f"-{n[2:]}" not in taken]


def _add_single_dash(
    param: click.Option, parser: object, ctx: click.Context, taken: set[str]
) -> None:
    """Register ``param``'s single-dash spellings with ``parser`` as the option itself (the
    parser then reports the values under the option's name, in the order given)."""
    opts, secondary = param.opts, param.secondary_opts
    aliases, secondary_aliases = _single_dash(opts, taken), _single_dash(secondary, taken)
    if not aliases:
        return
    param.opts, param.secondary_opts = aliases, secondary_aliases
    try:
        param.add_to_parser(parser, ctx)  # type: ignore[arg-type]
    finally:
        param.opts, param.secondary_opts = opts, secondary
