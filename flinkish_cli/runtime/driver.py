"""The job's driver: read the plan, run the user's program under flinkish's hooks, record the end.

``spark-submit`` runs :mod:`flinkish_cli.runtime.entry.flinkish_driver`, which calls
:func:`main`. The driver's standard error goes to the job's log; its exit status is 0 when
the job FINISHED or was CANCELED and 1 when it FAILED.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
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


def forget_properties_file(plan: JobPlan) -> None:
    """The JVM has read the private properties file (secrets included): delete it now."""
    if plan.run_dir:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(plan.run_dir, "spark.properties"))


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
    from flinkish_cli.config import Configuration
    from flinkish_cli.errors import FlinkishError
    from flinkish_cli.registry.store import JobRegistry
    from flinkish_cli.runtime import hooks
    from flinkish_cli.runtime.checkpoint_rules import CheckpointRules
    from flinkish_cli.runtime.job import JobRuntime
    from flinkish_cli.runtime.restart import from_config
    from flinkish_cli.storage import StorageSettings

    config = Configuration.from_flat(plan.flink_conf)
    settings = StorageSettings.from_flink(storage_flat_conf(plan, spark_conf))
    registry = JobRegistry.open(plan.checkpoint_root, settings)
    runtime = JobRuntime(plan, registry, settings, CheckpointRules.from_config(config))
    runtime.begin()
    runtime.install_signal_handlers()
    program = plan.entry.target if plan.entry.kind == "file" else None
    strategy = from_config(config)
    error: BaseException | None = None
    note: str | None = None
    try:
        from pyspark.sql import SparkSession

        from flinkish_cli.runtime.listener import StatusListener

        spark = SparkSession.builder.getOrCreate()
        forget_properties_file(plan)
        runtime.spark = spark
        spark.streams.addListener(StatusListener(runtime))
        while True:
            error = runtime.run_attempt()
            if error is None or runtime.ending or isinstance(error, FlinkishError):
                break  # done, cancelled, or a failure a restart would repeat
            if not runtime.has_run:
                break  # the program failed before its job ran: Flink never restarts that
            decision = strategy.on_failure(time.time())
            if not decision.restart:
                note = f"not restarted: {decision.reason}"
                break
            if not runtime.restart_after(error, decision.delay, program):
                break
    except BaseException as raised:
        error = raised
        log.error("The job's driver failed.", exc_info=raised)
    state = runtime.end(error, program, note)
    with contextlib.suppress(Exception):  # the JVM may already be gone
        from pyspark.sql import SparkSession

        hooks.stop_session(SparkSession.getActiveSession() or SparkSession.builder.getOrCreate())
    return 1 if state is JobState.FAILED else 0
