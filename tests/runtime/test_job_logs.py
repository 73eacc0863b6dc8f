"""A running job's log, as an operator reads it: it rolls by size with Flink's ``env.log.max``
old files while the supervisor, ``spark-submit``, the driver's JVM and its Python side all
append to it; ``flinkish logs -f`` reads across every roll; Spark's per-batch INFO chatter
stays out and flinkish's own line per batch stays in; a user's own ``log4j2.properties`` (in
``$SPARK_CONF_DIR``, where Spark looks for it) wins over flinkish's."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from flinkish_cli.registry.logroll import rolled
from tests.fixtures.cycle import Cycle
from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of

BATCH_LINE = re.compile(r"Query '(\w+)' batch (\d+): \d+ rows in \d+ ms")
#: The line the job prints per ``counts`` batch (``--print-per-batch``), and its length.
PRINTED_LINE = re.compile(r"^counts batch (\d+) written: (\.*)$", re.MULTILINE)
PRINTED = 1000
#: A line of Spark's own at INFO, as flinkish's log4j layout writes it.
SPARK_INFO = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", re.MULTILINE)


def _files(log: Path) -> list[Path]:
    """The log's old files, oldest first, then the log."""
    old = sorted(log.parent.glob(log.name + ".*"), key=lambda p: -int(p.suffix[1:]))
    return [*old, log]


@pytest.mark.spark
def test_the_log_rolls_keeps_env_log_max_files_and_logs_f_reads_across_every_roll(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf({"flinkish.log.max-file-size": "4 kb", "env.log.max": 2})
    cycle = Cycle(env)
    cycle.add_input(2)
    # The job prints a line per batch, as jobs do (its standard output is its log's too): the
    # log rolls in about ten batches, where flinkish's own lines alone took forty.
    printing = ("--print-per-batch", str(PRINTED))
    job = job_id_of(env.run("run", "-d", *cycle.args(), *printing, check=True).stdout)
    log = env.logs / f"flinkish-{job}.log"
    follower = env.popen("logs", "-f", job)
    try:
        # Input until the log has rolled past its two old files: .2 exists and what it
        # held first (the job's start) is gone.
        deadline = time.monotonic() + 240
        while not (Path(rolled(str(log), 2)).exists() and "started (id" not in _all(log)):
            assert time.monotonic() < deadline, [p.name for p in _files(log)]
            cycle.add_input(1)
            env.wait_for_batches(job, "counts", _last_batch(log, "counts") + 1)
        env.run("cancel", job, check=True)
        followed, _ = follower.communicate(timeout=60)
    finally:
        follower.kill()
    assert follower.returncode == 0
    files = _files(log)
    assert [p.name for p in files] == [f"{log.name}.2", f"{log.name}.1", log.name]
    assert all(p.stat().st_size <= 64 * 1024 for p in files)
    text = _all(log)
    assert not SPARK_INFO.search(text), SPARK_INFO.search(text)
    # logs -f saw every batch of every query once, in order, across the rolls: more than
    # the files keep now.
    for query in ("counts", "raw"):
        seen = [int(b) for q, b in BATCH_LINE.findall(followed) if q == query]
        assert seen == list(range(seen[0], seen[-1] + 1)) and seen[0] == 0, (query, seen)
        kept = [int(b) for q, b in BATCH_LINE.findall(text) if q == query]
        assert kept[0] > 0 and kept == seen[-len(kept) :]
    assert "started (id" in followed and f"Job {job} ended CANCELED." in followed
    # to the log's last line, the supervisor's after the job's end
    assert followed.endswith(log.read_text()) and "Driver attempt 0 ended" in log.read_text()
    # and every line the job printed, whole, once, in order
    printed = [int(b) for b, dots in PRINTED_LINE.findall(followed) if len(dots) == PRINTED]
    assert printed == list(range(len(printed))) and printed, PRINTED_LINE.findall(followed)
    assert followed.count(" written: ") == len(printed)


def _all(log: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in _files(log) if p.exists())


def _last_batch(log: Path, query: str) -> int:
    batches = [int(b) for q, b in BATCH_LINE.findall(_all(log)) if q == query]
    return max(batches, default=-1)


@pytest.mark.spark
def test_a_users_own_log4j2_properties_wins(flinkish_env: FlinkishEnv, tmp_path: Path) -> None:
    env = flinkish_env
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text(
        "rootLogger.level = info\n"
        "rootLogger.appenderRef.mine.ref = mine\n"
        "appender.mine.type = File\n"
        "appender.mine.name = mine\n"
        "appender.mine.fileName = ${sys:log.file}\n"
        "appender.mine.layout.type = PatternLayout\n"
        "appender.mine.layout.pattern = MINE %p %c{1}: %m%n\n"
    )
    cycle = Cycle(env)
    cycle.add_input(1)
    result = env.run("run", "-d", *cycle.args(), env={"SPARK_CONF_DIR": str(conf)}, check=True)
    job = result.stdout.split("JobID ")[1].split()[0]
    env.wait_for_batches(job, "counts", 0)
    env.run("cancel", job, check=True)
    text = (env.logs / f"flinkish-{job}.log").read_text()
    assert re.search(r"^MINE INFO SparkContext: ", text, re.MULTILINE), text[-2000:]
    assert BATCH_LINE.search(text)  # flinkish's own lines are still there
