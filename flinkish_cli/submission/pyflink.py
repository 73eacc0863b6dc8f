"""A Flink user's first mistake, caught before any JVM starts: a PyFlink program (one that
imports ``pyflink``, such as Flink's own ``streaming_word_count.py``) given to ``flinkish
run``. flinkish runs PySpark programs; under Spark such a program fails seconds later with
``No module named 'pyflink'``, so it is refused at once in one line that says what to do.

The program's source is parsed, never run: imports anywhere in it count (inside functions
too), strings and comments do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from flinkish_cli.errors import JobError


def pyflink_import(source: bytes | str) -> tuple[str, int] | None:
    """The first ``pyflink`` module the source imports and its line; None if it imports none
    (or does not parse: the syntax check says so elsewhere)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _is_pyflink(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_pyflink(node.module):
            found.append((node.lineno, str(node.module)))
    if not found:
        return None
    line, module = min(found)
    return module, line


def refuse_pyflink(source: bytes | str, program: str) -> None:
    """A :class:`JobError` when ``program``'s source is a PyFlink program."""
    found = pyflink_import(source)
    if found is None:
        return
    module, line = found
    raise JobError(
        f"{program} is a PyFlink program (it imports {module} at line {line}): flinkish runs "
        "PySpark programs on Apache Spark; write the job with PySpark (pyspark.sql's "
        "readStream/writeStream, as in Spark's Structured Streaming guide), or run this one "
        "with Apache Flink's bin/flink."
    )


def module_source(module: str, search: list[str]) -> Path | None:
    """The file of ``-pym module`` among the ``-pyfs`` directories, if one holds it."""
    relative = Path(*module.split("."))
    for entry in search:
        base = Path(entry)
        if not base.is_dir():
            continue
        for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _is_pyflink(module: str | None) -> bool:
    return module is not None and (module == "pyflink" or module.startswith("pyflink."))
