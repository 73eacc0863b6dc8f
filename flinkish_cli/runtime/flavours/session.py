"""A job's own Spark Connect session in a session cluster.

Each job's client opens a session of its own on the cluster's Connect server before the
program runs, with flinkish's translation of the configuration as session settings; the
program's ``SparkSession.builder.getOrCreate()`` then returns that session, and settings from
the program's builder are applied on top of flinkish's (they win, as under ``spark-submit``).
Only Spark SQL settings can differ between sessions: the rest (executors, memory, the Spark
master) belong to the session cluster and are shared by its jobs, as are its executors'
Python workers and the cluster's file systems. The job's code is shipped to the session as
artifacts, so UDFs and ``foreachBatch`` functions import the job's modules on the cluster.
Spark Connect 4.3 does not give the Python workers of *streaming* queries the session's
artifacts (a streaming UDF importing the job's ``helpers`` fails there with
``ModuleNotFoundError``), so the job's own modules are also pickled by value
(:func:`pickle_job_modules_by_value`, before each query and ``foreachBatch`` function is
serialised): their functions travel with the query instead of being imported by name.

``SparkSession.builder.master(...)`` in a program is ignored in session mode (with a line in
the job's log): the session cluster decides where the job runs, as ``spark-submit --master``
would override nothing else.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("flinkish.runtime")

#: Where the job's own code lives (its directory, its zips): modules from there are the job's.
_job_roots: list[str] = []

#: Settings never sent to a session: the submission's own, or the cluster's to decide.
_NOT_SESSION = ("spark.flinkish.", "spark.master", "spark.remote", "spark.submit.")


def session_settings(properties: Mapping[str, str]) -> dict[str, str]:
    """The Spark SQL settings of the job (a Connect session takes no other kind)."""
    return {
        key: value
        for key, value in properties.items()
        if key.startswith("spark.sql.") and not key.startswith(_NOT_SESSION)
    }


def open_session(
    url: str,
    properties: Mapping[str, str],
    py_files: list[str],
    archives: list[str],
    job_root: str | None = None,
) -> Any:
    """Open the job's session on ``url`` and make it the one the program gets."""
    _job_roots[:] = [p for p in [job_root, *py_files] if p]
    os.environ["SPARK_REMOTE"] = url
    os.environ.pop("MASTER", None)
    ignore_master_in_builders()
    give_sessions_a_context()
    from pyspark.sql.connect.session import SparkSession

    settings = session_settings(properties)
    skipped = sorted(k for k in properties if k not in settings and not k.startswith(_NOT_SESSION))
    if skipped:
        log.info(
            "Settings of the session cluster, not of this job (a session takes Spark SQL "
            "settings only): %s",
            ", ".join(skipped),
        )
    spark = SparkSession.builder.remote(url).config(map=settings).getOrCreate()
    for path in py_files:
        spark.addArtifacts(path, pyfile=True)
    for archive in archives:
        spark.addArtifacts(archive, archive=True)
    log.info("Session %s opened on the session cluster %s.", spark.client._session_id, url)
    return spark


def pickle_job_modules_by_value() -> None:
    """Register the job's imported modules with cloudpickle to be pickled by value."""
    import sys

    from pyspark import cloudpickle

    roots = tuple(root.rstrip("/") + "/" for root in _job_roots)
    if not roots:
        return
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name != "__main__" and path.startswith(roots):
            try:
                cloudpickle.register_pickle_by_value(module)
            except ValueError:  # not importable by that name (already by value, or a stub)
                continue


def stop_orphans(url: str, session_id: str) -> int:
    """Stop the streaming queries a dead client left running in its session.

    A job's queries live in its server-side session, not in the client: when the client
    dies they keep running. Re-attaching to the session by its id reaches them. Returns how
    many were stopped; the session is released afterwards.
    """
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession.builder.remote(f"{url.rstrip('/')}/;session_id={session_id}").create()
    stopped = 0
    for query in spark.streams.active:
        query.stop()
        stopped += 1
    spark.stop()
    return stopped


class SessionContext:
    """What ``spark.sparkContext`` gives a program in a session cluster (Spark Connect has
    no SparkContext): ``setLogLevel`` (the session cluster's log level is the cluster's, so
    it only notes the wish in the job's log) and a clear error for the rest."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def setLogLevel(self, level: str) -> None:
        log.info("setLogLevel(%s) ignored: the session cluster's log level is its own.", level)

    @property
    def appName(self) -> str:
        return str(self._spark.conf.get("spark.app.name", "flinkish"))

    @property
    def defaultParallelism(self) -> int:
        return int(self._spark.conf.get("spark.sql.shuffle.partitions", "1"))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"sparkContext.{name} is not available in a session cluster (Spark Connect has no "
            "SparkContext); run this job with a fresh driver (-t local, or -m spark://...)."
        )


def give_sessions_a_context() -> None:
    """Patch point of ``pyspark.sql.connect.session.SparkSession`` (session mode only):
    ``sparkContext`` returns a :class:`SessionContext` instead of raising, so the common
    ``spark.sparkContext.setLogLevel("WARN")`` of Spark's examples runs."""
    from pyspark.sql.connect.session import SparkSession

    if getattr(SparkSession, "_flinkish_context", False):
        return
    SparkSession.sparkContext = property(lambda self: SessionContext(self))  # type: ignore[assignment]
    SparkSession._flinkish_context = True  # type: ignore[attr-defined]


def ignore_master_in_builders() -> None:
    """Patch point of ``pyspark.sql.SparkSession.Builder`` (session mode only): a master set
    by the program (``.master("local[*]")``) is dropped, because pyspark refuses a master
    together with a Connect URL and the session cluster decides where the job runs."""
    from pyspark.sql.session import SparkSession

    builder = SparkSession.Builder
    if getattr(builder, "_flinkish_original_validate", None) is not None:
        return
    original = builder._validate_startup_urls

    def validate(self: Any) -> None:
        master = self._options.pop("spark.master", None)
        if master is not None:
            log.info(
                "The program's master %s is ignored: the session cluster runs the job.", master
            )
        return original(self)

    builder._flinkish_original_validate = original  # type: ignore[attr-defined]
    builder._validate_startup_urls = validate  # type: ignore[method-assign]
