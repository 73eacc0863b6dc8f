"""A failure cause in a few lines: the Python or Spark message, never a Java stack trace."""

from __future__ import annotations

import re
import traceback

from flinkish_cli.errors import FlinkishError

#: The line of a short cause that names the program's own exception inside Spark's.
PYTHON_CAUSE = "Caused by (Python): "
MAX_LINES = 6
MAX_CHARS = 800
_TRACEBACK = "Traceback (most recent call last)"
#: Exceptions that carry another traceback in their message (pyspark's, around the program's)
_WRAPPERS = (
    "An exception was thrown from the Python worker",
    "An exception was raised by the Python Proxy",
)
_DANGLING = re.compile(r"\s*(Return\s+)?(Message)?:?\s*$")
#: A Java exception's class before its message (``org.apache.spark.SparkException: ...``).
_JAVA_CLASS = re.compile(r"^:?\s*(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")


def headline(cause: str | None) -> str:
    """One line of a short cause: the program's own exception when Spark wraps one."""
    lines = (cause or "").splitlines()
    for line in lines:
        if line.startswith(PYTHON_CAUSE):
            return line.removeprefix(PYTHON_CAUSE)
    return lines[0] if lines else ""


def spark_cause(error: BaseException) -> str:
    """The line of Spark's message that says what went wrong (never py4j's "An error
    occurred while calling", never a Java class name or stack frame), at most 400 characters."""
    lines = [
        _JAVA_CLASS.sub("", line).strip()
        for line in message_lines(str(error))
        if not line.startswith("An error occurred while calling")
    ]
    lines = [line for line in lines if line and not line.startswith("Caused by")] or [
        type(error).__name__
    ]
    cause = next((line for line in lines if line.startswith("[")), lines[0])
    return cause if len(cause) <= 400 else cause[:397] + "..."


def short_cause(error: BaseException, program: str | None = None) -> str:
    """Describe ``error`` for a user: its message, and where in ``program`` it was raised."""
    lines = message_lines(str(error))
    name = type(error).__name__
    explained = kafka_line("\n".join(lines))
    if explained:
        lines = [explained, *lines]
    # flinkish's own messages are for users already; Spark's wrappers' names say nothing
    plain = explained or isinstance(error, FlinkishError) or name in _SPARK_WRAPPERS
    if plain:
        message = "\n".join(lines[:MAX_LINES])
    else:
        message = f"{name}: " + "\n".join(lines[:MAX_LINES]) if lines else name
    where = _location(error, program)
    if where:
        message += f"\n  at {where}"
    return message[:MAX_CHARS]


_SPARK_WRAPPERS = ("StreamingQueryException", "Py4JJavaError", "CapturedException")


def kafka_line(message: str) -> str | None:
    """One line saying what to do about Spark's Kafka error in ``message`` (its connector
    missing, records lost), or None for any other."""
    if "[KAFKA_DATA_SOURCE_NOT_ENABLED]" in message:
        return (
            "Spark's Kafka connector is not on the job's class path: run the job with "
            "-D flinkish.connectors=kafka (or flinkish.connectors: kafka in its configuration)."
        )
    found = _DATA_LOSS.search(message)
    if found:
        reason = (found.group("reason") or "").strip().rstrip(".")
        return (
            f"Kafka records the job had not read are gone ({reason or found.group('kind')}): "
            "the topic's retention deleted them, or the topic was deleted and created again. "
            "Set the source option failOnDataLoss to false to skip them, or start the job "
            "without its checkpoint."
        )
    return None


#: Spark's KAFKA_DATA_LOSS error: its subclass and the reason after "Reason:".
_DATA_LOSS = re.compile(
    r"\[KAFKA_DATA_LOSS\.(?P<kind>\w+)\].*?Reason:\s*(?P<reason>[^\n]*?)\s*(?:SQLSTATE:|\n|$)",
    re.DOTALL,
)


def message_lines(text: str) -> list[str]:
    """The lines of an error message worth showing: Spark's message and, for an error inside
    Python code (a UDF, ``foreachBatch``), the Python exception as ``Caused by (Python):``;
    never a Java stack trace or a Python traceback."""
    text = text.strip()
    lines = [line.rstrip() for line in text.splitlines()]
    if "Traceback (most recent call last)" in text:  # an error inside a Python UDF
        head = lines[0].split("Traceback (most recent call last)")[0] if lines else ""
        head = _DANGLING.sub("", head)  # "... Return Message:" introduced the traceback
        python_error = _python_exception_line(lines)
        return [head, f"{PYTHON_CAUSE}{python_error}"] if python_error else [head]
    return [
        line
        for line in lines
        if line.strip()
        and not line.lstrip().startswith(("at ", "... ", "JVM stacktrace:"))
        and not line.startswith("\t")
    ]


def _python_exception_line(lines: list[str]) -> str | None:
    """The program's own exception: the line that ends the first Python traceback in
    ``lines``, or, when that exception only wraps another traceback (a UDF's failure raised
    again by pyspark in ``foreachBatch``), the line that ends the traceback inside it."""
    found: str | None = None
    in_traceback = False
    for line in lines:
        starts = _TRACEBACK in line
        if in_traceback and line and not line.startswith((" ", "\t")):
            found = line.split(_TRACEBACK)[0].strip()
            if not starts and not any(wrapper in line for wrapper in _WRAPPERS):
                return found
            in_traceback = starts
            continue
        in_traceback = in_traceback or starts
    return found


def _location(error: BaseException, program: str | None) -> str | None:
    if not program:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == program]
    if not frames:
        return None
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} ({frame.name})"
