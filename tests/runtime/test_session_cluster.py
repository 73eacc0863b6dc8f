"""Jobs in a session cluster (a real Spark Connect server): a flinkish job like any other.

The server is started once for the module by ``scripts/start-cluster.sh --session`` (the
``connect_server`` fixture) and stopped at the end. Each job's program runs as a Spark
Connect client under the same runtime as a fresh driver: the savepoint cycle resumes exactly
once across an upgrade, a killed client is restarted by its supervisor, two jobs keep their
own settings, and a resume at another parallelism has its state repartitioned (by a local
Spark on the client's machine: Spark Connect cannot repartition state offline).
Apache Flink's own CLI lists, savepoints, stops and cancels session-cluster jobs through
``flinkish web``.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.flink_cli import run_flink
from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv, job_id_of, write_events
from tests.fixtures.sink_log import committed_rows, final_counts
from tests.fixtures.web_server import running_web

pytestmark = pytest.mark.spark

SAVEPOINT = re.compile(r"Savepoint completed\. Path: (\S+)")
SETTINGS_JOB = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").appName("settings").getOrCreate()
spark.sparkContext.setLogLevel("WARN")
partitions = spark.conf.get("spark.sql.shuffle.partitions")
rows = spark.readStream.schema("key STRING, value LONG, seq LONG").json(sys.argv[1])
query = rows.writeStream.format("memory").queryName("seen").trigger(availableNow=True).start()
query.awaitTermination()
print(f"partitions={partitions} rows={spark.sql('select count(*) from seen').first()[0]}")
"""


def _rows(start: int, n: int) -> list[dict]:
    return [{"key": f"k{i % 4}", "value": i, "seq": i} for i in range(start, start + n)]


def _commit(env: FlinkishEnv, job_id: str, query: str) -> int:
    commits = env.checkpoints / job_id / query / "commits"
    names = [p.name for p in commits.iterdir()] if commits.is_dir() else []
    return max((int(n) for n in names if n.isdigit()), default=-1)


def _wait(predicate, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def _status(env: FlinkishEnv, job_id: str) -> dict:
    return json.loads((env.checkpoints / job_id / "_flinkish" / "status.json").read_text())


def _history(env: FlinkishEnv, job_id: str) -> list[dict]:
    listed = env.run("savepoint", "list", job_id, "--output", "json", check=True).stdout
    return json.loads(listed)["savepoints"]


def test_savepoint_cycle_and_a_killed_client_are_exactly_once(
    flinkish_env: FlinkishEnv, connect_server: str, flink: Any
) -> None:
    env = flinkish_env
    inputs, output = env.root / "in", env.root / "out"
    rows = _rows(0, 12)
    write_events(inputs, rows[:6])
    address = connect_server.rest_address  # Flink's -m host:port: the REST endpoint
    args = [COUNTS_JOB, "--input", str(inputs), "--output", str(output)]
    restarts = [
        "-D",
        "restart-strategy.type=fixed-delay",
        "-D",
        "restart-strategy.fixed-delay.delay=1 s",
    ]
    periodic = ["-D", "flinkish.savepoint.periodic.interval=2 s"]
    periodic += ["-D", "flinkish.savepoint.history.max-count=1000"]  # retention: tested elsewhere
    started = env.run("run", "-d", "-m", address, *restarts, *periodic, *args, check=True)
    job_id = job_id_of(started.stdout)
    listed = env.run("list", "-r", check=True).stdout  # this configuration's registry
    assert job_id in listed and "RUNNING" in listed
    with running_web(env) as web:  # Apache Flink's own CLI sees the session cluster's job
        flinks = run_flink(flink, "list", "-r", "-m", web.address)
        assert re.search(rf" : {job_id} : counts_job \(RUNNING\)$", flinks.stdout, re.M), flinks
        ours = env.run("list", "-r", "-m", web.address, check=True).stdout  # the same, via REST
        assert re.search(rf" : {job_id} : counts_job \(RUNNING\)$", ours, re.M), ours
    # the session cluster's own flinkish web serves another registry: -m there is refused
    refused = env.run("list", "-m", address, check=False)
    assert refused.returncode == 1 and "serves the registry" in refused.stderr, refused
    _wait(lambda: min(_commit(env, job_id, q) for q in ("counts", "raw")) >= 0, "first commits")

    # the client process dies: its supervisor restarts it, the job goes on
    first = _status(env, job_id)
    os.kill(first["pid"], signal.SIGKILL)
    _wait(
        lambda: (
            _status(env, job_id)["state"] == "RUNNING"
            and _status(env, job_id)["pid"] != first["pid"]
        ),
        "the client restarted",
    )
    restarted_at = time.time() * 1000
    assert "client process was killed by signal 9" in _status(env, job_id)["failure_cause"]
    assert "queries left in session" in env.run("logs", job_id, check=True).stdout
    write_events(inputs, rows[6:9])
    _wait(lambda: len(committed_rows(output / "raw")) >= 9, "the restarted client catches up")
    checkpointed = env.run("checkpoint", job_id, check=True).stdout
    assert re.search(rf"^Checkpoint \d+ for job {job_id} completed\.$", checkpointed, re.M)

    _wait(  # the restarted client carries on with the periodic savepoints
        lambda: any(
            r["trigger"] == "PERIODIC" and r["state"] == "COMPLETED" and r["time"] > restarted_at
            for r in _history(env, job_id)
        ),
        "a periodic savepoint after the client's restart",
    )
    with running_web(env) as web:  # Apache Flink's CLI takes a savepoint (state.savepoints.dir)
        taken = run_flink(flink, "savepoint", "-m", web.address, job_id)
    assert taken.returncode == 0, taken
    savepoint = SAVEPOINT.search(taken.stdout).group(1)  # type: ignore[union-attr]
    assert savepoint.startswith(f"{env.savepoints}/savepoint-{job_id[:6]}-")

    # CI upgrades the job in the session cluster (the same program, as a redeploy would),
    # with an older script's -m: the Connect server's own host:port, which still works
    old_style = connect_server.removeprefix("sc://")
    upgraded = env.run("upgrade", "-m", old_style, *restarts, *periodic, job_id, *args, check=True)
    assert f"write -m sc://{old_style} to name the Connect server itself" in upgraded.stderr
    upgrade_savepoint = SAVEPOINT.search(upgraded.stdout).group(1)  # type: ignore[union-attr]
    new_id = job_id_of(upgraded.stdout)
    assert f"Upgrade of job {job_id} completed: job {new_id} (" in upgraded.stdout
    assert env.job(job_id)["upgraded_to"] == new_id and env.job(new_id)["upgraded_from"] == job_id
    write_events(inputs, rows[9:10])
    _wait(lambda: len(committed_rows(output / "raw")) >= 10, "the upgraded job goes on")

    with running_web(env) as web:  # and stops the upgraded job, draining it
        stopped = run_flink(flink, "stop", "--drain", "-m", web.address, new_id)
    assert stopped.returncode == 0, stopped
    assert f'Draining job "{new_id}" with a CANONICAL savepoint.' in stopped.stdout
    assert env.job(new_id)["state"] == "FINISHED"
    final_savepoint = SAVEPOINT.search(stopped.stdout).group(1)  # type: ignore[union-attr]
    assert savepoint != final_savepoint
    records = _history(env, new_id)  # the history follows the job across its upgrade
    history = [(r["trigger"], r["state"], r["path"]) for r in records if r["trigger"] != "PERIODIC"]
    assert history == [
        ("STOP", "COMPLETED", final_savepoint),
        ("UPGRADE", "COMPLETED", upgrade_savepoint),
        ("MANUAL", "COMPLETED", savepoint),
    ]

    write_events(inputs, rows[10:])
    resumed = env.run(
        "run",
        "-m",
        address,
        "-s",
        final_savepoint,
        "-D",
        "execution.runtime-mode=BATCH",
        *args,
        check=True,
    )
    assert "has finished" in resumed.stdout
    seqs = sorted(r["seq"] for r in committed_rows(output / "raw"))
    assert seqs == list(range(12)), f"raw rows: {seqs}"
    assert final_counts(output / "counts") == dict(collections.Counter(r["key"] for r in rows))


def test_jobs_in_one_session_cluster_keep_their_own_settings(
    flinkish_env: FlinkishEnv, connect_server: str
) -> None:
    env = flinkish_env
    script = env.root / "settings_job.py"
    script.write_text(SETTINGS_JOB)
    inputs = env.root / "in"
    write_events(inputs, _rows(0, 5))
    one = env.popen("run", "-m", connect_server, "-p", "3", str(script), str(inputs))
    two = env.popen(
        "run", "-m", connect_server, "-D", "parallelism.default=5", str(script), str(inputs)
    )
    out_one, err_one = one.communicate(timeout=300)
    out_two, err_two = two.communicate(timeout=300)
    assert one.returncode == 0, err_one
    assert two.returncode == 0, err_two
    assert "partitions=3 rows=5" in out_one
    assert "partitions=5 rows=5" in out_two
    log = env.run("logs", job_id_of(out_one), check=True).stdout
    assert "master local[1] is ignored" in log
    # the exactly-once Kafka sink is a setting no session job can have: refused, nothing run
    jobs_before = set(env.checkpoints.iterdir())
    key = "flinkish.kafka.sink.delivery-guarantee"
    eos = ("-D", f"{key}=exactly-once", "-D", "flinkish.kafka.sink.transactional-id-prefix=p")
    refused = env.run("run", "-m", connect_server, *eos, str(script), str(inputs), check=False)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    first = refused.stderr.strip().splitlines()[0]
    assert f"{key}: exactly-once is not available on a Spark Connect session" in first
    assert set(env.checkpoints.iterdir()) == jobs_before


def _state_partitions(env: FlinkishEnv, job_id: str, query: str) -> int:
    """The shuffle (state) partitions Spark's offset log records for the query's last batch."""
    offsets = env.checkpoints / job_id / query / "offsets"
    latest = max(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
    metadata = json.loads((offsets / str(latest)).read_text().splitlines()[1])
    return int(metadata["conf"]["spark.sql.shuffle.partitions"])


def test_a_session_job_resumed_at_another_parallelism_has_its_state_repartitioned(
    flinkish_env: FlinkishEnv, connect_server: str
) -> None:
    """``run -s <checkpoint> -p 4`` into the session cluster: Spark Connect cannot repartition
    state offline, so the client does it with a local Spark; the counts go on exactly once."""
    env = flinkish_env
    env.write_conf({"state.backend.type": "rocksdb"})
    inputs, output = env.root / "in", env.root / "out"
    rows = _rows(0, 16)
    write_events(inputs, rows[:8])
    args = [COUNTS_JOB, "--input", str(inputs), "--output", str(output)]
    batch = ["-D", "execution.runtime-mode=BATCH"]
    first = env.run("run", "-m", connect_server, *batch, *args, check=True)
    job_id = job_id_of(first.stdout)
    assert _state_partitions(env, job_id, "counts") == 2

    write_events(inputs, rows[8:])
    resumed = env.run(
        "run", "-m", connect_server, "-s", str(env.checkpoints / job_id), "-p", "4", *batch, *args
    )
    assert resumed.returncode == 0, f"{resumed.stdout}\n{resumed.stderr}"
    new_id = job_id_of(resumed.stdout)
    assert _state_partitions(env, new_id, "counts") == 4
    log = env.run("logs", new_id, check=True).stdout
    assert "Repartitioning the state of" in log and "from 2 to 4 partitions" in log
    seqs = sorted(r["seq"] for r in committed_rows(output / "raw"))
    assert seqs == list(range(16)), f"raw rows: {seqs}"
    assert final_counts(output / "counts") == dict(collections.Counter(r["key"] for r in rows))
    assert _state_partitions(env, job_id, "counts") == 2, "the savepoint is never modified"


ACTIVE_QUERIES = """
import sys
from pyspark.sql.connect.session import SparkSession

try:
    spark = SparkSession.builder.remote(f"{sys.argv[1]}/;session_id={sys.argv[2]}").create()
    print(len(spark.streams.active))
except Exception as error:  # a closed session has no queries: closing it stopped them
    print("closed" if "SESSION_CLOSED" in str(error) else f"error {error}")
"""


def _assert_no_query_left(probe: Path, connect_server: str, session: str) -> None:
    """The job's session on the server runs no query (or was closed, which stopped them)."""
    import subprocess
    import sys

    counted = subprocess.run(
        [sys.executable, str(probe), str(connect_server), session],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert counted.stdout.strip().splitlines()[-1:] in (["0"], ["closed"]), counted.stderr


def test_a_dead_client_leaves_no_query_running_in_the_cluster(
    flinkish_env: FlinkishEnv, connect_server: str, flink: Any
) -> None:
    """A job's queries live in its session on the server, not in its client: when the
    client dies and the job ends FAILED, its supervisor stops them."""

    env = flinkish_env
    inputs, output = env.root / "in", env.root / "out"
    write_events(inputs, _rows(0, 4))
    args = [COUNTS_JOB, "--input", str(inputs), "--output", str(output)]
    started = env.run("run", "-d", "-m", connect_server, *args, check=True)
    job_id = job_id_of(started.stdout)
    _wait(lambda: _commit(env, job_id, "raw") >= 0, "first commit")
    status = _status(env, job_id)
    session = status["connect_session"]
    assert session
    os.kill(status["pid"], signal.SIGKILL)
    _wait(lambda: _status(env, job_id)["state"] == "FAILED", "FAILED after the client died")
    assert "client process was killed" in _status(env, job_id)["failure_cause"]
    probe = env.root / "probe.py"
    probe.write_text(ACTIVE_QUERIES)
    _assert_no_query_left(probe, connect_server, session)

    # cancel (here from Apache Flink's CLI), as in any cluster: the job is CANCELED and its
    # queries are gone from the server
    started = env.run("run", "-d", "-m", connect_server, *args, check=True)
    job_id = job_id_of(started.stdout)
    session = _status(env, job_id)["connect_session"]
    with running_web(env) as web:
        cancelled = run_flink(flink, "cancel", "-m", web.address, job_id)
    assert cancelled.returncode == 0, cancelled
    assert f"Cancelled job {job_id}." in cancelled.stdout
    _wait(lambda: _status(env, job_id)["state"] == "CANCELED", "CANCELED")
    _assert_no_query_left(probe, connect_server, session)
