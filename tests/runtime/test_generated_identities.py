"""Unnamed queries run, and a resume checks that their generated identities still match.

As in Flink, where an operator without ``uid()`` gets a generated id that holds while the
program's shape holds: flinkish names an unnamed query ``unnamed-<n>`` by its order of start
and records its shape (sink, sources). Resuming a savepoint with the queries reordered is
refused with the mismatch named; a savepoint query the program no longer starts is refused
at the program's first wait, and ``-n`` skips it. A ``checkpointLocation`` set by the script
is the query's checkpoint, as under ``spark-submit``, and flinkish's retention never deletes
it.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of, read_json_dir, write_events

pytestmark = pytest.mark.spark

PAIR = str(JOBS / "unnamed_pair.py")
SAVEPOINT = re.compile(r"Savepoint completed\. Path: (\S+)")


def _rows(start: int, n: int) -> list[dict]:
    return [{"key": f"k{i % 3}", "value": i, "seq": i} for i in range(start, start + n)]


def _commit(env: FlinkishEnv, job_id: str, query: str, checkpoint: Path | None = None) -> int:
    commits = (checkpoint or env.checkpoints / job_id / query) / "commits"
    names = [p.name for p in commits.iterdir()] if commits.is_dir() else []
    return max((int(n) for n in names if n.isdigit()), default=-1)


def _wait(predicate, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_unnamed_queries_resume_only_into_the_same_shape(flinkish_env: FlinkishEnv) -> None:
    env = flinkish_env
    inputs, output = env.root / "in", env.root / "out"
    write_events(inputs, _rows(0, 6))
    started = env.run("run", "-d", PAIR, str(inputs), str(output), check=True)
    job_id = job_id_of(started.stdout)
    _wait(
        lambda: min(_commit(env, job_id, q) for q in ("unnamed-1", "unnamed-2")) >= 0,
        "both unnamed queries commit",
    )
    job = env.job(job_id)
    assert set(job["queries"]) == {"unnamed-1", "unnamed-2"}
    log = env.run("logs", job_id, check=True).stdout
    assert "has no name: its identity is 'unnamed-1'" in log and ".queryName(" in log
    stopped = env.run("stop", job_id, check=True)
    savepoint = SAVEPOINT.search(stopped.stdout).group(1)  # type: ignore[union-attr]
    manifest = json.loads((Path(savepoint) / "_metadata").read_text())
    assert {q["name"] for q in manifest["queries"]} == {"unnamed-1", "unnamed-2"}

    # swapped: the first unnamed query is now the foreachBatch one -> refused, nothing ran
    write_events(inputs, _rows(6, 3))
    swapped = env.run("run", "-s", savepoint, PAIR, str(inputs), str(output / "x"), "--swap")
    assert swapped.returncode == 1, swapped.stdout + swapped.stderr
    assert "does not match the savepoint's 'unnamed-1'" in swapped.stderr
    assert "foreachBatch" in swapped.stderr and "Traceback" not in swapped.stderr
    assert not (output / "x").exists(), "a refused resume wrote output"

    # the second query dropped: refused at the program's first wait, naming it
    dropped = env.run("run", "-s", savepoint, PAIR, str(inputs), str(output), "--only-rows")
    assert dropped.returncode == 1
    assert "'unnamed-2'" in dropped.stderr and "--allowNonRestoredState" in dropped.stderr
    # ... and -n skips its state
    allowed = env.run(
        "run", "-d", "-n", "-s", savepoint, PAIR, str(inputs), str(output), "--only-rows"
    )
    assert allowed.returncode == 0, allowed.stderr
    resumed = job_id_of(allowed.stdout)
    _wait(lambda: _commit(env, resumed, "unnamed-1") >= 1, "the resumed rows query commits")
    env.run("cancel", resumed, check=True)
    seqs = sorted(r["seq"] for r in read_json_dir(output / "rows"))
    assert seqs == list(range(9)), "rows resumed from the savepoint, each once"


def test_a_checkpoint_location_set_by_the_script_is_the_querys_own(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf(
        {"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"}
    )
    inputs, output, own = env.root / "in", env.root / "out", env.root / "my-checkpoint"
    write_events(inputs, _rows(0, 4))
    args = [PAIR, str(inputs), str(output), "--only-rows", "--checkpoint", str(own)]
    first = job_id_of(env.run("run", "-d", *args, check=True).stdout)
    _wait(lambda: _commit(env, first, "", own) >= 0, "the script's checkpoint commits")
    assert env.job(first)["queries"]["unnamed-1"]
    savepoint = SAVEPOINT.search(env.run("savepoint", first, check=True).stdout).group(1)  # type: ignore[union-attr]
    assert (Path(savepoint) / "unnamed-1" / "commits").is_dir()
    env.run("cancel", first, check=True)
    assert (own / "commits").is_dir(), "retention deleted the script's own checkpoint"
    assert not (env.checkpoints / first / "unnamed-1").exists()

    # run again, as one re-runs a Spark script: it resumes from its own checkpoint
    write_events(inputs, _rows(4, 3))
    second = job_id_of(env.run("run", "-d", *args, check=True).stdout)
    _wait(lambda: _commit(env, second, "", own) >= 1, "the second run resumes and commits")
    env.run("cancel", second, check=True)
    assert sorted(r["seq"] for r in read_json_dir(output / "rows")) == list(range(7))

    # -s into a checkpoint that has moved on: refused, nothing overwritten
    before = sorted(p.name for p in (own / "commits").iterdir())
    refused = env.run("run", "-s", savepoint, *args)
    assert refused.returncode == 1
    assert "already holds batch" in refused.stderr and str(own) in refused.stderr
    assert sorted(p.name for p in (own / "commits").iterdir()) == before
