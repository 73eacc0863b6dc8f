"""Savepoints of jobs whose queries have not completed a micro-batch, on real Spark.

Flink takes a savepoint of any running job. A query of flinkish that has committed no batch
yet (its job has just started, or its source has had no input) is saved at batch -1: its
identity and where its sources start, no state. Resumed (rescaled, too), each such query
starts where it would have started, and every input row reaches the output exactly once.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import (
    JOBS,
    POLL_EVERY,
    FlinkishEnv,
    job_id_of,
    read_json_dir,
    write_events,
)

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def _info(env: FlinkishEnv, savepoint: str) -> dict[str, int]:
    """Each query's last committed batch, as ``savepoint info --output json`` shows them."""
    shown = env.run("savepoint", "info", "--no-rows", savepoint, "--output", "json", check=True)
    return {q["name"]: q["last-committed-batch"] for q in json.loads(shown.stdout)["queries"]}


def _order_ids(output: Path) -> list[str]:
    return sorted(r["order_id"] for r in read_json_dir(output)) if output.exists() else []


def _parallelism(env: FlinkishEnv, job: str) -> int:
    """The parallelism the job runs with, from its status."""
    status = env.checkpoints / job / "_flinkish" / "status.json"
    return int(json.loads(status.read_text())["parallelism"])


def test_a_job_before_its_first_batch_is_saved_stopped_and_resumed_rescaled(
    flinkish_env: FlinkishEnv,
) -> None:
    """The counting job (a stateful query and a file sink) over an input with nothing in it
    yet: a savepoint and a stop with a savepoint both succeed, hold no state, and show so;
    the input written while it is stopped is read once by the job resumed at parallelism 4."""
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.inputs.mkdir()
    job = cycle.start()

    taken = savepoint_path(env.run("savepoint", job, check=True).stdout)
    assert _info(env, taken) == {"counts": -1, "raw": -1}
    assert env.job(job)["state"] == "RUNNING", "a savepoint leaves the job running"
    listed = env.run("state", "ls", taken, check=True).stdout
    assert sorted(line.split()[:4] for line in listed.splitlines()[2:]) == [
        ["counts", "-", "-", "no"],
        ["raw", "-", "-", "no"],
    ], listed
    text = env.run("savepoint", "info", "--no-rows", taken, check=True).stdout
    rows = sorted(line.split()[:2] for line in text.splitlines()[4:])
    assert rows == [["counts", "-"], ["raw", "-"]], text

    stopped = env.run("stop", "--savepointPath", str(env.root / "stopped"), job, check=True)
    last = savepoint_path(stopped.stdout)
    assert env.job(job)["state"] == "FINISHED"
    assert _info(env, last) == {"counts": -1, "raw": -1}
    history = json.loads(env.run("savepoint", "list", job, "--output", "json").stdout)
    assert [(r["trigger"], r["state"], r["batches"]) for r in history["savepoints"]] == [
        ("STOP", "COMPLETED", {"counts": -1, "raw": -1}),
        ("MANUAL", "COMPLETED", {"counts": -1, "raw": -1}),
    ]

    cycle.add_input(3)  # arrives while the job is stopped
    resumed = cycle.start("-s", last, "-p", "4")
    cycle.wait_until_all_processed()
    cycle.check_exactly_once()
    assert _parallelism(env, resumed) == 4
    for query in ("counts", "raw"):  # the query's identity is the savepoint's
        restored = env.checkpoints / resumed / query / "metadata"
        assert restored.read_text() == (Path(last) / query / "metadata").read_text()
        offsets = json.loads((restored.parent / "offsets" / "0").read_text().splitlines()[1])
        assert offsets["conf"]["spark.sql.shuffle.partitions"] == "4", "it starts rescaled"
    env.run("cancel", resumed, check=True)


def test_a_savepoint_of_queries_with_and_without_batches(flinkish_env: FlinkishEnv) -> None:
    """Three queries, one of which has read its input: the savepoint holds each at its own
    batch; resumed, the one with batches goes on after them and the two without read their
    whole input, each row once."""
    env = flinkish_env
    inputs, output = env.root / "in", env.root / "out"
    rows: dict[str, list[dict]] = {"small": [], "medium": [], "large": []}

    def add(name: str, n: int) -> None:
        batch = [{"key": f"{name}-{len(rows[name]) + i}", "value": i, "seq": i} for i in range(n)]
        rows[name] += batch
        write_events(inputs / name, batch)

    for name in rows:
        (inputs / name).mkdir(parents=True)
    add("small", 5)
    args = (str(JOBS / "three_queries.py"), str(inputs), str(output))
    job = job_id_of(env.run("run", "-d", *args, check=True).stdout)
    env.wait_for_batches(job, "small", 0)

    taken = savepoint_path(env.run("savepoint", job, check=True).stdout)
    batches = _info(env, taken)
    assert batches["small"] >= 0 and batches["medium"] == batches["large"] == -1, batches
    env.run("cancel", job, check=True)

    add("small", 4)
    add("medium", 6)
    resumed = job_id_of(env.run("run", "-d", "-s", taken, *args, check=True).stdout)
    env.wait_for_batches(resumed, "medium", 0)
    env.wait_for_batches(resumed, "small", batches["small"] + 1)
    for name, written in rows.items():
        held = read_json_dir(output / name) if (output / name).exists() else []
        assert sorted(r["key"] for r in held) == sorted(r["key"] for r in written), name
    env.run("cancel", resumed, check=True)


def test_the_orders_job_resumed_from_before_its_first_batch(flinkish_env: FlinkishEnv) -> None:
    """jobs/orders.py (its sink given to ``start(path)``) saved before its first batch: into
    the output the job wrote after the savepoint, the resume is refused and the output left
    as it is; into a new output, every large order appears once."""
    env = flinkish_env
    inputs = env.root / "orders"
    inputs.mkdir()

    def run(*flags: str, output: str = "out") -> subprocess.CompletedProcess[str]:
        args = ("--input", str(inputs), "--output", str(env.root / output))
        return env.run("run", "-d", *flags, str(REPO / "jobs" / "orders.py"), *args)

    job = job_id_of(run().stdout)
    taken = savepoint_path(env.run("savepoint", job, check=True).stdout)
    assert _info(env, taken) == {"orders": -1}
    generate = [sys.executable, str(REPO / "scripts" / "generate_events.py"), "--kind", "orders"]
    subprocess.run([*generate, "--out", str(inputs), "--files", "3", "--rate", "0"], check=True)
    env.wait_for_batches(job, "orders", 0)
    env.run("cancel", job, check=True)
    held = sorted(p.name for p in (env.root / "out" / "_spark_metadata").iterdir())

    refused = run("-s", taken)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "taken before its first batch" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (env.root / "out" / "_spark_metadata").iterdir()) == held

    resumed = job_id_of(run("-s", taken, output="again").stdout)
    large = sorted(
        order["order_id"]
        for path in inputs.glob("part-*.json")
        for order in map(json.loads, path.read_text().splitlines())
        if order["total_price"] > 100
    )
    assert large, "the input has large orders"
    deadline = time.monotonic() + 120
    while len(written := _order_ids(env.root / "again")) < len(large):
        assert time.monotonic() < deadline, f"{len(written)} of {len(large)} orders written"
        time.sleep(POLL_EVERY)
    env.wait_for_batches(resumed, "orders", 0)
    assert _order_ids(env.root / "again") == large, "every large order once"
    env.run("cancel", resumed, check=True)


def test_a_savepoint_while_the_first_batch_runs_replays_it_once(
    flinkish_env: FlinkishEnv,
) -> None:
    """A savepoint taken while a stateful query's batch 0 is under way (its state written,
    nothing committed): it holds the planned batch and none of that state; the job resumed
    from it at another parallelism replays the batch at that parallelism, and every count
    equals the ground truth."""
    env = flinkish_env
    cycle = Cycle(env, str(JOBS / "gated_counts.py"))
    cycle.add_input(2)
    job = cycle.start()
    done = cycle.output / "counts" / "batch=0" / "_SUCCESS"
    deadline = time.monotonic() + 120
    while not done.exists():  # batch 0 has written its output and waits at the gate
        assert time.monotonic() < deadline, "batch 0 did not write its output"
        time.sleep(POLL_EVERY)

    taken = savepoint_path(env.run("savepoint", job, check=True).stdout)
    shown = env.run("savepoint", "info", "--no-rows", taken, "--output", "json", check=True)
    (query,) = json.loads(shown.stdout)["queries"]
    assert (query["last-committed-batch"], query["source-offsets"]) == (-1, [{"logOffset": 0}])
    assert query["stateful-operators"] == [], "the running batch's state is not saved"
    assert not (Path(taken) / "counts" / "state").exists()
    (cycle.output / "_gate").mkdir()
    (cycle.output / "_gate" / "open").touch()
    env.wait_for_batches(job, "counts", 1)
    env.run("cancel", job, check=True)

    cycle.add_input(1)
    resumed = cycle.start("-s", taken, "-p", "3")
    truth = collections.Counter(row["key"] for row in cycle.rows)
    deadline = time.monotonic() + 180
    while cycle.final_counts() != truth:
        assert time.monotonic() < deadline, (cycle.final_counts(), truth)
        time.sleep(POLL_EVERY)
    env.wait_for_batches(resumed, "counts", 2)
    assert cycle.final_counts() == truth, "batch 0 replayed once, the rest read once"
    state = env.checkpoints / resumed / "counts" / "state" / "0"
    assert sorted(p.name for p in state.iterdir() if p.name.isdigit()) == ["0", "1", "2"]
    env.run("cancel", resumed, check=True)
