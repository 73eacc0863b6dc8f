"""Starting the job's supervisor and following it until the job runs.

:func:`launch` writes the job's private run directory (its files and formats are
:mod:`flinkish_cli.plan.rundir`'s) and starts the job's supervisor
(:mod:`flinkish_cli.runtime.supervisor`) in a session of its own, so that the job survives
the CLI, its terminal, and a Ctrl-C meant for the CLI. The supervisor deletes the run
directory when the job ends; :func:`sweep_run_dirs` removes one whose supervisor was killed.
:func:`wait_until_running` follows a detached start until the job runs or has failed (or, for
``run -d`` of a yarn-application, until YARN has accepted its application: :func:`started`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from flinkish_cli.errors import JobError
from flinkish_cli.plan.rundir import (
    LOG4J2_FILE,
    PID_FILE,
    PROPERTIES_FILE,
    RUN_DIR_PREFIX,
    SUPERVISOR_MODULE,
    SupervisorSpec,
    process_stat,
    properties_text,
    write_private,
)
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.submission.spark_submit import SubmitCommand
from flinkish_cli.submission.warm_runner import WarmRunner

#: Supervisors started by an older flinkish ran under this name; their jobs may still run.
_OLD_SUPERVISOR_MODULE = b"flinkish_cli.submission.supervisor"

#: The driver's log4j configuration: Spark's own lines at WARN and above go to the job's log
#: (its per-batch INFO chatter -- DAGScheduler, MemoryStore, StateStore... -- would fill a
#: disk in weeks); flinkish's own lines (Python logging) stay at INFO. ``spark.log.level``
#: (or the program's ``setLogLevel``) still raises Spark's level; a log4j2.properties of the
#: user's own, in $SPARK_CONF_DIR, replaces this one (``${sys:log.file}`` names the job's log).
LOG4J2 = """\
# Written by flinkish: Spark's log goes to the job's log file, not the console.
rootLogger.level = warn
rootLogger.appenderRef.file.ref = jobLog
appender.file.type = File
appender.file.name = jobLog
appender.file.fileName = {log_path}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.hadoopnative.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoopnative.level = error
"""


def log4j_configuration(log_path: Path) -> str:
    """The driver's log4j configuration: the user's ``$SPARK_CONF_DIR/log4j2.properties``
    when there is one (Spark's own place for it), else flinkish's."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        own = Path(conf_dir) / "log4j2.properties"
        with contextlib.suppress(OSError):
            return own.read_text(encoding="utf-8")
    return LOG4J2.format(log_path=log_path)


@dataclass
class Launched:
    """A started job: its supervisor process (which runs the driver) and its log."""

    process: subprocess.Popen[bytes]
    log_path: Path


def launch(
    command: SubmitCommand,
    run_dir: Path,
    log_path: Path,
    attached: bool,
    *,
    job_id: str,
    checkpoint_root: str,
    restarts_here: bool = True,
    watch_pid: int | None = None,
    client: bool = False,
    environment: dict[str, str] | None = None,
    warm: WarmRunner | None = None,
) -> Launched:
    """Write the private files and start the job's supervisor in a session of its own.

    The supervisor (:mod:`.supervisor`) starts ``spark-submit`` and restarts a driver that
    dies; its standard output is the driver's (the script's prints), piped to an attached
    CLI or appended to the job's log. ``environment`` replaces this process's environment
    (a job submitted through flinkish web gets none of the server's). ``warm``: a detached
    session-cluster job of that environment starts in the warm runner's spare instead
    (:mod:`flinkish_cli.runtime.warm`), with the same files, streams and environment.
    """
    write_private(run_dir / PROPERTIES_FILE, properties_text(command.properties))
    (run_dir / LOG4J2_FILE).write_text(log4j_configuration(log_path))
    env = dict(command.env)
    SupervisorSpec(
        argv=command.argv,
        env=env,
        job_id=job_id,
        checkpoint_root=checkpoint_root,
        log_path=str(log_path),
        restarts_here=restarts_here,
        watch_pid=watch_pid,
        client=client,
        cds_missing=command.cds_missing,
    ).write(run_dir)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = dict(os.environ if environment is None else environment)
    for variable in ("PYSPARK_DRIVER_PYTHON", "PYSPARK_DRIVER_PYTHON_OPTS", "PYSPARK_SUBMIT_ARGS"):
        child_env.pop(variable, None)
    if warm is not None and client and not attached:
        spare = warm.take(run_dir, child_env)
        if spare is not None:
            return Launched(process=spare, log_path=log_path)
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR_MODULE, str(run_dir)],
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if attached else log,
            stderr=log,
            start_new_session=True,
        )
    finally:
        log.close()
    return Launched(process=process, log_path=log_path)


def sweep_run_dirs(log_dir: Path, older_than: float = 60.0) -> list[Path]:
    """Remove run directories no supervisor owns any more (it was killed): their private
    properties file must not outlive the job. Returns what was removed."""
    import shutil

    removed = []
    try:
        entries = list(os.scandir(log_dir))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(RUN_DIR_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < older_than:
                continue  # a job being prepared or starting
            pid = int(Path(entry.path, PID_FILE).read_text().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        if pid and _is_supervisor(pid):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _is_supervisor(pid: int) -> bool:
    """Whether ``pid`` is a live supervisor. A process whose command line is still empty (one
    being exec'd) counts as live: keeping a run directory one sweep longer is harmless,
    removing a starting job's is not. One that has exited (a zombie, also without a command
    line) does not."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if cmdline:
            return SUPERVISOR_MODULE.encode() in cmdline or _OLD_SUPERVISOR_MODULE in cmdline
        stat = process_stat(pid)
        return stat is not None and stat[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


def started(status: JobStatus | None, accepted: bool) -> bool:
    """Whether a detached start has come far enough to return: the job runs or has ended;
    with ``accepted``, also once its cluster has accepted its application (a yarn-application
    job whose YARN application id its supervisor recorded, still CREATED), as Flink's
    ``run -d -t yarn-application`` returns once YARN has accepted the application."""
    if status is None:
        return False
    if status.state is JobState.RUNNING or status.state.is_terminal:
        return True
    return accepted and status.yarn_application is not None


def wait_until_running(
    registry: JobRegistry,
    job_id: str,
    launched: Launched,
    timeout: float = 300.0,
    accepted: bool = False,
) -> JobStatus:
    """Wait until the job runs or has ended (with ``accepted``, or its cluster accepted it:
    :func:`started`); :class:`JobError` when it dies at start-up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = registry.find(job_id)
        if started(status, accepted):
            assert status is not None
            return status
        if launched.process.poll() is not None:
            status = registry.find(job_id)
            if status is not None and status.state.is_terminal:
                return status
            raise JobError(
                f"Job {job_id} could not start: its driver exited with status "
                f"{launched.process.returncode}.\n{tail_cause(launched.log_path)}",
                f"The full log is {launched.log_path}.",
            )
        time.sleep(0.2)
    raise JobError(
        f"Job {job_id} did not reach RUNNING within {timeout:.0f} s.",
        f"It may still be starting; see 'flinkish list' and its log {launched.log_path}.",
    )


def tail_cause(log_path: Path, lines: int = 8) -> str:
    """The last error-looking lines of a log, for a start-up failure."""
    try:
        text = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    interesting = [
        line
        for line in text
        if ("Error" in line or "ERROR" in line or "Exception" in line)
        and not line.lstrip().startswith("at ")
    ]
    return "\n".join((interesting or text)[-lines:])
