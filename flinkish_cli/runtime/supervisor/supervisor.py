"""The supervisor of one job's driver: Flink's JobManager failover, for a Spark driver.

``flinkish run`` starts this small process (no pyspark, no JVM) in a session of its own; it
starts ``spark-submit`` in another session and waits. When the driver ends, the job's status
says how: a terminal state (FINISHED, CANCELED, FAILED) ends the supervisor with the same
outcome. When the driver died without recording an end -- Spark's JVM killed (the kernel's
OOM killer does that), the Python driver killed, the driver hung without heartbeats -- the
supervisor kills what is left of it and asks the job's restart strategy (replayed from the
failures recorded in the job's status, so it spans every process of the job): RESTARTING,
then a new driver with the same JobID, whose queries resume from their checkpoints; or
FAILED with the cause ("Spark's JVM exited with signal 9 (SIGKILL)") when the strategy
gives up. A driver that died before it ever reported (spark-submit or the JVM could not
start) is not restarted: that fails the same way again. A driver that reported and then
died is restarted even before its queries started (a JVM killed during a restore).

While no driver runs, the supervisor keeps the job's heartbeat and answers ``cancel``, so a
job is never left RUNNING or RESTARTING without a process making progress on it.

Per target: every client-mode target (local, remote, yarn-session, kubernetes-session) and
kubernetes-application (``spark-submit`` waits for the driver pod) are restarted here;
yarn-application uses YARN's own attempts (``spark.yarn.maxAppAttempts``, set from the
restart strategy): the supervisor records the application YARN accepted and the outcome; a
silent driver whose application YARN still runs is not killed (YARN's next attempt writes
the status again: the ResourceManager judges that driver's life). The supervisor also cleans
the job's private run directory (the properties file holds secrets) on every path, and the
job's temporary directory (:func:`~flinkish_cli.plan.rundir.make_tmp_dir`): each driver's
``TMPDIR`` and ``java.io.tmpdir``, emptied before a restart (a killed driver's scratch files,
native libraries and RocksDB working copies stay behind otherwise) and removed at the end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flinkish_cli.plan.rundir import (
    PID_FILE,
    PROPERTIES_FILE,
    SupervisorSpec,
    claim_tmp_dir,
    empty_dir,
    make_tmp_dir,
    parse_properties,
    process_runs,
    replace_property,
    write_private,
)
from flinkish_cli.registry import status_writer
from flinkish_cli.runtime import warm
from flinkish_cli.runtime.restart import EXIT_RESCALE, history_size
from flinkish_cli.runtime.supervisor.exits import DriverExit
from flinkish_cli.runtime.supervisor.replan import replan
from flinkish_cli.runtime.supervisor.waits import POLL, StoreWatch, YarnWatch

log = logging.getLogger("flinkish.supervisor")

#: How long a (re)started driver has to report before it counts as failed to start.
START_TIMEOUT = 300.0


@contextlib.contextmanager
def _unless_unwritable() -> Iterator[None]:
    """A status the supervisor cannot write is logged; it never ends the supervisor."""
    try:
        yield
    except Exception as error:
        log.warning("Could not write the job's status: %s", error)


@dataclass
class Supervisor:
    """Runs one job's driver until the job has a terminal state."""

    run_dir: Path
    spec: SupervisorSpec
    properties: str  # the properties file's text, kept in memory for restarts
    registry: Any
    config: Any
    process: subprocess.Popen[bytes] | None = None
    stopping: bool = False
    #: a warm runner's spare client, for the first attempt (:mod:`flinkish_cli.runtime.warm`)
    warm_client: subprocess.Popen[bytes] | None = None
    _cli_gone: bool = field(default=False, repr=False)
    #: the job's temporary directory (made by :meth:`run`; None where none could be made)
    tmp_dir: Path | None = field(default=None, repr=False)
    #: the registry's store through its outages, and YARN's next attempt of a silent driver
    store: StoreWatch = field(init=False, repr=False)
    yarn: YarnWatch = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.store = StoreWatch(self.registry, self.spec.job_id)
        self.yarn = YarnWatch(yarn_restarts=not self.spec.restarts_here)

    # -- set-up ----------------------------------------------------------------------------
    @classmethod
    def load(cls, run_dir: Path) -> Supervisor:
        from flinkish_cli.config import Configuration
        from flinkish_cli.plan.job import PLAN_CONF_KEY, JobPlan, secrets_from, storage_flat_conf
        from flinkish_cli.registry.store import JobRegistry
        from flinkish_cli.storage import StorageSettings

        spec = SupervisorSpec.read(run_dir)
        text = (run_dir / PROPERTIES_FILE).read_text(encoding="utf-8")
        values = parse_properties(text)
        plan = JobPlan.decode(values[PLAN_CONF_KEY])
        secrets = secrets_from(values.get)
        settings = StorageSettings.from_flink(storage_flat_conf(plan, secrets))
        registry = JobRegistry.open(spec.checkpoint_root, settings)
        config = Configuration.from_flat(plan.flink_conf)
        return cls(run_dir, spec, text, registry, config)

    # -- the registry ----------------------------------------------------------------------
    def _find(self, wait: bool = True) -> Any:
        """The job's status in the registry (None when it has none), through an outage of its
        store (:meth:`StoreWatch.find`; with ``wait``, until it answers or we are stopping)."""
        return self.store.find(wait, lambda: self.stopping)

    def _get(self) -> Any:
        """:meth:`_find`, for a job that has a status (the registry's error when it has none)."""
        status = self._find()
        return status if status is not None else self.registry.get(self.spec.job_id)

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> int:
        """Supervise until the job ends; the exit status (0 FINISHED/CANCELED, 1 FAILED)."""
        from flinkish_cli.registry.status import JobState

        attempt = 0
        try:
            self.tmp_dir = make_tmp_dir(self.spec.job_id)
        except OSError as error:
            log.warning(
                "No temporary directory of the job's own (%s): drivers use the system's.", error
            )
        try:
            while True:
                ended = self._run_driver(attempt)
                status = self._find()
                if status is not None and status.state.is_terminal:
                    return 1 if status.state is JobState.FAILED else 0
                if self.stopping or self._cli_gone or self._cancel_requested():
                    self._record(JobState.CANCELED, "Canceled while its driver was down.")
                    return 0
                if self._rescaling(ended):
                    attempt += 1
                    continue
                if not ended.reported:  # it failed to start: a restart would fail the same way
                    self._record(JobState.FAILED, f"{ended.cause()} (it never started)")
                    return 1
                if not self.spec.restarts_here:
                    self._record(JobState.FAILED, ended.cluster_gave_up(status), remember=True)
                    return 1
                delay = self._decide(ended.cause())
                if delay is None:
                    return 1
                if not self._wait_restarting(delay):
                    self._record(JobState.CANCELED, "Canceled while restarting.")
                    return 0
                attempt += 1
        finally:
            self._clean()

    def _run_driver(self, attempt: int) -> DriverExit:
        """Start ``spark-submit`` for ``attempt`` and wait until it exits."""
        self._write_properties(attempt)
        before = self._find()
        reported_pid = before.pid if before is not None else None
        self.process = self._warm_client()
        if self.process is not None:
            log.info(warm.WARM_CLIENT_LINE, attempt, self.process.pid)
        else:
            self.process = subprocess.Popen(
                self.spec.argv,
                env={**os.environ, **self.spec.env, **self._fresh_tmp_env()},
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            log.info("Driver attempt %d: process %d.", attempt, self.process.pid)
            self._claim_tmp_dir()
        started = time.monotonic()
        reported = False
        hung = False
        while self.process.poll() is None:
            time.sleep(POLL)
            self._watch_cli()
            status = self._find(wait=False)
            if status is not None and status.pid is not None and status.pid != reported_pid:
                if not reported:
                    self._make_cds_archive()
                reported = True
            self.yarn.record_accepted(self.registry, status, reported)  # run -d returns
            # no heartbeat can be read (or written) while the registry is down: not a hang
            if status is not None and reported and not status.state.is_terminal:
                if self.store.down:
                    continue
                # a driver silent through a registry outage gets a full timeout from its return
                silent = time.time() - max(status.heartbeat, self.store.back)
                # a silent yarn-application driver: YARN's next attempt comes (attempt_coming)
                if silent > status.heartbeat_timeout and self.yarn.attempt_coming(status):
                    continue
                if silent > status.heartbeat_timeout:
                    log.error("No heartbeat for %.0f s: killing the driver.", silent)
                    hung = True
                    self._kill_driver()
            elif not reported and time.monotonic() - started > START_TIMEOUT:
                log.error("The driver did not report within %.0f s: killing it.", START_TIMEOUT)
                self._kill_driver()
                self.yarn.end_unstarted(status)  # and the application YARN accepted for it
        self._kill_driver()  # what is left of it: an orphaned Python driver, its workers
        with contextlib.suppress(OSError):
            os.remove(self.run_dir / PROPERTIES_FILE)
        status = self._find()
        if self.spec.client and status is not None and not status.state.is_terminal:
            self._stop_orphans(status.connect_session)
        if status is not None and status.pid is not None and status.pid != reported_pid:
            reported = True
        code = self.process.returncode
        log.info("Driver attempt %d ended with status %s.", attempt, code)
        return DriverExit(code, reported, hung, self.spec.client)

    def _fresh_tmp_env(self) -> dict[str, str]:
        """The job's temporary directory, emptied, for the next driver: ``TMPDIR``, and
        ``java.io.tmpdir`` through ``SPARK_SUBMIT_OPTS`` (before the job's own JVM options on
        the driver's command line, so an ``env.java.opts`` of its own wins)."""
        if self.tmp_dir is None:
            return {}
        try:
            empty_dir(self.tmp_dir)
        except OSError as error:
            log.warning("Could not empty %s: %s", self.tmp_dir, error)
        given = os.environ.get("SPARK_SUBMIT_OPTS", "")
        option = f"-Djava.io.tmpdir={self.tmp_dir}"
        return {"TMPDIR": str(self.tmp_dir), "SPARK_SUBMIT_OPTS": f"{given} {option}".strip()}

    def _claim_tmp_dir(self) -> None:
        """The driver owns the temporary directory with this supervisor: a supervisor killed
        with SIGKILL leaves a driver that runs on in it (``plan.rundir.sweep_tmp_dirs``)."""
        if self.tmp_dir is not None and self.process is not None:
            with contextlib.suppress(OSError):
                claim_tmp_dir(self.tmp_dir, [os.getpid(), self.process.pid])

    def _warm_client(self) -> subprocess.Popen[bytes] | None:
        """The warm runner's spare client, once, when it can run this job's client."""
        spare, self.warm_client = self.warm_client, None
        if spare is None:
            return None
        return warm.hand_client(spare, self.spec.argv if self.spec.client else [])

    def _make_cds_archive(self) -> None:
        """Once the first driver that started without a class-data sharing archive runs,
        make the archive in the background for the drivers after it (``spark.cds``)."""
        missing, self.spec.cds_missing = self.spec.cds_missing, None
        if missing:
            from flinkish_cli.spark import cds
            from flinkish_cli.spark.install import pyspark_home

            log.info("%s", cds.make_missing(pyspark_home(), Path(missing)))

    def _stop_orphans(self, session: str | None) -> None:
        """A dead client's queries still run in its session on the cluster: stop them
        (in a short-lived client, bounded, so a dead cluster cannot hold the supervisor)."""
        if not session:
            return
        url = self.spec.env.get("SPARK_REMOTE", "")
        command = [self.spec.argv[0], self.spec.argv[1], "--stop-orphans", url, session]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
            )
            stopped = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
            log.info("Stopped %s queries left in session %s.", stopped or "no", session)
        except (OSError, subprocess.TimeoutExpired) as error:
            log.warning("Could not stop the queries of session %s: %s", session, error)

    def _kill_driver(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.process.wait(timeout=30)

    def _write_properties(self, attempt: int) -> None:
        """The private properties file, fresh for each attempt (the driver deletes it)."""
        from flinkish_cli.plan.job import PLAN_CONF_KEY, JobPlan

        text = self.properties
        if attempt:
            values = parse_properties(text)
            plan = JobPlan.decode(values[PLAN_CONF_KEY])
            plan.attempt = attempt
            text = replace_property(text, PLAN_CONF_KEY, plan.encode())
        path = self.run_dir / PROPERTIES_FILE
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        write_private(path, text)

    # -- in-place rescales ----------------------------------------------------------------
    def _rescaling(self, ended: DriverExit) -> bool:
        """Carry an in-place rescale on (see :mod:`flinkish_cli.registry.rescale_marker`);
        True when the next driver is to start now, outside the restart strategy.

        A driver that handed a rescale over (SAVEPOINTED) is followed by one at the new
        parallelism; one at the new parallelism that ended before the rescale completed
        (it failed, was killed, or did not become stable) by one at the old parallelism,
        from the same state (ROLLING_BACK). A rollback that fails is a failure as any other:
        the restart strategy decides, at the old parallelism.
        """
        from flinkish_cli.registry.rescale_marker import read_marker, write_marker

        marker = read_marker(self.registry, self.spec.job_id)
        if marker is None or marker.stage == "ROLLING_BACK":
            if ended.returncode != EXIT_RESCALE or marker is not None:
                return False
            log.warning(
                "The driver ended for a restart (a rescale that did not start, or a stop "
                "whose savepoint failed): restarting it."
            )
            return True
        following = marker.at("RESTARTED" if marker.stage == "SAVEPOINTED" else "ROLLING_BACK")
        with _unless_unwritable():
            write_marker(self.registry, self.spec.job_id, following)
            status = self.registry.get(self.spec.job_id)
            status_writer.record_rescaling(self.registry, status, os.getpid())
        self.properties = replan(
            self.properties, self.spec.argv, following.running_at, marker.savepoint, marker.id
        )
        if following.stage == "ROLLING_BACK":
            log.warning(
                "The rescale to parallelism %s did not become stable (%s): rolling back to %s.",
                marker.to,
                ended.cause(),
                marker.from_,
            )
        else:
            log.info("Rescaling the job to parallelism %s.", marker.to)
        return True

    # -- decisions -------------------------------------------------------------------------
    def _decide(self, cause: str) -> float | None:
        """Ask the restart strategy; the delay before the next driver, or None (FAILED)."""
        from flinkish_cli.registry.status import JobState
        from flinkish_cli.runtime.restart import record_failure

        status = self._get()
        now = time.time()
        decision = record_failure(self.config, status, cause, now)
        if not decision.restart:
            why = f"{cause}\n({decision.note})"
            with _unless_unwritable():
                status_writer.record_supervised_end(
                    self.registry, status, os.getpid(), JobState.FAILED, why, at=now
                )
            log.error("Job failed: %s", why)
            return None
        with _unless_unwritable():
            status_writer.record_supervised(self.registry, status, os.getpid())
        log.warning("%s Restarting the driver in %.1f s.", cause, decision.delay)
        return decision.delay

    def _wait_restarting(self, delay: float) -> bool:
        """Keep the heartbeat while waiting; False when the job was cancelled meanwhile."""
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if self.stopping or self._cancel_requested():
                return False
            self._watch_cli()
            if self._cli_gone:
                return False
            status = self._find(wait=False)
            if status is not None and not self.store.down:
                with _unless_unwritable():
                    status_writer.record_supervised(self.registry, status, os.getpid())
            time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))
        return True

    def _cancel_requested(self) -> bool:
        """Answer control requests while no driver runs: cancel and stop end the job."""
        from flinkish_cli.registry import protocol
        from flinkish_cli.registry.control import ControlChannel, ControlResponse

        channel = ControlChannel(self.registry, self.spec.job_id)
        try:
            requests = channel.pending()
        except Exception:
            return False
        cancel = False
        for request in requests:
            try:
                ends = protocol.ends_at_once(protocol.command_of(request))
            except ValueError:
                ends = False
            if ends:
                channel.respond(ControlResponse(request.request_id, ok=True))
                cancel = True
            else:
                channel.respond(
                    ControlResponse(
                        request.request_id,
                        ok=False,
                        error=f"Job {self.spec.job_id} is RESTARTING: its driver is down.",
                    )
                )
        return cancel

    def _watch_cli(self) -> None:
        """-sae: the attached CLI is gone (even killed with SIGKILL): cancel the job."""
        pid = self.spec.watch_pid
        if pid is None or self._cli_gone or process_runs(pid):  # an unreaped one is gone
            return
        self._cli_gone = True
        log.warning("The attached client (pid %d) is gone: cancelling the job (-sae).", pid)
        from flinkish_cli.registry.control import ControlChannel
        from flinkish_cli.registry.protocol import Cancel, to_request

        with contextlib.suppress(Exception):
            ControlChannel(self.registry, self.spec.job_id).send(to_request(Cancel()))

    # -- status ----------------------------------------------------------------------------
    def _record(self, state: Any, cause: str, remember: bool = False) -> None:
        """End the job in ``state`` unless it has ended (``remember``: in its exception history)."""
        status = self._get()
        if status.state.is_terminal:
            return
        # the line before the state, as JobRuntime.end writes them (`logs -f` stops at the state)
        log.info("Job %s ended %s: %s", self.spec.job_id, state.value, cause)
        if remember:
            status.remember_failure(cause, time.time(), history_size(self.config))
        with _unless_unwritable():
            status_writer.record_supervised_end(self.registry, status, os.getpid(), state, cause)

    def _clean(self) -> None:
        """The run directory (private properties, the job's packages) and temporary dir go."""
        import shutil

        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.tmp_dir is not None:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def handle_signal(self, signum: int, _frame: Any) -> None:
        """SIGTERM/SIGINT of the supervisor: stop the job gracefully, through its driver."""
        from flinkish_cli.registry.control import ControlChannel
        from flinkish_cli.registry.protocol import Stop, to_request

        self.stopping = True
        with contextlib.suppress(Exception):
            ControlChannel(self.registry, self.spec.job_id).send(
                to_request(Stop(f"Stopped by {signal.Signals(signum).name}."))
            )


def main(argv: list[str] | None = None) -> None:
    """``python -m flinkish_cli.runtime.supervisor <run dir>``; with ``--warm`` instead, a
    warm runner's spare that reads its run directory from standard input (``runtime.warm``)."""
    args = sys.argv[1:] if argv is None else argv
    warm_client: subprocess.Popen[bytes] | None = None
    if args[0] == warm.WARM_FLAG:
        handed = warm.serve_one_job()
        if handed is None:
            return  # no job came: the server stopped
        run_dir, warm_client = handed
    else:
        run_dir = Path(args[0])
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    (run_dir / PID_FILE).write_text(str(os.getpid()))
    try:
        supervisor = Supervisor.load(run_dir)
    except Exception as error:
        log.error("The supervisor could not start: %s", error)
        import shutil

        if warm_client is not None:
            warm.hand_client(warm_client, [])  # killed

        shutil.rmtree(run_dir, ignore_errors=True)
        sys.exit(1)
    supervisor.warm_client = warm_client
    signal.signal(signal.SIGTERM, supervisor.handle_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the attached CLI turns Ctrl-C into requests
    from flinkish_cli.registry.logroll import LogRoller

    LogRoller.configured(supervisor.spec.log_path, supervisor.config).start()  # and the driver
    sys.exit(supervisor.run())


if __name__ == "__main__":
    main()
