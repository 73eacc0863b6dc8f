"""A job's driver dies, and the job recovers as a Flink job recovers from a JobManager failure.

Each test injects a real fault into a real job on local Spark -- SIGKILL of Spark's JVM alone
(what the kernel's OOM killer does), of the Python driver alone, of the driver hung with
SIGSTOP, of the attached CLI -- or kills the driver at a named point of a savepoint or a
restore (:mod:`flinkish_cli.runtime.faults`), and then asserts the outcome: the job's
supervisor restarts the driver under the job's restart strategy with the same JobID, and
the output is exactly once (read through the file sink's commit log), or the job ends
FAILED with a clear cause and resumes cleanly. Nothing stays RUNNING or RESTARTING without
a process making progress. Every process of a running job listens on 127.0.0.1 only (read
from /proc/net).

The job is ``tests/fixtures/jobs/counts/counts_job.py``: ``raw`` copies every row to Spark's
exactly-once file sink, ``counts`` keeps a running count per key, written per batch.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.counting_input import CountingInput
from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv, job_id_of
from tests.fixtures.savepoint_files import assert_whole, tree
from tests.fixtures.sink_log import committed_rows, complete_batches, final_counts
from tests.fixtures.sockets import off_loopback, tree_listening

pytestmark = pytest.mark.spark

KEYS = [f"k{i}" for i in range(5)]
RESTARTS = (
    "-D",
    "restart-strategy.type=fixed-delay",
    "-D",
    "restart-strategy.fixed-delay.attempts=6",
    "-D",
    "restart-strategy.fixed-delay.delay=1 s",
)
SAVEPOINT_LINE = re.compile(r"Savepoint completed\. Path: (\S+)")
#: Savepoints killed by the first test: one by default; FLINKISH_SOAK_ROUNDS for the soak.
SAVEPOINT_KILLS = int(os.environ.get("FLINKISH_SOAK_ROUNDS", "1"))
SEED = int(os.environ.get("FLINKISH_SOAK_SEED", "20261125"))


class Job(CountingInput):
    """The input (with its ground truth) and output of one test's job."""

    def __init__(self, env: FlinkishEnv) -> None:
        super().__init__(env, KEYS, 20261123)

    def args(self) -> list[str]:
        return [
            COUNTS_JOB,
            *("--input", str(self.inputs), "--output", str(self.output)),
            *("--max-files", "20"),  # a restarted driver catches up in a few batches
        ]

    def start(self, *flags: str, extra_env: dict[str, str] | None = None) -> str:
        result = self.env.run("run", "-d", *RESTARTS, *flags, *self.args(), env=extra_env)
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        return job_id_of(result.stdout)

    def status(self, job_id: str) -> dict[str, Any]:
        path = self.env.checkpoints / job_id / "_flinkish" / "status.json"
        return json.loads(path.read_text())

    def last_commit(self, job_id: str, query: str) -> int:
        commits = self.env.checkpoints / job_id / query / "commits"
        names = [p.name for p in commits.iterdir()] if commits.is_dir() else []
        return max((int(n) for n in names if n.isdigit()), default=-1)

    def wait_for_commits(self, job_id: str, beyond: int = -1, timeout: float = 180) -> None:
        """Until both queries have committed a batch after ``beyond``."""
        deadline = time.monotonic() + timeout
        while min(self.last_commit(job_id, q) for q in ("counts", "raw")) <= beyond:
            assert time.monotonic() < deadline, f"no commit after {beyond}: {self.status(job_id)}"
            time.sleep(0.2)

    def wait_running_again(self, job_id: str, restarts: int, old_pid: int) -> dict[str, Any]:
        """Until a new driver runs the job after its ``restarts``-th restart."""
        deadline = time.monotonic() + 180
        seen = set()
        while True:
            status = self.status(job_id)
            seen.add(status["state"])
            if (
                status["state"] == "RUNNING"
                and status["restarts"] >= restarts
                and status["pid"] != old_pid
            ):
                assert "RESTARTING" in seen or status["restarts"] == restarts
                return status
            assert status["state"] not in ("FAILED", "CANCELED", "FINISHED"), status
            assert time.monotonic() < deadline, f"not running again: {status}"
            time.sleep(0.2)

    def stop(self, job_id: str) -> str:
        result = self.env.run("stop", job_id)
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        match = SAVEPOINT_LINE.search(result.stdout)
        assert match, result.stdout
        return match.group(1)

    def caught_up(self) -> bool:
        """Whether both queries have processed every row written (``stop`` ends them at the
        batches they have committed: a query behind would stop short of the input)."""
        try:
            counted = sum(final_counts(self.output / "counts").values())
        except OSError:  # a batch's file replaced as it was read: not there yet
            return False
        rows = len(self.rows)
        return counted >= rows and len(committed_rows(self.output / "raw")) >= rows

    def wait_caught_up(self, which: str, timeout: float = 240) -> None:
        """Until both queries have processed every row written (:meth:`caught_up`)."""
        deadline = time.monotonic() + timeout
        while not self.caught_up():  # both queries: counts lags raw after a backlog
            assert time.monotonic() < deadline, f"{which} does not catch up"
            time.sleep(0.5)

    def assert_exactly_once(self, where: str) -> None:
        seqs = sorted(row["seq"] for row in committed_rows(self.output / "raw"))
        duplicated = [s for s, n in collections.Counter(seqs).items() if n > 1]
        missing = sorted(set(range(len(self.rows))) - set(seqs))
        assert seqs == list(range(len(self.rows))), (
            f"{where}: {len(seqs)} of {len(self.rows)} rows; duplicated {duplicated[:10]}, "
            f"missing {missing[:10]}"
        )
        truth = dict(collections.Counter(row["key"] for row in self.rows))
        assert final_counts(self.output / "counts") == truth, where


class Feeder:
    """Writes an input file every ~0.7 s while a job runs (batches in flight at kills)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)

    def _feed(self) -> None:
        while not self._stop.wait(0.7):
            self.job.add_file()

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def job(flinkish_env: FlinkishEnv) -> Iterator[Job]:
    yield Job(flinkish_env)


def _jvm_of(python_pid: int) -> int:
    """Spark's JVM started the Python driver: it is its parent."""
    stat = Path(f"/proc/{python_pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _wait_for_moment(
    savepoints: Path,
    before: set[Path],
    round_: int,
    rng: random.Random,
    command: subprocess.Popen[str],
) -> None:
    """Until the moment round ``round_`` kills the driver taking a savepoint: in even rounds
    (the only one by default) as soon as the savepoint's manifest is there -- the savepoint
    whole, the driver not yet done with it (the moment a CI run once hit) --, in odd ones a
    seeded 0 to 300 ms after its directory appears: anywhere in its copy, its sync or its
    manifest, or after it. A ``savepoint`` ``command`` that ended without it fails the test
    at once, with its answer (a loaded machine may take long to start one: 180 s)."""
    deadline = time.monotonic() + 180

    def new() -> list[Path]:
        return [p for p in savepoints.glob("savepoint-*") if p not in before]

    def there() -> bool:
        return any((p / "_metadata").exists() for p in new()) if manifest else bool(new())

    manifest = round_ % 2 == 0
    while not there():
        if command.poll() is not None and not there():
            out, err = command.communicate()
            raise AssertionError(f"the savepoint ended before it started: {out}\n{err}")
        assert time.monotonic() < deadline, "the savepoint never started"
        time.sleep(0.002)
    if not manifest:
        time.sleep(rng.uniform(0, 0.3))


def _whole(leftover: Path, info: dict[str, Any], where: str) -> dict[str, int]:
    """Every file of the manifest there, with its size and SHA-256 (computed here); each
    query's last committed batch in the savepoint."""
    assert_whole(leftover, where)
    batches = {q["name"]: q["last-committed-batch"] for q in info["queries"]}
    assert set(batches) == {"counts", "raw"}, where
    return batches


def _assert_refused(
    job: Job, leftover: Path, info: subprocess.CompletedProcess[str], where: str
) -> None:
    """``savepoint info``, ``run -s`` (nothing started) and ``savepoint -d`` (nothing deleted)
    refuse it, each in one message."""
    before = tree(leftover)
    resumed = job.env.run("run", "-d", "-s", str(leftover), *job.args())
    disposed = job.env.run("savepoint", "-d", str(leftover))
    for result in (info, resumed, disposed):
        assert result.returncode == 1, f"{where}: {result.stdout}\n{result.stderr}"
        assert result.stderr.startswith(f"ERROR: {leftover} is not a complete savepoint"), (
            f"{where}: {result.stderr}"
        )
        assert "Traceback" not in result.stderr
    assert tree(leftover) == before, where


def _output_at(job: Job, name: str, batches: dict[str, int]) -> Path:
    """A new output directory holding what the job's output held at a savepoint's batches:
    the file sink's commit log up to the ``raw`` query's batch (its entries name the part
    files where they are) and the ``counts`` batches up to that query's. Taken as soon as the
    savepoint is judged whole: a minute after a compaction replaced them, the sink deletes
    the entries before it (``flinkish.file-sink.log.cleanup-delay``), which a job resumed at
    the savepoint's batch compacts again."""
    output = job.env.root / f"out-{name}"
    log = job.output / "raw" / "_spark_metadata"
    (output / "raw" / "_spark_metadata").mkdir(parents=True)
    for entry in log.iterdir():  # 12, 19.compact and their .12.crc, .19.compact.crc
        match = re.fullmatch(r"\.?(\d+)(\.compact)?(\.crc)?", entry.name)
        if match and int(match.group(1)) <= batches["raw"]:
            with contextlib.suppress(FileNotFoundError):  # replaced by a compaction meanwhile
                shutil.copy2(entry, output / "raw" / "_spark_metadata" / entry.name)
    for batch, directory in complete_batches(job.output / "counts").items():
        if batch <= batches["counts"]:
            shutil.copytree(directory, output / "counts" / directory.name)
    return output


def test_killed_jvm_python_driver_savepoint_and_a_hung_driver_are_recovered_exactly_once(
    job: Job,
) -> None:
    """Spark's JVM killed, then the Python driver, then the driver killed while it takes a
    savepoint (:data:`SAVEPOINT_KILLS` times, at moments :func:`_wait_for_moment` moves), then
    the driver hung with SIGSTOP (its heartbeat stops: the supervisor must not wait forever):
    the job restarts each time and ends exactly once. What a killed savepoint left is judged by
    the savepoint itself, never by a log line or the timing: refused by ``savepoint info``,
    ``run -s`` and ``savepoint -d``, or whole -- its checksums hold and a job resumed from it
    ends exactly once. (``tests/savepoints/test_savepoint_kills.py`` kills a savepoint after
    every change it makes, without Spark.) One job for every kind of death: each restart is a
    driver start (seconds of CPU), a test of its own another two."""
    whole: dict[Path, Path] = {}  # a whole leftover: the output as it stood at its batches
    for _ in range(3):
        job.add_file()
    deaths = 2 + SAVEPOINT_KILLS + 1  # the JVM, the Python driver, the savepoints, the hang
    attempts = deaths + 3
    system_tmp = job.env.root / "tmp"  # the system's temporary directory, as the job sees it
    system_tmp.mkdir()
    retries = f"restart-strategy.fixed-delay.attempts={attempts}"
    job_id = job.start("-D", retries, extra_env={"TMPDIR": str(system_tmp)})
    with Feeder(job):
        job.wait_for_commits(job_id)
        first = job.status(job_id)
        assert first["supervisor_pid"] and _alive(first["supervisor_pid"])
        # the job's processes (supervisor, Spark's JVM, the Python driver and workers) listen
        # on loopback only, by flinkish's own settings (the CLI ran without SPARK_LOCAL_IP)
        assert tree_listening(first["supervisor_pid"]), "no listening socket found at all"
        assert not off_loopback(first["supervisor_pid"])
        [job_tmp] = system_tmp.glob(f"flinkish-{job_id}-*")  # the job's own
        assert list(job_tmp.glob("blockmgr-*")), "Spark's scratch is not in the job's directory"

        # 1. Spark's JVM alone, as the OOM killer kills it: the Python driver must not linger
        jvm = _jvm_of(first["pid"])
        os.kill(jvm, signal.SIGKILL)
        second = job.wait_running_again(job_id, 1, first["pid"])
        assert not _alive(first["pid"]), "the Python driver outlived its JVM"
        assert "Spark's JVM exited with signal 9 (SIGKILL)" in second["failure_cause"]
        assert second["job_id"] == job_id
        job.wait_for_commits(job_id, job.last_commit(job_id, "raw"))
        # what the killed JVM left (its scratch, its native libraries) went before the restart
        assert len(list(job_tmp.glob("blockmgr-*"))) == 1, sorted(job_tmp.iterdir())

        # 2. the Python driver alone
        os.kill(second["pid"], signal.SIGKILL)
        third = job.wait_running_again(job_id, 2, second["pid"])
        assert "Python driver was killed by signal 9" in third["failure_cause"]
        job.wait_for_commits(job_id, job.last_commit(job_id, "raw"))

        # 3. the Python driver, the process taking a savepoint, dies at a moment moved across
        #    the savepoint from round to round: what it left is judged by itself alone
        rng = random.Random(SEED)
        for round_ in range(SAVEPOINT_KILLS):
            status = job.status(job_id)
            before = set(job.env.savepoints.glob("savepoint-*"))
            savepoint = job.env.popen("savepoint", job_id)
            _wait_for_moment(job.env.savepoints, before, round_, rng, savepoint)
            os.kill(status["pid"], signal.SIGKILL)
            out, err = savepoint.communicate(timeout=300)
            job.wait_running_again(job_id, 3 + round_, status["pid"])
            leftovers = set(job.env.savepoints.glob("savepoint-*")) - before
            assert len(leftovers) == 1, leftovers  # a killed driver cleans nothing up
            [leftover] = leftovers
            where = f"seed {SEED}, round {round_}, {leftover}"
            if savepoint.returncode == 0:  # it answered before it died: the savepoint is whole
                assert f"Savepoint completed. Path: {leftover}" in out.splitlines(), out
            else:
                assert savepoint.returncode == 1, f"{where}: {out}\n{err}"
                assert "Traceback" not in err and err.startswith("ERROR: "), err
            info = job.env.run("savepoint", "info", "--no-rows", "--output", "json", str(leftover))
            if info.returncode == 0:  # whole: resumed once all input is in, below
                batches = _whole(leftover, json.loads(info.stdout), where)
                whole[leftover] = _output_at(job, leftover.name, batches)
            else:
                assert savepoint.returncode == 1, f"{where}: completed, but refused: {info.stderr}"
                _assert_refused(job, leftover, info, where)
            job.wait_for_commits(job_id, job.last_commit(job_id, "raw"))

    # 4. the Python driver hung (SIGSTOP): its heartbeat stops, and the supervisor kills and
    #    restarts it after heartbeat.timeout (the test configuration's 20 s: generous, as a
    #    loaded machine stalls; no input meanwhile, so that the JVM idles while it waits)
    hung = job.status(job_id)
    os.kill(hung["pid"], signal.SIGSTOP)
    revived = job.wait_running_again(job_id, deaths, hung["pid"])
    assert "stopped sending heartbeats" in revived["failure_cause"]
    assert not _alive(hung["pid"])

    # all input processed (one more file, for the driver after the hang), then a clean stop;
    # the output is exactly once
    job.add_file()
    job.wait_caught_up("the restarted job")
    job.stop(job_id)
    assert job.status(job_id)["state"] == "FINISHED"
    job.assert_exactly_once(f"after {deaths} driver deaths")
    # the job's temporary files went with it: nothing of its drivers is left after their kills
    supervisor = job.status(job_id)["supervisor_pid"]
    deadline = time.monotonic() + 60
    while _alive(supervisor):
        assert time.monotonic() < deadline, "the supervisor outlived its job"
        time.sleep(0.2)
    assert list(system_tmp.iterdir()) == []

    # a whole leftover is a savepoint like any other: a job resumed from it, into the output
    # as it stood at the savepoint, ends with every row exactly once
    for leftover, output in whole.items():
        job.output = output
        resumed = job.env.run(
            "run", "-s", str(leftover), "-D", "execution.runtime-mode=BATCH", *job.args()
        )
        assert resumed.returncode == 0, f"{resumed.stdout}\n{resumed.stderr}"
        assert "has finished" in resumed.stdout
        job.assert_exactly_once(f"resumed from {leftover} (seed {SEED})")


def test_an_attached_cli_killed_leaves_the_job_running_and_a_strategy_that_gives_up_fails_it(
    job: Job,
) -> None:
    """The attached CLI killed: the job runs on, like a detached Flink job. Then Spark's JVM
    killed under a strategy that gives up: the job ends FAILED with the cause, and resumes
    cleanly from its retained checkpoint. (One job for both: a job is a driver start.)"""
    job.add_file()
    cli, job_id = _attached(job, "-D", "restart-strategy.type=none")
    job.wait_for_commits(job_id)
    cli.kill()
    cli.wait()
    committed = min(job.last_commit(job_id, query) for query in ("counts", "raw"))
    job.add_file()  # the job goes on processing new input without its CLI
    job.wait_for_commits(job_id, committed)
    assert job.env.job(job_id)["state"] == "RUNNING"  # like a detached Flink job

    # the strategy (none) gives up when Spark's JVM is killed
    status = job.status(job_id)
    os.kill(_jvm_of(status["pid"]), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while job.status(job_id)["state"] != "FAILED":
        assert time.monotonic() < deadline, job.status(job_id)
        time.sleep(0.2)
    listed = job.env.job(job_id)
    assert listed["state"] == "FAILED"
    assert "Spark's JVM exited with signal 9" in listed["failure-cause"]
    assert "not restarted" in listed["failure-cause"]
    [failure] = listed["exceptions"]  # recorded by the supervisor, as the driver was gone
    assert "Spark's JVM exited with signal 9" in failure["cause"] and failure["attempt"] == 0
    assert not _alive(status["supervisor_pid"]) or _wait_gone(status["supervisor_pid"])
    assert not list(job.env.logs.glob(".run-*")), "the private run directory outlived the job"
    # a clean resume from the retained checkpoint
    job.add_file()
    resumed = job.env.run(
        "run",
        "-s",
        str(job.env.checkpoints / job_id),
        "-D",
        "execution.runtime-mode=BATCH",
        *job.args(),
        check=True,
    )
    assert "has finished" in resumed.stdout
    job.assert_exactly_once("resumed after FAILED")


def _wait_gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_an_interrupted_restore_and_rescale_are_redone(job: Job) -> None:
    """A job resumed from a RocksDB savepoint at a new parallelism (``-p 2``, then ``-p 3``),
    claiming it: its first driver dies (the JVM) after copying the savepoint's state, its
    second (the Python driver) after repartitioning it; each restarted driver restores it
    again, and the third runs on it. The claimed savepoint is untouched until the rescaled
    job has committed, then deleted; the output is exactly once, and the job's own savepoint
    holds its state in three partitions."""
    job.env.write_conf({"state.backend.type": "rocksdb"})
    for _ in range(3):
        job.add_file()
    job_id = job.start("-p", "2")
    job.wait_for_commits(job_id)
    savepoint = job.stop(job_id)

    job.add_file()
    faults = "restore-copied:jvm,restore-repartitioned:python"
    rescaled = job.start(
        "-s",
        savepoint,
        "-p",
        "3",
        "--claimMode",
        "claim",
        extra_env={"FLINKISH_TEST_FAULT": faults},
    )
    status = job.wait_running_again(rescaled, 2, -1)
    first, second = (failure["cause"] for failure in status["exceptions"])
    assert "Spark's JVM" in first and "Python driver was killed" in second, status["exceptions"]
    log = job.env.run("logs", rescaled, check=True).stdout
    # the second and third drivers repartitioned the savepoint's state: the first two left
    # the claimed savepoint whole
    assert log.count("Repartitioning the state of query 'counts'") == 2
    assert "was interrupted" in log
    job.wait_for_commits(rescaled, job.last_commit(rescaled, "raw"))
    deadline = time.monotonic() + 60
    while Path(savepoint).exists():  # claimed: deleted once the job has its own checkpoints
        assert time.monotonic() < deadline, "the claimed savepoint was not taken over"
        time.sleep(0.5)
    job.wait_caught_up("the rescaled job")
    final = job.stop(rescaled)
    job.assert_exactly_once("after an interrupted restore and rescale")
    info = job.env.run("savepoint", "info", final, "--output", "json", check=True).stdout
    counts = next(q for q in json.loads(info)["queries"] if q["name"] == "counts")
    assert counts["shuffle-partitions"] == 3
    assert counts["stateful-operators"][0]["partitions"] == 3
    keys = {row["key"] for row in job.rows}
    assert counts["stateful-operators"][0]["rows"] == {"default": len(keys)}


def test_an_attached_cli_killed_with_sae_cancels_the_job(job: Job) -> None:
    """``-sae``: the attached CLI killed cancels the job (without ``-sae`` the job runs on:
    :func:`test_an_attached_cli_killed_leaves_the_job_running_and_a_strategy_that_gives_up_fails_it`)."""
    job.add_file()
    sae, sae_id = _attached(job, "-sae", *RESTARTS)
    job.wait_for_commits(sae_id)
    sae.kill()  # SIGKILL: nothing in the CLI runs; its supervisor notices
    sae.wait()
    deadline = time.monotonic() + 90
    while job.env.polled(sae_id)["state"] != "CANCELED":
        assert time.monotonic() < deadline, job.env.job(sae_id)
        time.sleep(0.5)


def _flinkish(env: FlinkishEnv) -> list[str]:
    from tests.fixtures.flinkish_env import FLINKISH

    return [FLINKISH]


def _attached(job: Job, *options: str) -> tuple[subprocess.Popen[str], str]:
    """``flinkish run OPTIONS <the job>`` attached, in the background: the CLI and the JobID
    it printed."""
    cli = subprocess.Popen(
        [*_flinkish(job.env), "run", *options, *job.args()],
        env=job.env.environ(),
        cwd=job.env.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return cli, _job_id_from(cli)


def _job_id_from(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Job has been submitted with JobID "):
            return line.rsplit(" ", 1)[-1].strip()
    raise AssertionError("no submission line")
