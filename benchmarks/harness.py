"""What every benchmark section needs: processes, configuration, logs, timing and statistics.

Everything runs as separate processes, as a user runs it: the ``flinkish`` console script of
this virtual environment, pyspark's own ``spark-submit``, a moto S3 server. Each benchmark
works in a private directory (:class:`Workspace`) with its own Flink configuration, so it
never touches ``~/.flinkish`` or another engineer's jobs. Every process started here is
stopped here, by its own id (process group of the session it was started in).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
REPO_CONF = REPO / "conf" / "flink-conf.yaml"
JOBS = REPO / "jobs"
BENCH_JOBS = Path(__file__).resolve().parent / "jobs"
PYTHON = sys.executable
FLINKISH = str(Path(sys.executable).with_name("flinkish"))

SUBMITTED = re.compile(r"^Job has been submitted with JobID ([0-9a-f]{32})$", re.MULTILINE)
SAVEPOINT = re.compile(r"^Savepoint completed\. Path: (\S+)$", re.MULTILINE)
QUERY_STARTING = re.compile(r"MicroBatchExecution: Starting (.+?) \[id = ")
PROGRESS_START = "Streaming query made progress: {"


class BenchError(RuntimeError):
    """A benchmark step that did not do what it measures (its section reports the error)."""


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def spark_submit_binary() -> str:
    """pyspark's own ``spark-submit`` (found without importing pyspark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError("pyspark is not installed in this environment.")
    return str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "spark-submit")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every process: no Flink/PySpark/AWS settings of the caller, the
    same Python for Spark's driver and workers, plain output, loopback without proxy."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FLINK", "PYSPARK", "SPARK_CONF_DIR", "AWS_"))
    }
    env["PYSPARK_PYTHON"] = PYTHON
    env["PYSPARK_DRIVER_PYTHON"] = PYTHON
    env["NO_COLOR"] = "1"
    env["NO_PROXY"] = ",".join(filter(None, [env.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    env["no_proxy"] = env["NO_PROXY"]
    env.update(extra or {})
    return env


# -- statistics ---------------------------------------------------------------------------
def median(values: Sequence[float]) -> float:
    """The median (the mean of the two middle values for an even count)."""
    ordered = sorted(values)
    if not ordered:
        raise BenchError("no samples")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` percentile, linearly interpolated between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise BenchError("no samples")
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# -- processes ----------------------------------------------------------------------------
@dataclass
class Timed:
    """A finished process and its wall-clock time."""

    seconds: float
    returncode: int
    stdout: str
    stderr: str
    argv: list[str]

    def check(self) -> Timed:
        """Raise :class:`BenchError` unless it exited 0."""
        if self.returncode != 0:
            tail = "\n".join((self.stderr or self.stdout).strip().splitlines()[-12:])
            raise BenchError(f"{' '.join(self.argv[:4])} ... exited {self.returncode}:\n{tail}")
        return self


def run_timed(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 900.0,
    log_path: Path | None = None,
) -> Timed:
    """Run ``argv`` to its end and time it. With ``log_path`` its standard error goes there
    (Spark's INFO log can be large), otherwise both streams are captured. It runs in a
    session of its own: on a timeout its whole process group is killed."""
    argv = [str(a) for a in argv]
    log = open(log_path, "ab") if log_path is not None else None  # noqa: SIM115
    began = time.perf_counter()
    try:
        process = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log if log is not None else subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise BenchError(
                f"{' '.join(argv[:4])} ... did not end within {timeout:.0f} s"
            ) from None
        seconds = time.perf_counter() - began
    finally:
        if log is not None:
            log.close()
    if log_path is not None:
        stderr = tail_text(log_path)
    return Timed(seconds, process.returncode, stdout or "", stderr or "", argv)


class Background:
    """A process running in a session of its own; :meth:`stop` ends it and its children."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path
    ) -> None:
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        self.started = time.perf_counter()
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM to the process group this process leads, SIGKILL after ``grace``."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)


def wait_for(
    what: str, predicate: Callable[[], Any], timeout: float, interval: float = 0.05
) -> Any:
    """Poll ``predicate`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"Timed out after {timeout:.0f} s waiting for {what}.")
        time.sleep(interval)


def tail_text(path: Path, size: int = 20000) -> str:
    """The end of a (log) file."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# -- Spark logs ---------------------------------------------------------------------------
def progress_events(log_text: str) -> list[dict[str, Any]]:
    """Every ``StreamingQueryProgress`` Spark logged ("Streaming query made progress: {...}",
    pretty-printed over several lines), in log order."""
    events: list[dict[str, Any]] = []
    lines = log_text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        at = line.find(PROGRESS_START)
        if at < 0:
            index += 1
            continue
        chunk = [line[at + len(PROGRESS_START) - 1 :]]
        depth = chunk[0].count("{") - chunk[0].count("}")
        index += 1
        while depth > 0 and index < len(lines):
            chunk.append(lines[index])
            depth += lines[index].count("{") - lines[index].count("}")
            index += 1
        with contextlib.suppress(ValueError):
            events.append(json.loads("\n".join(chunk)))
    return events


def started_queries(log_text: str) -> list[str]:
    """Names of the streaming queries Spark has started, per its log."""
    return QUERY_STARTING.findall(log_text)


# -- configuration ------------------------------------------------------------------------
def flink_conf_text(overrides: Mapping[str, Any]) -> str:
    """The repository's ``conf/flink-conf.yaml`` with ``overrides`` set: a key's own line is
    replaced (so no duplicate-key warnings), keys it lacks are appended."""
    pending = {k: str(v) for k, v in overrides.items() if v is not None}
    out = []
    for line in REPO_CONF.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+):\s", line)
        if match and match.group(1) in pending:
            key = match.group(1)
            out.append(f"{key}: {pending.pop(key)}")
        else:
            out.append(line)
    if pending:
        out += ["", "# benchmark settings (scripts/bench)"]
        out += [f"{key}: {value}" for key, value in pending.items()]
    return "\n".join(out) + "\n"


@dataclass
class Workspace:
    """The private directory of one benchmark run."""

    root: Path

    def dir(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def conf_dir(self, name: str, overrides: Mapping[str, Any]) -> Path:
        """A configuration directory: the repository's defaults, private directories, and
        ``overrides``."""
        directory = self.dir("conf", name)
        settings = {
            "execution.checkpointing.dir": str(self.dir("checkpoints", name)),
            "execution.checkpointing.savepoint-dir": str(self.dir("savepoints", name)),
            "env.log.dir": str(self.dir("logs", name)),
            **overrides,
        }
        (directory / "flink-conf.yaml").write_text(flink_conf_text(settings))
        return directory


def translated_spark_conf(
    conf_dir: Path, flags: Mapping[str, str], dynamic: Sequence[str] = ()
) -> tuple[dict[str, str], str]:
    """What flinkish gives Spark for this configuration: ``to_spark(config).conf`` without
    flinkish's own ``spark.flinkish.*`` keys, secrets and the master; and the master."""
    from flinkish_cli.config import load_configuration, to_spark

    config = load_configuration(conf_dir=str(conf_dir), dynamic=tuple(dynamic), flags=dict(flags))
    translation = to_spark(config)
    conf = {
        key: value
        for key, value in translation.conf.items()
        if not key.startswith("spark.flinkish.")
        and key != "spark.master"
        and key not in translation.secret_keys
    }
    return conf, translation.master


def spark_submit_argv(
    script: Path, args: Sequence[str], conf: Mapping[str, str] | None, master: str | None
) -> list[str]:
    """``spark-submit [--master M] [--conf k=v ...] script args``."""
    argv = [spark_submit_binary()]
    if master:
        argv += ["--master", master]
    for key, value in (conf or {}).items():
        argv += ["--conf", f"{key}={value}"]
    return [*argv, str(script), *args]


# -- flinkish -----------------------------------------------------------------------------
#: flinkish logs Spark at WARN; the benchmark keeps Spark's own INFO lines that it reads.
SPARK_PROGRESS_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.file.ref = jobLog
appender.file.type = File
appender.file.name = jobLog
appender.file.fileName = ${sys:log.file}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.progress.name = org.apache.spark.sql.execution.streaming.runtime.ProgressReporter
logger.progress.level = info
logger.starting.name = org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution
logger.starting.level = info
"""


@dataclass
class FlinkishCli:
    """The ``flinkish`` command with one configuration directory, and the jobs it started."""

    conf_dir: Path
    cwd: Path
    started: list[str] = field(default_factory=list)
    #: Log Spark's progress reports (which the throughput benchmarks read); False leaves
    #: the jobs with flinkish's own logging, as a user runs them (the soak measures that).
    spark_progress: bool = True

    def env(self) -> dict[str, str]:
        extra = {"FLINK_CONF_DIR": str(self.conf_dir)}
        if self.spark_progress:
            extra["SPARK_CONF_DIR"] = str(self._spark_conf())
        return clean_env(extra)

    def _spark_conf(self) -> Path:
        """A ``SPARK_CONF_DIR`` whose log4j2.properties (the user's own, which wins over
        flinkish's) logs Spark's progress reports and query starts at INFO, as plain
        ``spark-submit`` does: the benchmark reads both runs' figures from the same lines.
        Only those two loggers: the rest of Spark's streaming INFO (a few lines per file per
        batch) would make a long run's logs measure the benchmark's setting, not flinkish's."""
        directory = self.conf_dir / "spark-conf"
        directory.mkdir(exist_ok=True)
        (directory / "log4j2.properties").write_text(SPARK_PROGRESS_LOG4J2)
        return directory

    def run(self, *args: str, timeout: float = 900.0) -> Timed:
        result = run_timed([FLINKISH, *args], self.env(), self.cwd, timeout)
        for job_id in SUBMITTED.findall(result.stdout):
            self.started.append(job_id)
        return result

    def config(self) -> Any:
        from flinkish_cli.config import load_configuration

        return load_configuration(conf_dir=str(self.conf_dir))

    def registry(self) -> Any:
        from flinkish_cli.registry.store import registry_for

        return registry_for(self.config())

    def status(self, job_id: str) -> Any:
        return self.registry().find(job_id)

    def log_path(self, job_id: str) -> Path:
        return Path(str(self.config().get("env.log.dir"))).expanduser() / f"flinkish-{job_id}.log"

    def wait_exited(self, job_id: str, timeout: float = 120.0) -> float:
        """After the job ended: wait until its driver's processes are gone (the CLI returns
        when the status says the job ended, while the JVM may still be shutting down)."""
        status = self.status(job_id)
        return wait_until_exited(status.pid if status else None, timeout)

    def is_running(self, job_id: str) -> bool:
        """The job's status says RUNNING (what ``flinkish list -r`` lists)."""
        from flinkish_cli.registry.status import JobState

        status = self.status(job_id)
        return status is not None and status.state is JobState.RUNNING

    def submit_detached(
        self, *args: str, cwd: Path | None = None, extra_env: Mapping[str, str] | None = None
    ) -> Submission:
        """``flinkish run -d ARGS``, timed to its JobID line and to RUNNING."""
        env = {**self.env(), **(extra_env or {})}
        argv = [FLINKISH, "run", "-d", *args]
        submission = submit_detached(argv, env, cwd or self.cwd, self.is_running)
        self.started.append(submission.job_id)
        return submission

    def cancel_and_wait(self, job_id: str) -> tuple[float, float]:
        """``flinkish cancel``; its seconds, and the seconds until the job's processes (the
        driver, or a session job's client) had exited after it returned."""
        cancelled = self.run("cancel", job_id, timeout=180).check()
        return cancelled.seconds, self.wait_exited(job_id)

    def cleanup(self) -> None:
        """Cancel every job of this private registry that still runs (all of them are this
        benchmark's); kill the processes of a driver that does not answer."""
        try:
            known = [status.job_id for status in self.registry().list()]
        except Exception:  # an unreadable registry: the jobs this object saw started
            known = []
        for job_id in dict.fromkeys([*self.started, *known]):
            status = self.status(job_id)
            if status is None or status.effective_state().is_terminal:
                continue
            result = self.run("cancel", job_id, timeout=120)
            status = self.status(job_id)
            if result.returncode != 0 and status is not None and status.pid:
                with contextlib.suppress(OSError):
                    os.killpg(os.getsid(status.pid), signal.SIGKILL)


def session_processes(session: int) -> list[int]:
    """The processes of a session (a flinkish job: spark-submit's JVM, the Python driver,
    pyspark's workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat[stat.rindex(")") + 2 :].split()[3]) == session:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def wait_until_exited(pid: int | None, timeout: float = 120.0) -> float:
    """Wait until every process of ``pid``'s session has exited; the seconds it took."""
    began = time.perf_counter()
    if not pid:
        return 0.0
    try:
        session = os.getsid(pid)
    except OSError:
        return 0.0
    if session == os.getsid(0):
        return 0.0  # never wait on our own session
    with contextlib.suppress(BenchError):
        wait_for(f"session {session} to exit", lambda: not session_processes(session), timeout)
    return time.perf_counter() - began


def job_id_of(result: Timed) -> str:
    match = SUBMITTED.search(result.stdout)
    if not match:
        raise BenchError(
            f"No JobID in the output of flinkish run:\n{result.stdout}\n{result.stderr}"
        )
    return match.group(1)


@dataclass
class Submission:
    """A detached submission (``flinkish run -d``, ``flink run -d``): its JobID and when, in
    seconds from the command's start, the JobID line was printed, the command exited, and
    the job was first seen RUNNING."""

    job_id: str
    to_job_id: float
    to_exit: float
    to_running: float
    stdout: str
    stderr: str
    began: float  # time.perf_counter() at the command's start


def submit_detached(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    running: Callable[[str], bool],
    timeout: float = 300.0,
) -> Submission:
    """Run a detached submission and time it: the "Job has been submitted with JobID" line
    as it is printed, the command's exit, and the first time ``running(job_id)`` holds (polled
    every 50 ms from the JobID line on, while the command may still be exiting)."""
    argv = [str(a) for a in argv]
    began = time.perf_counter()
    process = subprocess.Popen(
        argv,
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    killer = threading.Timer(timeout, _kill_group, (process.pid,))
    killer.start()
    errors: list[str] = []
    drain = threading.Thread(target=_read_into, args=(process.stderr, errors), daemon=True)
    drain.start()
    lines: list[str] = []
    job_id, to_job_id, poller = "", 0.0, None
    seen: list[float] = []
    assert process.stdout is not None
    try:
        for line in process.stdout:
            lines.append(line)
            match = SUBMITTED.match(line.rstrip("\n"))
            if match and not job_id:
                job_id, to_job_id = match.group(1), time.perf_counter() - began
                poller = threading.Thread(
                    target=_poll_running, args=(running, job_id, began, timeout, seen), daemon=True
                )
                poller.start()
        process.wait()
        to_exit = time.perf_counter() - began
        drain.join(timeout=30)
        if poller is not None:
            poller.join(timeout=timeout)
    finally:
        killer.cancel()
    stdout, stderr = "".join(lines), "".join(errors)
    if process.returncode != 0 or not job_id:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-12:])
        raise BenchError(f"{' '.join(argv[:4])} ... exited {process.returncode}:\n{tail}")
    if not seen:
        raise BenchError(f"Job {job_id} was not seen RUNNING within {timeout:.0f} s.")
    return Submission(job_id, to_job_id, to_exit, seen[0], stdout, stderr, began)


def _poll_running(
    running: Callable[[str], bool], job_id: str, began: float, timeout: float, seen: list[float]
) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        with contextlib.suppress(Exception):  # a status caught half-written: poll again
            if running(job_id):
                seen.append(time.perf_counter() - began)
                return
        time.sleep(0.05)


def _read_into(stream: IO[str] | None, into: list[str]) -> None:
    if stream is not None:
        into.append(stream.read())


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def savepoint_path_of(result: Timed) -> str:
    match = SAVEPOINT.search(result.stdout)
    if not match:
        raise BenchError(f"No savepoint path in:\n{result.stdout}\n{result.stderr}")
    return match.group(1)


# -- S3 (moto) ----------------------------------------------------------------------------
@dataclass
class S3Server:
    """A moto S3 server on loopback, its test keys and its request log."""

    endpoint: str
    log_path: Path
    process: Background
    access_key: str = "AKIAFLINKISHBENCH001"
    secret_key: str = "flinkish-bench-secret-key"
    region: str = "us-east-1"

    def flink_conf(self) -> dict[str, str]:
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.path.style.access": "true",
            "s3.region": self.region,
        }

    def client(self) -> Any:
        import boto3.session
        from botocore.config import Config

        session = boto3.session.Session(
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )
        config = Config(s3={"addressing_style": "path"}, max_pool_connections=16)
        return session.client("s3", endpoint_url=self.endpoint, config=config)

    def settings(self) -> Any:
        from flinkish_cli.storage import StorageSettings

        return StorageSettings.from_flink(self.flink_conf())

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def requests_since(self, offset: int) -> list[str]:
        """Request lines (``"GET /bucket/key HTTP/1.1" 200``) logged after byte ``offset``."""
        with open(self.log_path, "rb") as handle:
            handle.seek(offset)
            text = handle.read().decode(errors="replace")
        return re.findall(r'"([A-Z]+ \S+) HTTP/1\.[01]" \d+', text)


@contextlib.contextmanager
def s3_server(workspace: Workspace) -> Iterator[S3Server]:
    """Start ``python -m moto.server`` on 127.0.0.1 and a free port; stop it afterwards."""
    if importlib.util.find_spec("moto") is None:
        raise BenchError("moto is not installed in this environment (pip install -e '.[test]').")
    log_path = workspace.dir("s3") / "moto.log"
    env = clean_env(
        {
            "AWS_ACCESS_KEY_ID": "server-side-unused",
            "AWS_SECRET_ACCESS_KEY": "server-side-unused",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "PYTHONUNBUFFERED": "1",
        }
    )
    process = Background(
        [PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"], env, workspace.root, log_path
    )
    try:
        port = wait_for(
            "the moto server's port",
            lambda: _moto_port(log_path, process),
            timeout=60,
        )
        endpoint = f"http://127.0.0.1:{port}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def serving() -> bool:
            try:
                with opener.open(f"{endpoint}/moto-api/data.json", timeout=2) as answer:
                    answer.read()
                return True
            except OSError:
                return False

        wait_for("the moto server to answer", serving, timeout=60, interval=0.1)
        yield S3Server(endpoint=endpoint, log_path=log_path, process=process)
    finally:
        process.stop(grace=10)


def _moto_port(log_path: Path, process: Background) -> int | None:
    if not process.running():
        raise BenchError(f"The moto server exited:\n{read_text(log_path)[-2000:]}")
    match = re.search(r"Running on http://127\.0\.0\.1:(\d+)", read_text(log_path))
    return int(match.group(1)) if match else None


# -- input data ---------------------------------------------------------------------------
def write_json_lines(path: Path, rows: Sequence[Mapping[str, Any]] | Sequence[str]) -> None:
    """One JSON-lines file, written under a hidden name then renamed (as producers do)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    with open(temp, "w") as handle:
        _write_lines(handle, rows)
    os.replace(temp, path)


def _write_lines(handle: IO[str], rows: Sequence[Mapping[str, Any]] | Sequence[str]) -> None:
    for row in rows:
        handle.write(row if isinstance(row, str) else json.dumps(row, separators=(",", ":")))
        handle.write("\n")


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def fmt_seconds(value: float) -> str:
    """``0.123 s`` / ``12.3 s`` / ``123 s``."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 100:
        return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"
    return f"{value:.0f} s"


def fmt_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover
