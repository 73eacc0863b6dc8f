"""Section 8 (optional): Apache Flink's own session cluster, for comparison.

This module owns everything about real Apache Flink in the benchmark: a virtual environment
of its own with ``pip install apache-flink`` (reused between runs; the wheel carries Flink's
distribution: ``pyflink/bin/flink``, ``start-cluster.sh``, ``lib/*.jar``), a local session
cluster with a private configuration (free ports on 127.0.0.1, 2 slots, the environment's
Python), ``flink run -d -py benchmarks/jobs/flink_counts.py`` timed until its JobID line and
until the job is RUNNING (Flink's REST API, what ``flink list -r`` shows), ``flink cancel``,
and ``stop-cluster.sh``. The medians are reported next to section 6's (flinkish's session
cluster and fresh driver, same run).

It runs in full runs unless ``BENCH_FLINK=0``, in quick runs only with ``BENCH_FLINK=1``.
When the install or the cluster's start fails, the section is skipped with the reason and
the other sections are unaffected.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    BENCH_JOBS,
    PYTHON,
    BenchError,
    Submission,
    Workspace,
    clean_env,
    directory_bytes,
    free_port,
    median,
    run_timed,
    submit_detached,
    wait_for,
)
from benchmarks.lifecycle import write_backlog as write_transactions
from benchmarks.report import Row, Section
from benchmarks.session import SessionFigures

TITLE = "8. Apache Flink itself (optional)"
JOB = BENCH_JOBS / "flink_counts.py"
PACKAGE = "apache-flink"
#: where Flink's virtual environment goes unless BENCH_FLINK_VENV says, as the page shows it
DEFAULT_VENV_SHOWN = "~/.cache/flinkish-bench/flink-venv"
DEFAULT_VENV = Path(DEFAULT_VENV_SHOWN).expanduser()
SLOTS = 2
#: What the wheel must carry for a session cluster and ``flink run -py``.
DISTRIBUTION = (
    "bin/flink",
    "bin/start-cluster.sh",
    "bin/stop-cluster.sh",
    "conf/config.yaml",
    "lib/flink-dist*.jar",
    "opt/flink-python*.jar",
)
HOME_OF = "import os, pyflink; print(os.path.dirname(pyflink.__file__))"
VERSION_OF = f"from importlib.metadata import version; print(version('{PACKAGE}'))"


@dataclass(frozen=True)
class FlinkParams:
    reps: int  # flink run -d repetitions
    enabled: bool  # full runs unless BENCH_FLINK=0; quick runs only with BENCH_FLINK=1


@dataclass(frozen=True)
class FlinkInstall:
    """Flink's distribution inside its own virtual environment."""

    python: Path
    home: Path  # the pyflink package: bin/, lib/, opt/, conf/
    version: str
    install_seconds: float | None  # None when an earlier run had installed it
    size: int


@dataclass(frozen=True)
class FlinkCluster:
    rest: str  # http://127.0.0.1:PORT
    env: dict[str, str]
    directory: Path
    start_seconds: float


class FlinkUnavailable(Exception):
    """Flink could not be installed or started here; the section says why."""


def _say(message: str) -> None:
    print(f"[bench] flink: {message}", file=sys.stderr, flush=True)


def venv_dir() -> Path:
    return Path(os.environ.get("BENCH_FLINK_VENV") or DEFAULT_VENV).expanduser()


# -- installation ----------------------------------------------------------------------------
def install(venv: Path) -> FlinkInstall:
    """``apache-flink`` in ``venv`` (created, or reused when it has it), its distribution
    checked; :class:`FlinkUnavailable` with the reason when that fails."""
    python = venv / "bin" / "python"
    began, installed = time.perf_counter(), None
    if not _importable(python):
        _say(f"installing {PACKAGE} into {venv} (several hundred MB, once)")
        if not python.exists():
            _step([PYTHON, "-m", "venv", str(venv)], "creating the virtual environment", 600)
        _step([python, "-m", "pip", "install", "--quiet", PACKAGE], f"pip install {PACKAGE}", 3600)
        installed = time.perf_counter() - began
        if not _importable(python):
            raise FlinkUnavailable(f"{PACKAGE} installed, but pyflink is not importable")
    home = Path(_output([python, "-c", HOME_OF]))
    missing = [name for name in DISTRIBUTION if not any(home.glob(name))]
    if missing:
        raise FlinkUnavailable(
            f"the {PACKAGE} wheel has no Flink distribution here ({', '.join(missing)} missing "
            f"under {home})"
        )
    version = _output([python, "-c", VERSION_OF])
    return FlinkInstall(python, home, version, installed, directory_bytes(venv))


def _importable(python: Path) -> bool:
    if not python.exists():
        return False
    probe = run_timed([python, "-c", "import pyflink"], clean_env(), Path.cwd(), timeout=120)
    return probe.returncode == 0


def _step(argv: list[Any], what: str, timeout: float) -> None:
    try:
        run_timed(argv, clean_env(), Path.cwd(), timeout=timeout).check()
    except BenchError as error:
        raise FlinkUnavailable(f"{what} failed: {_last_lines(str(error))}") from None


def _output(argv: list[Any]) -> str:
    return run_timed(argv, clean_env(), Path.cwd(), timeout=120).check().stdout.strip()


def _last_lines(text: str, count: int = 3) -> str:
    return " / ".join(line.strip() for line in text.strip().splitlines()[-count:])


# -- the cluster -----------------------------------------------------------------------------
def write_conf(flink: FlinkInstall, directory: Path, rest_port: int) -> Path:
    """A private configuration directory: the distribution's own ``config.yaml`` (read here,
    flattened) with loopback addresses, free ports, private directories, 2 slots, and this
    environment's Python; its logging files; one local worker."""
    import yaml

    conf = directory / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    base = yaml.safe_load((flink.home / "conf" / "config.yaml").read_text()) or {}
    settings = _flatten(base)
    settings.update(
        {
            "rest.port": rest_port,
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "jobmanager.rpc.address": "localhost",
            "jobmanager.rpc.port": free_port(),
            "jobmanager.bind-host": "localhost",
            "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost",
            "taskmanager.numberOfTaskSlots": SLOTS,
            "parallelism.default": 1,
            "python.executable": str(flink.python),
            "python.client.executable": str(flink.python),
            "env.log.dir": str(directory / "log"),
            "env.pid.dir": str(directory / "pid"),
            "io.tmp.dirs": str(directory / "tmp"),
        }
    )
    for name in ("log", "pid", "tmp"):
        (directory / name).mkdir(exist_ok=True)
    (conf / "config.yaml").write_text(
        yaml.safe_dump(settings, default_flow_style=False, width=1 << 16)
    )
    for pattern in ("log4j*.properties", "logback*.xml"):
        for source in (flink.home / "conf").glob(pattern):
            shutil.copyfile(source, conf / source.name)
    (conf / "workers").write_text("localhost\n")
    (conf / "masters").write_text(f"localhost:{rest_port}\n")
    return conf


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def flink_env(flink: FlinkInstall, conf: Path) -> dict[str, str]:
    """Flink's scripts' environment: its configuration, its environment's Python first on
    the PATH, none of flinkish's or PySpark's settings."""
    env = clean_env()
    for variable in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(variable, None)
    env["FLINK_CONF_DIR"] = str(conf)
    env["PATH"] = f"{flink.python.parent}:{env.get('PATH', '')}"
    return env


def rest_json(rest: str, path: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{rest}{path}", timeout=5) as answer:
        return json.load(answer)


def _slots_available(rest: str) -> int:
    try:
        return int(rest_json(rest, "/overview").get("slots-available", 0))
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def flink_cluster(flink: FlinkInstall, workspace: Workspace) -> Iterator[FlinkCluster]:
    """``start-cluster.sh`` with a private configuration, until a TaskManager's slots are
    registered; ``stop-cluster.sh`` afterwards (and SIGKILL to a daemon that stayed)."""
    directory = workspace.dir("flink", "cluster")
    rest_port = free_port()
    conf = write_conf(flink, directory, rest_port)
    env = flink_env(flink, conf)
    rest = f"http://127.0.0.1:{rest_port}"
    began = time.perf_counter()
    try:
        try:
            started = run_timed([flink.home / "bin" / "start-cluster.sh"], env, directory, 300)
            started.check()
            wait_for("a TaskManager's slots", lambda: _slots_available(rest) >= SLOTS, 180, 0.1)
        except BenchError as error:
            log = _last_lines(_daemon_logs(directory), 6)
            raise FlinkUnavailable(
                f"the Flink cluster did not start: {_last_lines(str(error))}; {log}"
            ) from None
        seconds = time.perf_counter() - began
        yield FlinkCluster(rest=rest, env=env, directory=directory, start_seconds=seconds)
    finally:
        pids = _daemon_pids(directory / "pid")
        run_timed([flink.home / "bin" / "stop-cluster.sh"], env, directory, timeout=180)
        _kill_leftovers(pids)


def _daemon_logs(directory: Path) -> str:
    return "\n".join(
        path.read_text(errors="replace")[-2000:] for path in (directory / "log").glob("*.out")
    )


def _daemon_pids(pid_dir: Path) -> list[int]:
    pids = []
    for path in pid_dir.glob("*.pid"):
        pids += [int(word) for word in path.read_text().split() if word.isdigit()]
    return pids


def _kill_leftovers(pids: list[int]) -> None:
    """SIGKILL a Flink daemon that outlived ``stop-cluster.sh`` (only Flink's own JVMs)."""
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"org.apache.flink" in command:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -- measurements ----------------------------------------------------------------------------
def job_state(rest: str, job_id: str) -> tuple[str, bool]:
    """The job's state, and whether every one of its tasks is RUNNING."""
    job = rest_json(rest, f"/jobs/{job_id}")
    vertices = job.get("vertices") or []
    tasks_running = bool(vertices) and all(v.get("status") == "RUNNING" for v in vertices)
    return str(job.get("state")), tasks_running


def submit(flink: FlinkInstall, cluster: FlinkCluster, data: Path) -> tuple[Submission, float]:
    """``flink run -d -py`` of the job, timed to its JobID line and to the job's RUNNING
    state; also the seconds from its start until all its tasks were RUNNING."""
    argv = [flink.home / "bin" / "flink", "run", "-d", "-py", JOB, "--input", data]
    submission = submit_detached(
        argv,
        cluster.env,
        cluster.directory,
        lambda job_id: job_state(cluster.rest, job_id)[0] == "RUNNING",
    )
    wait_for(
        f"every task of Flink job {submission.job_id} to run",
        lambda: job_state(cluster.rest, submission.job_id)[1],
        timeout=300,
    )
    return submission, time.perf_counter() - submission.began


def cancel(flink: FlinkInstall, cluster: FlinkCluster, job_id: str) -> float:
    """``flink cancel``; its seconds. Returns once the job's state is CANCELED."""
    argv = [flink.home / "bin" / "flink", "cancel", job_id]
    seconds = run_timed(argv, cluster.env, cluster.directory, timeout=180).check().seconds
    wait_for(
        f"Flink job {job_id} to be CANCELED",
        lambda: job_state(cluster.rest, job_id)[0] == "CANCELED",
        timeout=120,
    )
    return seconds


@dataclass
class FlinkRuns:
    """Flink's ``run -d`` samples (seconds)."""

    job_id: list[float]
    running: list[float]
    tasks_running: list[float]
    cancel: list[float]
    warm_up: float = 0.0


def measure(flink: FlinkInstall, cluster: FlinkCluster, data: Path, reps: int) -> FlinkRuns:
    warm, _ = submit(flink, cluster, data)
    cancel(flink, cluster, warm.job_id)
    _say(f"warm-up flink run -d {warm.to_running:.1f} s (not counted)")
    runs = FlinkRuns([], [], [], [], warm.to_running)
    for rep in range(reps):
        submission, tasks = submit(flink, cluster, data)
        runs.job_id.append(submission.to_job_id)
        runs.running.append(submission.to_running)
        runs.tasks_running.append(tasks)
        runs.cancel.append(cancel(flink, cluster, submission.job_id))
        _say(
            f"flink run -d {rep + 1}/{reps}: JobID {submission.to_job_id:.1f} s, RUNNING "
            f"{submission.to_running:.1f} s, all tasks {tasks:.1f} s"
        )
    return runs


# -- the section -----------------------------------------------------------------------------
def method(params: FlinkParams) -> str:
    return (
        f"Apache Flink from PyPI (`pip install {PACKAGE}` into a virtual environment of its "
        f"own, `{DEFAULT_VENV_SHOWN}` unless `BENCH_FLINK_VENV` names another, "
        "reused between runs; the wheel carries Flink's distribution) "
        "runs a local session cluster (`start-cluster.sh`: a JobManager and a TaskManager "
        f"with {SLOTS} slots, REST on a free port of 127.0.0.1, a private configuration made "
        "from the distribution's own `config.yaml`). `flink run -d -py "
        "benchmarks/jobs/flink_counts.py` (PyFlink Table API: a running count per account "
        "over a watched directory of JSON files into a blackhole sink; SQL only, so no "
        "Python runs in the TaskManager) is timed from the command's start until its "
        '"Job has been submitted with JobID" line and until the job\'s state is RUNNING '
        "(Flink's REST API, `/jobs/<id>`, polled every 50 ms: what `flink list -r` lists), "
        f"median of {params.reps} after one untimed warm-up job; each job is cancelled "
        "(`flink cancel`) before the next. Those medians stand next to section 6's, "
        "measured in the same run."
    )


def run(workspace: Workspace, params: FlinkParams, figures: SessionFigures | None) -> Section:
    section = Section(key="flink", title=TITLE, method=method(params))
    if not params.enabled:
        section.skipped = (
            "optional: it runs in full runs (BENCH_FLINK=0 leaves it out) and in quick runs "
            "only with BENCH_FLINK=1, since it installs Apache Flink (about 850 MB)."
        )
        return section
    data = workspace.dir("flink", "transactions")
    write_transactions(data, 200, 2)
    try:
        flink = install(venv_dir())
        _say(f"{PACKAGE} {flink.version} in {venv_dir()}")
        with flink_cluster(flink, workspace) as cluster:
            _say(f"cluster {cluster.rest} started in {cluster.start_seconds:.1f} s")
            runs = measure(flink, cluster, data, params.reps)
    except FlinkUnavailable as reason:
        section.skipped = f"Apache Flink could not be used here: {reason}"
        return section
    section.rows = rows(runs, figures, params.reps)
    section.rows[0].details.update(facts(flink, cluster, runs))
    section.notes += notes(figures, runs)
    return section


def facts(flink: FlinkInstall, cluster: FlinkCluster, runs: FlinkRuns) -> dict[str, Any]:
    found: dict[str, Any] = {
        "Flink": f"{PACKAGE} {flink.version}",
        "its virtual environment bytes": flink.size,
        "Flink: flink run -d until the JobID line, seconds": runs.job_id,
        "until the job was RUNNING, seconds": runs.running,
        "until all its tasks were RUNNING, seconds": runs.tasks_running,
        "flink cancel, seconds": runs.cancel,
        "the cluster's start-up (start-cluster.sh until the slots are registered), seconds": (
            cluster.start_seconds
        ),
        "warm-up flink run -d (not counted), seconds": runs.warm_up,
    }
    if flink.install_seconds is not None:
        found["pip install in this run, seconds"] = flink.install_seconds
    return found


def rows(runs: FlinkRuns, figures: SessionFigures | None, reps: int) -> list[Row]:
    """flinkish's figures of section 6 against Flink's; without them (section 6 did not
    run), Flink's time to RUNNING against its time to the JobID line."""
    flink_name = f"Flink session cluster: flink run -d until {{}} (median of {reps})"
    if figures is None:
        return [
            Row(
                measurement=flink_name.format("RUNNING"),
                value=median(runs.running),
                unit="s",
                reference="the same runs until the JobID line",
                reference_value=median(runs.job_id),
                samples=runs.running,
                reference_samples=runs.job_id,
            )
        ]
    goal = "ratio ≤ 1.00 (below Flink's own session cluster)"
    pairs = [
        ("flinkish session cluster", "the JobID line", figures.session_job_id, runs.job_id),
        ("flinkish session cluster", "RUNNING", figures.session_running, runs.running),
        ("flinkish fresh driver", "RUNNING", figures.fresh_running, runs.running),
    ]
    found = []
    for who, until, ours, theirs in pairs:
        session = who.endswith("session cluster")
        found.append(
            Row(
                measurement=f"{who}: run -d until {until} (section 6, median of {len(ours)})",
                value=median(ours),
                unit="s",
                reference=flink_name.format(until),
                reference_value=median(theirs),
                samples=ours,
                reference_samples=theirs,
                goal=goal if session else None,
                goal_met=median(ours) <= median(theirs) if session else None,
                note="" if session else "for context: no session, a JVM per job",
            )
        )
    return found


def notes(figures: SessionFigures | None, runs: FlinkRuns) -> list[str]:
    pairs = zip(runs.job_id, runs.running, strict=True)
    at_once = sum(1 for line, running in pairs if running - line < 0.2)
    found = [
        "`flink run -d` prints its JobID line once the JobManager has accepted the job; the "
        "job's state can only be asked once that line gives its id, and in "
        f"{at_once} of {len(runs.running)} runs it was RUNNING at the first poll after it "
        "(its tasks run a little later: both are in the details). `flinkish run -d` prints "
        "the line once the job's first query has started. The Flink client is a JVM that "
        "runs the Python program (py4j), so each `flink run -py` starts a JVM and a Python "
        "process, as flinkish's fresh driver does; a flinkish session job starts a Python "
        "process only.",
    ]
    if figures is None:
        found.append(
            "Section 6 did not run in this run, so flinkish's session cluster is not compared here."
        )
    return found
