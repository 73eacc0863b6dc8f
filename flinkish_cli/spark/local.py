"""A quiet local Spark session inside the CLI, for the commands that need one (``info``,
``savepoint info``, ``state``): the JVM's console output is silenced and its log level kept at
ERROR.

With ``class_data_sharing`` (the ``state`` commands), the session's JVM maps the drivers'
class-data sharing archive (:mod:`.cds`) when there is a usable one: it then runs with the
drivers' fixed ``SPARK_CONF_DIR`` and names its log configuration with
``-Dlog4j.configurationFile``, as a driver does, which halves Spark's start here (about 4 s
to 2 s) and its first job's. Without an archive it starts as before.

A local master's session binds and advertises loopback only (:mod:`.loopback`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flinkish_cli.plan.rundir import LOG4J2_FILE
from flinkish_cli.spark import loopback

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
    master: str,
    conf: Mapping[str, str],
    stop: Callable[[Any], None] | None = None,
    class_data_sharing: bool = False,
) -> Iterator[Any]:
    """A local SparkSession with ``conf``, stopped afterwards by ``stop(spark)`` (its own
    ``stop()`` by default; a caller that patched it passes the original)."""
    with tempfile.TemporaryDirectory(prefix="flinkish-spark-") as conf_dir:
        log4j = os.path.join(conf_dir, LOG4J2_FILE)
        with open(log4j, "w") as handle:
            handle.write(_LOG4J2)
        os.environ["SPARK_CONF_DIR"] = conf_dir
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        settings: dict[str, str] = {}
        loopback.apply(master, settings, os.environ, os.environ)
        conf = {**settings, **conf}
        options = _archive_options(log4j) if class_data_sharing else None
        if options:
            from flinkish_cli.spark import cds

            os.environ["SPARK_CONF_DIR"] = str(cds.spark_conf_dir())
            given = conf.get("spark.driver.extraJavaOptions", "")
            conf = {**conf, "spark.driver.extraJavaOptions": " ".join([given, *options]).strip()}
        with quiet_stderr():
            from pyspark.sql import SparkSession

            from flinkish_cli.spark import converters

            converters.patch()
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


def _archive_options(log4j: str) -> list[str] | None:
    """The JVM options of a session that maps the drivers' archive; None without one."""
    from flinkish_cli.spark import cds
    from flinkish_cli.spark.install import pyspark_home

    try:
        archive = cds.archive_path(pyspark_home())
    except OSError:
        return None
    if archive is None or not cds.usable(archive):
        return None
    logging = [f"-Dlog4j.configurationFile={log4j}", *cds.jvm_logging_options()]
    return [*logging, *cds.driver_options(archive)]
