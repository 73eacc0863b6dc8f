"""A quiet local Spark session inside the CLI, for the commands that need one (``info``,
``savepoint info``): the JVM's console output is silenced and its log level kept at ERROR.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flinkish_cli.plan.rundir import LOG4J2_FILE

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c{1}: %m%n
"""


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 (where the JVM writes) to /dev/null for the duration."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


@contextlib.contextmanager
def local_session(
    master: str, conf: Mapping[str, str], stop: Callable[[Any], None] | None = None
) -> Iterator[Any]:
    """A local SparkSession with ``conf``, stopped afterwards by ``stop(spark)`` (its own
    ``stop()`` by default; a caller that patched it passes the original)."""
    with tempfile.TemporaryDirectory(prefix="flinkish-spark-") as conf_dir:
        with open(os.path.join(conf_dir, LOG4J2_FILE), "w") as handle:
            handle.write(_LOG4J2)
        os.environ["SPARK_CONF_DIR"] = conf_dir
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        with quiet_stderr():
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.master(master)
            for key, value in conf.items():
                builder = builder.config(key, value)
            spark = (
                builder.config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
            try:
                yield spark
            finally:
                (stop or _stop)(spark)


def _stop(spark: Any) -> None:
    spark.stop()
