"""A quiet local Spark session inside the CLI, for the commands that need one (``info``,
``savepoint info``, the state check before a restore): the JVM's console output is silenced
and its log level kept at ERROR.

Its JVM maps the drivers' class-data sharing archive when there is one (:mod:`.cds`), as a
job's driver does: ``SPARK_CONF_DIR`` is then the drivers' fixed empty directory and the log
configuration travels as ``-Dlog4j.configurationFile``, so that the class path is the one
the archive was made with (else the JVM starts without it, as it would anyway).
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
        log4j = os.path.join(conf_dir, LOG4J2_FILE)
        with open(log4j, "w") as handle:
            handle.write(_LOG4J2)
        settings = dict(conf)
        sharing = _class_data_sharing(log4j)
        if sharing is not None:
            options, os.environ["SPARK_CONF_DIR"] = sharing
            default = settings.get(DEFAULT_JAVA_OPTIONS)
            settings[DEFAULT_JAVA_OPTIONS] = " ".join([*options, *([default] if default else [])])
        else:
            os.environ["SPARK_CONF_DIR"] = conf_dir
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        with quiet_stderr():
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.master(master)
            for key, value in settings.items():
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


#: Spark's key for the driver's JVM options that come before the user's own.
DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def _class_data_sharing(log4j: str) -> tuple[list[str], str] | None:
    """The JVM options and ``SPARK_CONF_DIR`` that map the drivers' archive, or None when
    there is no usable one (or the cache cannot be written)."""
    from flinkish_cli.spark import cds
    from flinkish_cli.spark.install import pyspark_home

    try:
        archive = cds.archive_path(pyspark_home())
        if archive is None or not cds.usable(archive):
            return None
        conf_dir = str(cds.spark_conf_dir())
    except Exception:  # no Java, no cache: the session starts without it
        return None
    options = [f"-Dlog4j.configurationFile={log4j}", *cds.driver_options(archive)]
    return options, conf_dir


def _stop(spark: Any) -> None:
    spark.stop()
