"""A failure cause in a few lines: the Python or Spark message, never a Java stack trace."""

from __future__ import annotations

import traceback

MAX_LINES = 6
MAX_CHARS = 800


def short_cause(error: BaseException, program: str | None = None) -> str:
    """Describe ``error`` for a user: its message, and where in ``program`` it was raised."""
    text = str(error).strip()
    lines = [line.rstrip() for line in text.splitlines()]
    if "Traceback (most recent call last)" in text:  # an error inside a Python UDF
        tail = [line for line in lines if line and not line.startswith((" ", "\t"))]
        python_error = next((line for line in reversed(tail) if ":" in line), tail[-1:])
        head = lines[0] if lines else ""
        lines = [head, f"Caused by (Python): {python_error}"] if head != python_error else [head]
    else:
        lines = [
            line
            for line in lines
            if line.strip()
            and not line.lstrip().startswith(("at ", "... ", "JVM stacktrace:"))
            and not line.startswith("\t")
        ]
    name = type(error).__name__
    if name in ("StreamingQueryException", "Py4JJavaError", "CapturedException"):
        message = "\n".join(lines[:MAX_LINES])
    else:
        message = f"{name}: " + "\n".join(lines[:MAX_LINES]) if lines else name
    where = _location(error, program)
    if where:
        message += f"\n  at {where}"
    return message[:MAX_CHARS]


def _location(error: BaseException, program: str | None) -> str | None:
    if not program:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == program]
    if not frames:
        return None
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} ({frame.name})"
