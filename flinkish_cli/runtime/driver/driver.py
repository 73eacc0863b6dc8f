"""The job's driver: read the plan, run the user's program under flinkish's hooks, record the end.

``spark-submit`` runs :mod:`flinkish_cli.runtime.entry.flinkish_driver`, which calls
:func:`main`; a session cluster's per-job client runs
:mod:`flinkish_cli.runtime.entry.flinkish_connect_client`, which calls :func:`main_connect`.
Both end in :func:`run_job`, the one runtime for both flavours of Spark.

The driver does not create the SparkSession: the program does, as under ``spark-submit``,
so settings from its ``SparkSession.builder.config(...)`` win over flinkish's translation
(which reaches Spark as ``spark-submit``'s properties do). The session is met when the
program starts its first query.

Exit status: 0 when the job FINISHED or was CANCELED, 1 when it FAILED, and
:data:`~flinkish_cli.runtime.restart.EXIT_JVM_LOST` when Spark's JVM died under it: the job's
supervisor then restarts the driver under the job's restart strategy; and
:data:`~flinkish_cli.runtime.restart.EXIT_RESCALE` when the driver stopped the job for an
in-place rescale (the supervisor starts the next driver at once).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import Any

from flinkish_cli.plan.job import PLAN_CONF_KEY, JobPlan, secrets_from, storage_flat_conf
from flinkish_cli.plan.rundir import PROPERTIES_FILE
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.runtime import warm

log = logging.getLogger("flinkish.runtime")


def main() -> None:
    """Entry point of a classic driver (``spark-submit``)."""
    from pyspark import SparkConf, SparkContext

    from flinkish_cli.spark import converters

    converters.patch()  # before the first call into the JVM
    SparkContext._ensure_initialized()  # attach to spark-submit's JVM to read its configuration
    conf = SparkConf()
    token = conf.get(PLAN_CONF_KEY)
    if not token:
        log.error("%s is not set: this program is started by 'flinkish run'.", PLAN_CONF_KEY)
        sys.exit(2)
    plan = JobPlan.decode(token)
    forget_properties_file(plan)  # spark-submit read it before this process started
    log_to_file(plan)
    if plan.deploy_mode == "cluster":
        localize_py_files(conf.get("spark.submit.pyFiles") or "", SparkContext._jvm)
    secrets = secrets_from(conf.get)
    sys.exit(run_job(plan, secrets, "classic"))


def localize_py_files(py_files: str, jvm: Any) -> None:
    """In a YARN container, name the job's packages by their copies in the container.

    ``spark.submit.pyFiles`` still names the client's files (``file://`` URIs of the
    submitting machine), which the program's SparkContext copies into Spark's files
    directory, puts on the driver's path and hands its Python workers: it cannot copy a URI
    (a warning, "Failed to add file ... to Python path"), and on a YARN of several machines
    the client's files are not there. YARN has already put each into the container's
    working directory under its own name: the JVM's setting (which the program's SparkConf
    reads) names those, when every one is there."""
    from urllib.parse import urlparse

    names = [os.path.basename(urlparse(uri).path) for uri in py_files.split(",") if uri]
    local = [os.path.join(os.getcwd(), name) for name in names]
    if local and all(os.path.isfile(path) for path in local):
        jvm.java.lang.System.setProperty("spark.submit.pyFiles", ",".join(local))


def main_connect(argv: list[str] | None = None) -> None:
    """Entry point of a job's client in a session cluster (Spark Connect)."""
    from pathlib import Path

    from flinkish_cli.plan.job import SESSION_ARCHIVES, SESSION_PY_FILES, job_root
    from flinkish_cli.plan.rundir import parse_properties

    args = sys.argv[1:] if argv is None else argv
    if args[0] == "--stop-orphans":  # the supervisor, after a client died: url, session id
        from flinkish_cli.runtime.flavours.session import stop_orphans

        print(stop_orphans(args[1], args[2]))
        return
    if args[0] == warm.WARM_FLAG:  # a warm runner's spare client: its run directory comes later
        handed = warm.client_wait()
        if handed is None:
            return  # no job came
        args = [str(handed)]
    run_dir = Path(args[0])
    properties_file = run_dir / PROPERTIES_FILE
    values = parse_properties(properties_file.read_text(encoding="utf-8"))
    properties_file.unlink()  # read: the secrets it holds now live in this process only
    plan = JobPlan.decode(values[PLAN_CONF_KEY])
    log_to_file(plan)
    py_files = [p for p in values.get(SESSION_PY_FILES, "").split(",") if p]
    archives = [a for a in values.get(SESSION_ARCHIVES, "").split(",") if a]
    sys.path[1:1] = py_files  # as spark-submit's --py-files puts them on a driver's path
    from flinkish_cli.runtime.flavours.session import open_session

    root = str(job_root(Path(plan.entry.target))) if plan.entry.kind == "file" else None
    spark = open_session(plan.master, values, py_files, archives, root)
    secrets = secrets_from(values.get)
    sys.exit(run_job(plan, secrets, "connect", connect_session=spark.session_id))


def log_to_file(plan: JobPlan) -> None:
    """Send the driver's Python logging, warnings and standard error to the job's log.

    Standard output stays: what the script prints is shown by an attached ``run``. On a
    cluster (no local log file) everything stays on the driver's own streams.
    """
    handler: logging.Handler
    if plan.log_path and plan.deploy_mode in ("client", "session"):
        from flinkish_cli.config import Configuration
        from flinkish_cli.registry.logroll import LogRoller

        stream = open(plan.log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        sys.stderr = stream
        handler = logging.StreamHandler(stream)
        # rolls the log while the driver lives, as its supervisor does (whichever holds it)
        LogRoller.configured(plan.log_path, Configuration.from_flat(plan.flink_conf)).start()
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
            os.remove(os.path.join(plan.run_dir, PROPERTIES_FILE))


def record_yarn_attempt(status: JobStatus, attempt: int | None, config: Any) -> None:
    """A driver in a new YARN attempt of the job's application (``yarn.application-attempts``)
    records, once, that the previous attempt's driver died: a failure in the job's exception
    history (with the ResourceManager's diagnostics) and one more restart, as the job's
    supervisor records a dead local driver. Its queries then resume from their checkpoints."""
    from flinkish_cli.runtime.restart import history_size
    from flinkish_cli.spark.yarn import previous_attempt_cause

    if attempt is None or status.yarn_application is None:
        return
    if status.yarn_attempt is not None and status.yarn_attempt < attempt:
        cause = previous_attempt_cause(status.yarn_application, attempt)
        status.remember_failure(cause, time.time(), history_size(config))
        status.restarts += 1
        status.failure_cause = cause
        status.state = JobState.RESTARTING  # RUNNING again when its queries run
        log.warning("%s Resuming from the job's checkpoints.", cause)
    status.yarn_attempt = attempt


def run_job(
    plan: JobPlan,
    secrets: dict[str, str | None],
    flavour_name: str,
    connect_session: str | None = None,
) -> int:
    """Run the job to its end; the driver's exit status."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.errors import FlinkishError
    from flinkish_cli.registry.store import JobRegistry
    from flinkish_cli.runtime.driver.attempts import SparkLostError
    from flinkish_cli.runtime.driver.job import JobRuntime
    from flinkish_cli.runtime.driver.parts import RuntimeSettings, build_parts
    from flinkish_cli.runtime.flavours import flavour as flavours
    from flinkish_cli.runtime.queries import hooks
    from flinkish_cli.runtime.restart import (
        EXIT_JVM_LOST,
        EXIT_RESCALE,
        FAILED_BEFORE_RUNNING,
    )
    from flinkish_cli.spark.failures import headline, short_cause
    from flinkish_cli.spark.yarn import application_of_container, attempt_of_container
    from flinkish_cli.storage import StorageSettings

    config = Configuration.from_flat(plan.flink_conf)
    settings = StorageSettings.from_flink(storage_flat_conf(plan, secrets))
    registry = JobRegistry.open(plan.checkpoint_root, settings)
    flavour = flavours.by_name(flavour_name)
    given = RuntimeSettings.from_config(config)
    runtime = JobRuntime(plan, given, build_parts(plan, registry, flavour, settings, given))
    runtime.status.connect_session = connect_session
    container = os.environ.get("CONTAINER_ID")
    runtime.status.yarn_application = application_of_container(container)
    record_yarn_attempt(runtime.status, attempt_of_container(container), config)
    runtime.begin()
    runtime.install_signal_handlers()
    program = plan.entry.target if plan.entry.kind == "file" else None
    error: BaseException | None = None
    note: str | None = None
    try:
        while True:
            error = runtime.attempts.run()
            if isinstance(error, SparkLostError):
                log.error("Spark's JVM is gone: the driver exits for its supervisor.")
                logging.shutdown()
                os._exit(EXIT_JVM_LOST)
            if error is None or runtime.ending or isinstance(error, FlinkishError):
                break  # done, cancelled, or a failure a restart would repeat
            if runtime.rescale_watch.failed(headline(short_cause(error, program))):
                break  # at a rescale's new parallelism: its supervisor rolls it back
            if not runtime.has_run:
                note = f"not restarted: {FAILED_BEFORE_RUNNING}"
                break  # as Flink never restarts a main() that fails before execute()
            decision = runtime.attempts.record_failure(config, error, program)
            if not decision.restart:
                note = decision.note
                break
            if not runtime.attempts.restart_after(decision.delay):
                break
    except BaseException as raised:
        error = raised
        log.error("The job's driver failed.", exc_info=raised)
    state = runtime.end(error, program, note)
    with contextlib.suppress(Exception):  # the JVM may already be gone
        if runtime.spark is not None:
            hooks.stop_session(flavour, runtime.spark)
    if state is JobState.RESTARTING:
        return 0 if container and _rescale_handed_over(registry, plan.job_id) else EXIT_RESCALE
    return 1 if state is JobState.FAILED else 0


def _rescale_handed_over(registry: Any, job_id: str) -> bool:
    """A yarn-application driver ends its application for a rescale with status 0: YARN
    then ends it FINISHED and starts no attempt of its own (it would resume the old
    parallelism), and the supervisor reads the rescale's marker and submits the next
    application at the new parallelism (or, rolling back, the old)."""
    from flinkish_cli.registry.rescale_marker import read_marker

    with contextlib.suppress(Exception):
        return read_marker(registry, job_id) is not None
    return False
