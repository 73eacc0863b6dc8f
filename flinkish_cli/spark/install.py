"""Where Spark and its Java are: found on disk, without importing pyspark or starting a JVM."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from flinkish_cli.errors import JobError, UsageError


def pyspark_home() -> Path:
    """The installed pyspark package, which is Spark's home (found without importing it)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("pyspark is not installed.", "Install flinkish with its dependencies.")
    return Path(next(iter(spec.submodule_search_locations)))


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
