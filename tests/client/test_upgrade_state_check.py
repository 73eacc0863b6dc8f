"""Upgrades checked against the state first, on real Spark, from the user's side.

A word count in the idiom of Spark's structured streaming guide (its network word count,
reading text files) runs: words counted per word and per length, every line kept. A new
version that changes the grouping key of one count and the aggregate of the other, and
drops the ``lines`` query for a ``lines_v2``, is refused by ``upgrade`` and by ``run -s``
before anything is touched, in one message naming each query, operator and difference (the
added query is no problem); the old job keeps running in the same driver, nothing is
written. A compatible version with the same drop goes through with ``-n`` (Flink's meaning:
the state of ``lines`` is skipped, ``lines_v2`` starts empty, so it reads the input from its
start) and its counts go on from the saved state.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of, read_json_dir

pytestmark = pytest.mark.spark

WORD_COUNT = '''\
"""Word counts (Spark's structured network word count, over text files)."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import count, explode, length, max, split

source, output = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.appName("StructuredWordCount").getOrCreate()

lines = spark.readStream.format("text").load(source)
words = lines.select(explode(split(lines.value, " ")).alias("word"))


def keep(name):
    def write(batch, batch_id):
        batch.write.mode("overwrite").json(f"{output}/{name}/batch={batch_id}")

    return write


word_counts = words.groupBy("word").count()
lengths = words.groupBy(length("word").alias("length")).count()

word_counts.writeStream.outputMode("update").foreachBatch(keep("word_counts")).queryName(
    "word_counts"
).start()
lengths.writeStream.outputMode("update").foreachBatch(keep("lengths")).queryName(
    "lengths"
).start()
lines.writeStream.format("json").option("path", f"{output}/lines").queryName("lines").start()

spark.streams.awaitAnyTermination()
'''
#: ``lines`` is now ``lines_v2`` (another query, another output): state it no longer has
RENAMED = WORD_COUNT.replace(
    'f"{output}/lines").queryName("lines")', 'f"{output}/lines_v2").queryName("lines_v2")'
)
#: ... and a count per word and length, and the longest word of each length
DOES_NOT_FIT = RENAMED.replace(
    'words.groupBy("word").count()', 'words.groupBy("word", length("word").alias("length")).count()'
).replace(
    'words.groupBy(length("word").alias("length")).count()',
    'words.groupBy(length("word").alias("length")).agg(count("*").alias("count"), '
    'max("word").alias("longest"))',
)
CHECK_ON = ("-D", "flinkish.restore.state-check.enabled=true")
STABLE = re.compile(r"^Upgrade of job (\w+) completed: job (\w+) .* is stable\.$", re.MULTILINE)


def _wait(predicate, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def _counts(output: Path, word: str) -> list[int]:
    return [r["count"] for r in read_json_dir(output / "word_counts") if r.get("word") == word]


def _untouched(env: FlinkishEnv, job: str, pid: int, jobs: set[str], savepoints: set[str]):
    """The old job RUNNING in the same driver (as ``list -a --output json`` shows it, read in
    this process: :meth:`FlinkishEnv.polled`), no job started, no savepoint taken."""
    assert env.polled(job)["state"] == "RUNNING" and env.driver_pid(job) == pid
    assert {p.name for p in env.checkpoints.iterdir()} == jobs, "a job was started"
    assert {p.name for p in env.savepoints.iterdir()} == savepoints, "a savepoint was taken"


def test_upgrades_are_checked_against_the_state_before_the_job_is_touched(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    inputs, output = env.root / "in", env.root / "out"
    inputs.mkdir()
    (inputs / "1.txt").write_text("apache spark streaming\nspark flink spark\n")
    program = env.root / "word_count.py"
    program.write_text(WORD_COUNT)
    job = job_id_of(env.run("run", "-d", str(program), str(inputs), str(output), check=True).stdout)
    for query in ("word_counts", "lengths", "lines"):
        env.wait_for_batches(job, query, 0)
    assert max(_counts(output, "spark")) == 3
    taken = env.run("savepoint", job, check=True)  # for run -s, below
    savepoint = savepoint_path(taken.stdout)
    pid, jobs = env.driver_pid(job), {p.name for p in env.checkpoints.iterdir()}
    savepoints = {p.name for p in env.savepoints.iterdir()}

    # -- a version that does not fit: refused, the old job untouched
    candidate = env.root / "candidate.py"
    candidate.write_text(DOES_NOT_FIT)
    args = [str(candidate), str(inputs), str(output)]
    refused = env.run("upgrade", *CHECK_ON, job, *args)
    assert refused.returncode == 1, refused
    error = refused.stderr
    assert "Traceback" not in error and error.count("ERROR: ") == 1, error
    assert f"Cannot upgrade job {job}: the new program does not fit the state of job {job}: " in (
        error
    )
    assert (
        "query 'word_counts', operator 0 (aggregation by word, _groupingexpression (Update "
        "mode)): Spark cannot restore its state with the new key (word: string, "
        "_groupingexpression: int): the saved key is (word: string)" in error
    ), error
    assert (
        "query 'lengths', operator 0 (aggregation by _groupingexpression (Update mode)): Spark "
        "cannot restore its state with the new value (count: bigint, max: string)" in error
    ), error
    assert "the saved value is (count: bigint)" in error
    assert "the saved state has query 'lines' (its source offsets), which the new program" in error
    assert "lines_v2" not in error, "a new query starts empty: no problem"
    assert f"Job {job} still runs, untouched." in error
    _untouched(env, job, pid, jobs, savepoints)

    # -- run -s gets the same check: refused, nothing started
    started = env.run("run", "-d", *CHECK_ON, "-s", savepoint, *args)
    assert started.returncode == 1, started
    assert f"ERROR: The program {candidate} does not fit the state of savepoint {savepoint}: " in (
        started.stderr
    )
    assert "(word: string, _groupingexpression: int)" in started.stderr
    assert "Nothing was started." in started.stderr and "Traceback" not in started.stderr
    _untouched(env, job, pid, jobs, savepoints)

    # -- a version that fits, but for the query it no longer has: goes through with -n
    candidate.write_text(RENAMED)
    upgraded = env.run("upgrade", *CHECK_ON, "-n", job, *args, timeout=400)
    assert upgraded.returncode == 0, upgraded
    new = STABLE.search(upgraded.stdout)
    assert new and new.group(1) == job, upgraded.stdout
    notices = upgraded.stderr
    assert "cannot take a savepoint" not in notices, notices  # stopped with one: FINISHED
    assert "Skipping saved state (-n): the saved state has query 'lines'" in notices, notices
    assert "The state of 'lengths', 'word_counts' fits the program" in notices, notices
    # its counts go on from the saved state; lines_v2 starts empty: it reads all the input
    (inputs / ".2.txt.tmp").write_text("spark again\n")  # hidden until whole: the job runs
    (inputs / ".2.txt.tmp").rename(inputs / "2.txt")
    _wait(lambda: 4 in _counts(output, "spark"), "the new job counts on from the state")
    every_line = ["apache spark streaming", "spark again", "spark flink spark"]
    _wait(
        lambda: sorted(r["value"] for r in read_json_dir(output / "lines_v2")) == every_line,
        "the new query reads all the input",
    )
    env.run("cancel", new.group(2), check=True)
    assert env.job(job)["state"] == "FINISHED"
    assert json.loads((Path(savepoint) / "_metadata").read_text())["job_id"] == job
