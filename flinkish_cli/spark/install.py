"""Where Spark and its Java are: found on disk, without importing pyspark or starting a JVM."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from flinkish_cli.errors import JobError, UsageError


def pyspark_home() -> Path:
    """The installed pyspark package, which is Spark's home (found without importing it)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("pyspark is not installed.", "Install flinkish with its dependencies.")
    return Path(next(iter(spec.submodule_search_locations)))


def named_spark_home(args: list[str]) -> Path:
    """The Spark home a set-up command names (its first argument), else pyspark's."""
    return Path(args[0]) if args else pyspark_home()


def prefer_installed_pyspark(path: list[str] | None = None) -> list[str]:
    """Take pip-pyspark's zipped copies of its own Python code off ``path`` (``sys.path``):
    returns the entries removed.

    ``spark-submit`` puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on a
    driver's ``PYTHONPATH``; Python then imports pyspark from the zip, compiling every module
    from source in every driver (zipimport keeps no bytecode): about a second of CPU per job,
    most of what the driver's Python spends before its first batch. When that ``SPARK_HOME``
    is the pyspark package installed on this path (flinkish's own Spark), the installed
    package is the same code with its bytecode cached, so the zips go. A Spark of another
    home keeps its zips."""
    path = sys.path if path is None else path
    installed = {
        os.path.realpath(os.path.join(entry, "pyspark", "python", "lib"))
        for entry in path
        if entry
        and not entry.endswith(".zip")
        and os.path.isfile(os.path.join(entry, "pyspark", "__init__.py"))
        and os.path.isfile(os.path.join(entry, "py4j", "__init__.py"))
    }
    bundled = [
        entry
        for entry in path
        if entry.endswith(".zip") and os.path.dirname(os.path.realpath(entry)) in installed
    ]
    for entry in bundled:
        path.remove(entry)
    return bundled


def java_binary() -> str | None:
    """The ``java`` that ``spark-submit`` runs: ``$JAVA_HOME/bin/java``, else the PATH's
    (its real path), or None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.realpath(os.path.join(home, "bin", "java"))
    found = shutil.which("java")
    return os.path.realpath(found) if found else None


def check_java() -> None:
    """Spark needs Java 17 or newer: :class:`JobError` when there is no ``java`` at all."""
    if java_binary() is None:
        raise JobError(
            "Java was not found: Spark needs Java 17 or newer.",
            "Install it (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME.",
        )
