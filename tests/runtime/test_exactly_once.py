"""Exactly-once under SIGKILL: kill every process of a running job, resume, and prove that
every input row reached the output exactly once.

The job (``tests/fixtures/jobs/counts/counts_job.py``) has two queries: ``raw`` copies every
row to Spark's exactly-once file sink, ``counts`` writes a running count per key
idempotently per micro-batch. Each round writes new input (also while the job runs), starts
the job detached (the first round fresh, later rounds ``run -s`` from the previous job), waits
a seeded random time and then SIGKILLs every process of the job's session at once
(spark-submit's JVM, the Python driver, pyspark's workers), so that batches are cut at any
point: before planning, with offsets written, with the sink's files written but not
committed, with the sink committed but not the query. One round in the middle stops the job
with a savepoint instead, and the next round restores from that savepoint. Finally the job
is resumed once more with ``execution.runtime-mode=BATCH`` to process all input and finish.
The output is then read through the sink's own commit log (:mod:`tests.fixtures.sink_log`):
every ``seq`` is there exactly once, and every key's final count equals the ground truth.

The short form (2 rounds) runs with the rest of the Spark tests; the soak runs longer::

    FLINKISH_SOAK_ROUNDS=10 pytest -m soak
    FLINKISH_SOAK_SEED=1234 FLINKISH_SOAK_ROUNDS=10 pytest -m soak   # replay a seed

The seed and the round are in every assertion message. The unit tests of the sink-log
readers at the top need no Spark.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import random
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv, job_id_of, write_events
from tests.fixtures.sink_log import (
    SinkLogError,
    committed_files,
    committed_rows,
    final_counts,
)

ROUNDS = int(os.environ.get("FLINKISH_SOAK_ROUNDS", "2"))
SEED = int(os.environ.get("FLINKISH_SOAK_SEED", "20261122"))
KEYS = [f"k{i}" for i in range(6)]
QUERIES = ("counts", "raw")
SAVEPOINT_LINE = re.compile(r"^Savepoint completed\. Path: (\S+)$", re.MULTILINE)


# -- the sink-log readers, on handcrafted directories -------------------------------------


def _entry(path: Path, action: str = "add") -> str:
    """One sink log line as Spark 4 writes it."""
    return json.dumps(
        {
            "path": path.resolve().as_uri(),
            "size": path.stat().st_size if path.exists() else 0,
            "isDir": False,
            "modificationTime": 1795304820089,
            "blockReplication": 1,
            "blockSize": 33554432,
            "action": action,
        },
        separators=(",", ":"),
    )


def _part(sink: Path, name: str, seqs: list[int]) -> Path:
    path = sink / f"part-{name}-c000.json"
    path.write_text("".join(json.dumps({"key": "k", "seq": s}) + "\n" for s in seqs))
    (sink / f".{path.name}.crc").write_bytes(b"crc")
    return path


def _log(sink: Path, name: str, *lines: str) -> None:
    metadata = sink / "_spark_metadata"
    metadata.mkdir(parents=True, exist_ok=True)
    (metadata / name).write_text("\n".join(["v1", *lines]))
    (metadata / f".{name}.crc").write_bytes(b"crc")


def test_committed_files_are_those_the_log_lists(tmp_path: Path) -> None:
    sink = tmp_path / "raw sink"  # a space: paths in the log are URIs (%20)
    sink.mkdir()
    a, b = _part(sink, "00000-a", [0, 1]), _part(sink, "00001-a", [2])
    c = _part(sink, "00000-b", [3])
    orphan = _part(sink, "00000-killed", [3, 99])  # a killed batch's file, never committed
    _log(sink, "0", _entry(a), _entry(b))
    _log(sink, "1", _entry(c))
    (sink / "_spark_metadata" / ".2.4f1c.tmp").write_text("v1\n" + _entry(orphan))

    assert committed_files(sink) == [a, b, c]
    assert sorted(r["seq"] for r in committed_rows(sink)) == [0, 1, 2, 3]
    assert orphan not in committed_files(sink)
    assert committed_files(tmp_path / "nothing") == []


def test_compaction_and_deletes(tmp_path: Path) -> None:
    sink = tmp_path / "raw"
    sink.mkdir()
    parts = [_part(sink, f"0000{i}-x", [i]) for i in range(6)]
    _log(sink, "0", _entry(parts[0]))
    _log(sink, "1", _entry(parts[1]))  # left behind: 2.compact holds batches 0 to 2
    _log(sink, "2.compact", _entry(parts[0]), _entry(parts[2]), _entry(parts[3]))
    _log(sink, "3", _entry(parts[4]), _entry(parts[0], "delete"))
    _log(sink, "4", "", _entry(parts[5]), "")

    assert committed_files(sink) == [parts[2], parts[3], parts[4], parts[5]]
    assert sorted(r["seq"] for r in committed_rows(sink)) == [2, 3, 4, 5]


def test_a_newer_compaction_supersedes_older_ones(tmp_path: Path) -> None:
    sink = tmp_path / "raw"
    sink.mkdir()
    parts = [_part(sink, f"0000{i}-y", [i]) for i in range(4)]
    _log(sink, "9.compact", _entry(parts[0]))
    _log(sink, "19.compact", _entry(parts[0]), _entry(parts[1]))  # numerically newest
    _log(sink, "12", _entry(parts[2]))  # before 19: inside it (or dropped) already
    _log(sink, "20", _entry(parts[3]))

    assert committed_files(sink) == [parts[0], parts[1], parts[3]]


def test_a_listed_file_that_is_gone_or_a_foreign_log_is_an_error(tmp_path: Path) -> None:
    sink = tmp_path / "raw"
    sink.mkdir()
    _log(sink, "0", _entry(sink / "part-00000-gone-c000.json"))
    with pytest.raises(SinkLogError, match="which is missing"):
        committed_rows(sink)
    (sink / "_spark_metadata" / "0").write_text('{"path": "file:///x", "action": "add"}\n')
    with pytest.raises(SinkLogError, match="version line"):
        committed_files(sink)


def test_real_spark_log_lines_parse(tmp_path: Path) -> None:
    """Lines as Spark 4.3 wrote them (``_spark_metadata/0`` of a real run)."""
    sink = tmp_path / "raw"
    sink.mkdir()
    part = _part(sink, "00000-531477ee-3d25-47ec-a0b9-5650f9c8152e", [7])
    line = (
        f'{{"path":"{part.as_uri()}","size":510,"isDir":false,"modificationTime":1795304820089,'
        '"blockReplication":1,"blockSize":33554432,"action":"add"}'
    )
    (sink / "_spark_metadata").mkdir()
    (sink / "_spark_metadata" / "0").write_text(f"v1\n{line}")
    assert committed_files(sink) == [part]


def _counts_batch(counts: Path, batch: int, rows: dict[str, int], complete: bool = True) -> None:
    directory = counts / f"batch={batch}"
    directory.mkdir(parents=True)
    for index, (key, count) in enumerate(rows.items()):
        part = directory / f"part-0000{index}-{batch}-c000.json"
        part.write_text(json.dumps({"key": key, "count": count, "tag": "t"}) + "\n")
        (directory / f".{part.name}.crc").write_bytes(b"crc")
    if complete:
        (directory / "_SUCCESS").write_text("")


def test_final_counts_take_each_keys_newest_complete_batch(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    _counts_batch(counts, 0, {"a": 1, "b": 2})
    _counts_batch(counts, 1, {"a": 3})
    _counts_batch(counts, 9, {"c": 1})
    _counts_batch(counts, 10, {"c": 5, "b": 4})  # 10 > 9 (not by name)
    _counts_batch(counts, 11, {"a": 100, "d": 1}, complete=False)  # a killed write
    (counts / "batch=12" / "_temporary" / "0").mkdir(parents=True)

    assert final_counts(counts) == {"a": 3, "b": 4, "c": 5}
    assert final_counts(tmp_path / "none") == {}


def test_final_counts_refuse_a_key_twice_in_one_batch(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    _counts_batch(counts, 0, {"a": 1})
    (counts / "batch=0" / "part-00009-x-c000.json").write_text('{"key": "a", "count": 2}\n')
    with pytest.raises(SinkLogError, match="twice"):
        final_counts(counts)


# -- killing a job: every process of its session --------------------------------------------


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, session..."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()


def session_of(pid: int) -> int:
    """The session id of a process (field 6 of /proc/<pid>/stat)."""
    return int(_stat_fields(pid)[3])


def live_processes_of_session(session: int) -> list[int]:
    """The processes of ``session`` that still run (zombies are dead: only not yet reaped)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat_fields(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue  # ended while we looked
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


def job_session(env: FlinkishEnv, job_id: str) -> int | None:
    """The session of a job's processes, from the driver's pid in its status; None when the
    driver is gone or the session is not this job's (its leader is spark-submit's JVM, whose
    command line names the job's run directory)."""
    status = env.checkpoints / job_id / "_flinkish" / "status.json"
    try:
        pid = int(json.loads(status.read_text())["pid"])
        session = session_of(pid)
        leader = Path(f"/proc/{session}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if session <= 1 or session == os.getsid(0) or job_id not in leader:
        return None
    return session


def kill_job(env: FlinkishEnv, job_id: str, where: str) -> list[int]:
    """SIGKILL every process of the job's session until none is left; the pids killed."""
    session = job_session(env, job_id)
    assert session is not None, f"{where}: no live session for job {job_id}"
    killed: dict[int, None] = {}  # in order, once each
    deadline = time.monotonic() + 15
    while pids := live_processes_of_session(session):
        assert time.monotonic() < deadline, f"{where}: {pids} survive SIGKILL"
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed[pid] = None
        time.sleep(0.05)  # a worker forked during the scan is found on the next one
    assert session in killed, f"{where}: spark-submit ({session}) was not among {list(killed)}"
    assert not live_processes_of_session(session), f"{where}: processes survive"
    return list(killed)


def kill_leftover_jobs(env: FlinkishEnv) -> None:
    """Kill what a failed test left running (only jobs of this test's checkpoint dir)."""
    for directory in env.checkpoints.glob("*") if env.checkpoints.exists() else []:
        session = job_session(env, directory.name)
        if session is not None:
            for pid in live_processes_of_session(session):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


# -- the soak ---------------------------------------------------------------------------------


class Soak:
    """The input (with its ground truth), the output, and the job's runs of one test."""

    def __init__(self, env: FlinkishEnv) -> None:
        self.env = env
        self.inputs = env.root / "in"
        self.output = env.root / "out"
        self.rows: list[dict[str, Any]] = []
        self.files = 0
        self._lock = threading.Lock()

    def add_file(self, rng: random.Random) -> Path:
        """One new input file of 3 to 12 rows, each with a unique ``seq``."""
        with self._lock:
            start = len(self.rows)
            batch = [
                {"key": rng.choice(KEYS), "value": rng.randint(0, 1000), "seq": seq}
                for seq in range(start, start + rng.randint(3, 12))
            ]
            path = write_events(self.inputs, batch)
            self.rows += batch
            self.files += 1
            return path

    def run(self, where: str, *flags: str, detached: bool = True) -> str:
        """``flinkish run [-d] FLAGS counts_job.py ...``; the JobID."""
        result = self.env.run(
            "run",
            *(["-d"] if detached else []),
            *flags,
            COUNTS_JOB,
            "--input",
            str(self.inputs),
            "--output",
            str(self.output),
        )
        assert result.returncode == 0, (
            f"{where}: run {' '.join(flags)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
        return job_id_of(result.stdout)

    def last_commit(self, job_id: str, query: str) -> int:
        """The newest ``commits/<N>`` of a query's checkpoint (-1 when there is none)."""
        commits = self.env.checkpoints / job_id / query / "commits"
        names = [p.name for p in commits.iterdir()] if commits.is_dir() else []
        return max((int(n) for n in names if n.isdigit()), default=-1)

    def wait_for_commit(
        self, job_id: str, beyond: dict[str, int], where: str, every: bool = False
    ) -> None:
        """Until one query (or ``every`` query) has committed a batch after ``beyond``."""
        deadline = time.monotonic() + 90
        done = all if every else any
        while not done(self.last_commit(job_id, q) > beyond[q] for q in QUERIES):
            assert time.monotonic() < deadline, f"{where}: no batch committed after {beyond}"
            time.sleep(0.1)

    def uncommitted_sink_files(self) -> int:
        """Part files in the sink that its commit log does not list (killed batches')."""
        listed = set(committed_files(self.output / "raw"))
        return sum(1 for p in (self.output / "raw").glob("part-*") if p not in listed)


class InputWriter:
    """Writes input files at random intervals while a job runs, to hit batches in flight.

    One file every 1 to 3 s keeps a job on a loaded machine busy without burying it: at a
    file every 0.3 to 1.5 s it only fell behind (each batch took its 2 files while more came),
    which hit no more batches in flight but made ``stop`` wait long for a pause between two
    batches and left a backlog for the final run (about 50 files where now about 20).
    """

    def __init__(self, soak: Soak, rng: random.Random) -> None:
        self.soak, self.rng = soak, rng
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write, name="input-writer", daemon=True)

    def _write(self) -> None:
        while not self._stop.wait(self.rng.uniform(1.0, 3.0)):
            self.soak.add_file(self.rng)

    def __enter__(self) -> InputWriter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@pytest.fixture
def soak(flinkish_env: FlinkishEnv) -> Iterator[Soak]:
    yield Soak(flinkish_env)
    kill_leftover_jobs(flinkish_env)  # a failed round must not leave Spark running


def _wait_before_kill(soak: Soak, job_id: str, rng: random.Random, where: str) -> str:
    """Wait a seeded random time in the running job; what was waited for."""
    at_start = {q: soak.last_commit(job_id, q) for q in QUERIES}
    mode = rng.choice(["at once", "random", "after a commit"])
    if mode == "at once":
        pause = rng.uniform(0, 1.5)
    elif mode == "random":
        pause = rng.uniform(0, 6)
    else:
        soak.wait_for_commit(job_id, at_start, where)
        pause = rng.uniform(0, 1.0)
    time.sleep(pause)
    return f"{mode}, then {pause:.1f} s"


def _wait_until_failed(env: FlinkishEnv, job_ids: list[str], where: str) -> None:
    """Each killed job leaves RUNNING: FAILED (no restart strategy in these tests), recorded by
    its supervisor with the signal that killed the driver, or by the heartbeat rule."""
    deadline = time.monotonic() + 60
    while True:
        jobs = {j: env.polled(j) for j in job_ids}
        pending = [j for j in job_ids if jobs[j]["state"] != "FAILED"]
        if not pending:
            break
        assert time.monotonic() < deadline, f"{where}: still {[jobs[j] for j in pending]}"
        time.sleep(1)
    for job_id in job_ids:
        cause = jobs[job_id]["failure-cause"] or ""
        assert "signal 9" in cause or "heartbeat" in cause, (
            f"{where}: killed job {job_id} failed with {cause!r}"
        )


@pytest.mark.spark
@pytest.mark.soak
def test_exactly_once_when_every_process_of_the_job_is_killed(
    flinkish_env: FlinkishEnv, soak: Soak
) -> None:
    env, rng = flinkish_env, random.Random(SEED)
    stop_round = (ROUNDS - 1) // 2  # the middle round stops with a savepoint
    resume_from: str | None = None
    killed: list[str] = []
    history: list[str] = []  # what each round did, for assertion messages
    for number in range(ROUNDS):
        where = f"seed {SEED}, round {number + 1}/{ROUNDS}"
        for _ in range(rng.randint(2, 4)):
            soak.add_file(rng)
        started = time.monotonic()
        job_id = soak.run(where, *(["-s", resume_from] if resume_from else []))
        started = time.monotonic() - started
        if resume_from is not None:
            assert env.job(job_id).get("restored-from") == resume_from, where
        with InputWriter(soak, random.Random(f"{SEED}-{number}")):
            if resume_from is None or number == stop_round:
                # a query that never committed a batch has nothing to resume or save
                soak.wait_for_commit(job_id, {q: -1 for q in QUERIES}, where, every=True)
            waited = _wait_before_kill(soak, job_id, rng, where)
            if number == stop_round:
                stopped = env.run("stop", job_id)
                assert stopped.returncode == 0, f"{where}: stop failed:\n{stopped.stderr}"
                match = SAVEPOINT_LINE.search(stopped.stdout)
                assert match, f"{where}: {stopped.stdout}"
                resume_from = match.group(1)
                history.append(f"{job_id}: up in {started:.0f} s, {waited}, stopped")
            else:
                pids = kill_job(env, job_id, where)
                killed.append(job_id)
                resume_from = str(env.checkpoints / job_id)
                history.append(f"{job_id}: up in {started:.0f} s, {waited}, {len(pids)} killed")
        if number == stop_round:
            assert env.job(job_id)["state"] == "FINISHED", where

    where = f"seed {SEED}, after {ROUNDS} rounds ({'; '.join(history)})"
    assert resume_from is not None
    began = time.monotonic()
    final = soak.run(where, "-s", resume_from, "-D", "execution.runtime-mode=BATCH", detached=False)
    where += f", final BATCH run {time.monotonic() - began:.0f} s"
    assert env.job(final)["state"] == "FINISHED", where
    _wait_until_failed(env, killed, where)

    where += f", {soak.files} input files, {soak.uncommitted_sink_files()} uncommitted sink files"
    seqs = sorted(row["seq"] for row in committed_rows(soak.output / "raw"))
    duplicated = sorted(s for s, n in collections.Counter(seqs).items() if n > 1)
    missing = sorted(set(range(len(soak.rows))) - set(seqs))
    assert seqs == list(range(len(soak.rows))), (
        f"{where}: raw sink has {len(seqs)} of {len(soak.rows)} rows; "
        f"duplicated {duplicated[:20]}, missing {missing[:20]}"
    )
    truth = dict(collections.Counter(row["key"] for row in soak.rows))
    assert final_counts(soak.output / "counts") == truth, f"{where}: counts per key"


# -- a deterministic reproduction of what the soak found ---------------------------------------


class ResumeFailedError(AssertionError):
    """``run -s`` could not resume a job from its retained checkpoint."""


def _source_log_entry(path: Path, batch: int) -> str:
    """A file source's own log entry (``sources/0/<id>``), as Spark writes it."""
    entry = {"path": path.as_uri(), "timestamp": path.stat().st_mtime_ns // 1_000_000}
    return json.dumps({**entry, "batchId": batch}, separators=(",", ":"))


@pytest.mark.spark
def test_resume_after_the_file_source_log_ran_ahead_of_the_batches(
    flinkish_env: FlinkishEnv, soak: Soak
) -> None:
    """Two crash states, made exactly, in the order the soak met them by chance.

    1. A driver dies while planning batch 1 of ``raw``: its file source has logged the new
       file (``sources/0/1``), ``offsets/1`` is not written. Spark resumes correctly: batch 1
       then covers the source's log entries 1 and 2, so ``offsets/1`` holds logOffset 2.
    2. The resumed driver dies in batch 1 after the sink committed it, before
       ``commits/1``. Resuming must replay batch 1, which reads the source log up to entry 2.
    """
    env, rng = flinkish_env, random.Random(SEED)
    batch_run = ("-D", "execution.runtime-mode=BATCH")
    soak.add_file(rng)
    first = soak.run("first run", *batch_run, detached=False)
    source_log = env.checkpoints / first / "raw" / "sources" / "0"
    assert sorted(p.name for p in source_log.iterdir() if p.name.isdigit()) == ["0"]

    planned = soak.add_file(rng)  # 1: logged by the dying driver's file source only
    (source_log / "1").write_text(f"v1\n{_source_log_entry(planned, 1)}")
    soak.add_file(rng)
    second = soak.run("second run", "-s", str(env.checkpoints / first), *batch_run, detached=False)
    raw = env.checkpoints / second / "raw"
    offsets = (raw / "offsets" / "1").read_text().splitlines()
    assert json.loads(offsets[-1]) == {"logOffset": 2}, "batch 1 covers source entries 1 and 2"
    assert (soak.output / "raw" / "_spark_metadata" / "1").is_file()

    for name in ("1", ".1.crc"):  # 2: killed after the sink committed batch 1
        (raw / "commits" / name).unlink()
    result = env.run(
        "run",
        "-s",
        str(env.checkpoints / second),
        *batch_run,
        COUNTS_JOB,
        "--input",
        str(soak.inputs),
        "--output",
        str(soak.output),
    )
    if result.returncode != 0:
        raise ResumeFailedError(f"the resume failed:\n{result.stderr}")
    seqs = sorted(row["seq"] for row in committed_rows(soak.output / "raw"))
    assert seqs == list(range(len(soak.rows)))
    truth = dict(collections.Counter(row["key"] for row in soak.rows))
    assert final_counts(soak.output / "counts") == truth
