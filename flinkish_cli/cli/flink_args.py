"""Flink's command-line rules that click does not know, shared by the actions.

- Options whose value is optional (``stop -p [dir]``, ``cancel -s [dir]``): Flink's parser
  (commons-cli, optional argument) takes the next word as the value unless it starts with
  ``-``; when no positional argument is left, the action reads that value as the JobID and
  uses the default savepoint directory. :func:`job_and_target` applies the same rule.
- ``-type canonical|native`` in any case (:func:`format_type`).
- Java-only input is refused in one line that says what to use instead (:func:`refuse_java`).
"""

from __future__ import annotations

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
