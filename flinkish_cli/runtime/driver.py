"""The job's driver: read the plan, run the user's program under flinkish's hooks, record the end.

``spark-submit`` runs :mod:`flinkish_cli.runtime.entry.flinkish_driver`, which calls
:func:`main`. The driver's standard error goes to the job's log; its exit status is 0 when
the job FINISHED or was CANCELED and 1 when it FAILED.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

from flinkish_cli.registry.status import JobState
from flinkish_cli.submission.plan import PLAN_CONF_KEY, JobPlan

log = logging.getLogger("flinkish.runtime")

#: Spark settings that carry the S3 credentials to the driver (never in the plan).
SECRET_FROM_SPARK = {
    "s3.access-key": "spark.hadoop.fs.s3a.access.key",
    "s3.secret-key": "spark.hadoop.fs.s3a.secret.key",
}


def main() -> None:
    """Entry point of every job's driver."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # attach to spark-submit's JVM to read its configuration
    conf = SparkConf()
    token = conf.get(PLAN_CONF_KEY)
    if not token:
        log.error("%s is not set: this program is started by 'flinkish run'.", PLAN_CONF_KEY)
        sys.exit(2)
    plan = JobPlan.decode(token)
    log_to_file(plan)
    sys.exit(run_job(plan, conf))


def log_to_file(plan: JobPlan) -> None:
    """Send the driver's Python logging, warnings and standard error to the job's log.

    Standard output stays: what the script prints is shown by an attached ``run``. On a
    cluster (no local log file) everything stays on the driver's own streams.
    """
    handler: logging.Handler
    if plan.log_path and plan.deploy_mode == "client":
        stream = open(plan.log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        sys.stderr = stream
        handler = logging.StreamHandler(stream)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.captureWarnings(True)


def storage_flat_conf(plan: JobPlan, spark_conf: Any) -> dict[str, str]:
    """The Flink configuration of the job, with the S3 secrets taken from Spark's."""
    flat = dict(plan.flink_conf)
    for flink_key, spark_key in SECRET_FROM_SPARK.items():
        value = spark_conf.get(spark_key)
        if value:
            flat[flink_key] = value
    return flat


def run_job(plan: JobPlan, spark_conf: Any) -> int:
    """Run the job to its end; the driver's exit status."""
    from flinkish_cli.registry.store import JobRegistry
    from flinkish_cli.runtime import hooks
    from flinkish_cli.runtime.job import JobRuntime
    from flinkish_cli.storage import StorageSettings

    settings = StorageSettings.from_flink(storage_flat_conf(plan, spark_conf))
    registry = JobRegistry.open(plan.checkpoint_root, settings)
    runtime = JobRuntime(plan, registry, settings)
    runtime.begin()
    runtime.install_signal_handlers()
    program = plan.entry.target if plan.entry.kind == "file" else None
    error: BaseException | None = None
    try:
        from pyspark.sql import SparkSession

        from flinkish_cli.runtime.listener import StatusListener

        spark = SparkSession.builder.getOrCreate()
        runtime.spark = spark
        spark.streams.addListener(StatusListener(runtime))
        controller = hooks.QueryController(runtime)
        hooks.install(controller)
        from flinkish_cli.runtime.program import run_program

        try:
            run_program(plan.entry)
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                raise RuntimeError(f"The job's program exited with status {exit_.code}.") from None
        controller.start_pending()
        if not runtime.queries:
            runtime.all_started()
        error = runtime.wait_for_queries()
    except BaseException as raised:  # the script's own failure is the job's failure
        error = raised
        log.error("The job's program failed.", exc_info=raised)
    state = runtime.end(error, program)
    with contextlib.suppress(Exception):  # the JVM may already be gone
        from pyspark.sql import SparkSession

        hooks.stop_session(SparkSession.getActiveSession() or SparkSession.builder.getOrCreate())
    return 1 if state is JobState.FAILED else 0
