"""Scripts in the idioms of Spark's own Python examples run the same under plain
``spark-submit`` and under ``flinkish run``.

Each script (``tests/fixtures/spark_idioms``) writes what it observed (query states, results of
its memory sinks, settings) to ``result.json`` and its sinks' output next to it; every test
checks them against the results it writes down for the script. The gate runs each
script under flinkish; the suite's long form (:mod:`tests.fixtures.long_form`) also runs it
under plain ``spark-submit``, in a work directory of its own, and checks the same: so the
expected results are Spark's own, not flinkish's. The scripts are never modified for
flinkish: no ``queryName`` where Spark's examples have none, the script's own triggers,
checkpoint locations and builder settings.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.spark import cds
from flinkish_cli.spark.install import pyspark_home
from tests.fixtures.flinkish_env import (
    TEST_JVM_OPTIONS,
    FlinkishEnv,
    job_id_of,
    read_json_dir,
    write_events,
)
from tests.fixtures.long_form import LONG_FORM

pytestmark = pytest.mark.spark

IDIOMS = Path(__file__).parents[1] / "fixtures" / "spark_idioms"
SPARK_SUBMIT = str(Path(sys.executable).with_name("spark-submit"))

ORDERS = [
    {"id": n, "customer": f"cust-{n % 7}", "amount": float((n * 37) % 250)} for n in range(60)
]
TEXT = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps", "a fox runs"]


def spark_submit(script: str, *args: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """The script under plain spark-submit, local[2], as its author would run it. Its JVM
    gets what flinkish's drivers get and Spark's results do not depend on: the test JVM
    options, the drivers' class-data sharing archive when there is one (which needs the
    archive's fixed, empty ``SPARK_CONF_DIR``; Spark's defaults apply as with none) and the
    test jobs' shuffle partitions (2, their ``parallelism.default``: with Spark's 200 every
    batch of the network word count ran 200 tasks, each with a state store; a script's
    builder still sets its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLINK", "PYSPARK"))}
    env |= {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    java_options = [TEST_JVM_OPTIONS]
    archive = cds.archive_path(pyspark_home())
    if archive is not None and cds.usable(archive):
        env["SPARK_CONF_DIR"] = str(cds.spark_conf_dir())
        java_options += [*cds.jvm_logging_options(), *cds.driver_options(archive)]
    command = [SPARK_SUBMIT, "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += ["--conf", "spark.sql.shuffle.partitions=2"]
    command += ["--conf", f"spark.driver.extraJavaOptions={' '.join(java_options)}"]
    result = subprocess.run(
        [*command, str(IDIOMS / script), str(workdir), *args],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"spark-submit failed:\n{result.stderr[-4000:]}"
    return result


def flinkish_run(
    env: FlinkishEnv, script: str, *args: str, workdir: Path
) -> subprocess.CompletedProcess[str]:
    """The same script, unchanged, under ``flinkish run`` (attached)."""
    result = env.run("run", str(IDIOMS / script), str(workdir), *args)
    assert result.returncode == 0, f"flinkish failed:\n{result.stdout}\n{result.stderr[-4000:]}"
    return result


def runs(env: FlinkishEnv, script: str, *args: str) -> list[Path]:
    """Run ``script`` under flinkish, and in the long form first under plain spark-submit:
    the work directories whose results each test checks."""
    workdirs = []
    if LONG_FORM:
        plain = env.root / "spark-submit"
        plain.mkdir()
        spark_submit(script, *args, workdir=plain)
        workdirs.append(plain)
    ours = env.root / "flinkish"
    ours.mkdir()
    flinkish_run(env, script, *args, workdir=ours)
    return [*workdirs, ours]


def result_of(workdir: Path) -> dict[str, Any]:
    return json.loads((workdir / "result.json").read_text())


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    source = tmp_path / "orders"
    for start in range(0, len(ORDERS), 20):
        write_events(source, ORDERS[start : start + 20])
    return source


@pytest.fixture
def text_server() -> Iterator[tuple[str, int]]:
    """A line server, as ``nc -lk`` in Spark's network word count: every connection gets the
    same lines and stays open until the client goes."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.sendall("".join(line + "\n" for line in TEXT).encode())
            while not stop.is_set() and conn.recv(1024):
                pass

    def accept() -> None:
        server.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()
    stop.set()
    server.close()


def test_rate_into_noop_and_console_without_names(flinkish_env: FlinkishEnv) -> None:
    workdirs = runs(flinkish_env, "rate_noop_console.py")
    expected = {
        "active_after_start": 2,
        "any_terminated_within_timeout": False,
        "console_terminated_within_timeout": False,
        "noop_reported_progress": True,
        "active_after_stop": 0,
        "stopped": [False, False],
    }
    for workdir in workdirs:
        assert result_of(workdir) == expected, workdir.name


def test_network_word_count_from_a_socket_into_memory(
    flinkish_env: FlinkishEnv, text_server: tuple[str, int]
) -> None:
    host, port = text_server
    words = " ".join(TEXT).split()
    workdirs = runs(flinkish_env, "socket_wordcount.py", host, str(port), str(len(words)))
    expected = {word: words.count(word) for word in set(words)}
    for workdir in workdirs:
        assert result_of(workdir) == {"counts": expected, "active": False}, workdir.name


def test_available_now_with_the_scripts_checkpoint_then_to_table_once(
    flinkish_env: FlinkishEnv, orders: Path
) -> None:
    big = sorted(row["id"] for row in ORDERS if row["amount"] > 100)
    for workdir in runs(flinkish_env, "files_available_now.py", str(orders)):
        assert sorted(row["id"] for row in read_json_dir(workdir / "big")) == big
        assert (workdir / "checkpoints" / "big" / "commits").is_dir()
        assert result_of(workdir) == {
            "big_active": False,
            "table_rows": len(ORDERS),
            "table_total": sum(row["amount"] for row in ORDERS),
        }, workdir.name


def test_a_query_stopped_after_a_sleep_then_another_through_foreach(
    flinkish_env: FlinkishEnv, orders: Path
) -> None:
    workdirs = runs(flinkish_env, "start_sleep_stop_start.py", str(orders))
    expected = {
        "active_while_sleeping": True,
        "rows_while_sleeping_positive": True,
        "values_contiguous_from_zero": True,
        "first_active_after_stop": False,
        "second_active_after_end": False,
        "active_at_end": 0,
    }
    for workdir in workdirs:
        assert result_of(workdir) == expected, workdir.name
        lines = [
            line
            for path in (workdir / "foreach").iterdir()
            for line in path.read_text().splitlines()
        ]
        assert sorted(lines) == sorted(f"{row['id']},{row['amount']}" for row in ORDERS)


def test_a_python_data_source_with_the_builders_shuffle_partitions(
    flinkish_env: FlinkishEnv,
) -> None:
    expected = {"buckets": {"0": 10, "1": 10, "2": 10, "3": 10}, "shuffle_partitions": "3"}
    for workdir in runs(flinkish_env, "python_datasource.py"):
        assert result_of(workdir) == expected, workdir.name


def test_await_any_termination_returns_when_the_bounded_query_ends(
    flinkish_env: FlinkishEnv, orders: Path
) -> None:
    workdirs = runs(flinkish_env, "any_termination.py", str(orders))
    expected = {
        "bounded_active": False,
        "endless_active": True,
        "endless_wrote_batches": True,
        "active_at_end": 0,
    }
    customers = sorted((row["id"], row["customer"].upper()) for row in ORDERS)
    for workdir in workdirs:
        assert result_of(workdir) == expected, workdir.name
        rows = read_json_dir(workdir / "customers")
        assert sorted((row["id"], row["customer"]) for row in rows) == customers


@pytest.mark.parametrize("wait", ["any", "timeout-loop", "process"])
def test_a_failing_sink_restarts_for_every_wait_shape(
    flinkish_env: FlinkishEnv, orders: Path, wait: str
) -> None:
    """Under spark-submit a failed batch ends the script; under flinkish the restart strategy
    restarts the job, whichever way the script waits, and no row is lost or repeated. A
    cancel ends the script wherever it waits (one waiting in a loop of
    ``processAllAvailable`` ends at its next wait), not after the driver's grace."""
    flinkish_env.write_conf(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 2,
            "restart-strategy.fixed-delay.delay": "1 s",
        }
    )
    workdir = flinkish_env.root / "work"
    workdir.mkdir()
    script = str(IDIOMS / "fails_once.py")
    submitted = flinkish_env.run("run", "-d", script, str(workdir), str(orders), wait, check=True)
    job = job_id_of(submitted.stdout)
    flinkish_env.wait_for_batches(job, "unnamed-1", at_least=2)
    assert (workdir / "failed-once").exists()
    flinkish_env.run("cancel", job, check=True)
    status = flinkish_env.wait_for_state(job, {"CANCELED"})
    assert status["restarts"] == 1, status
    log = flinkish_env.run("logs", job, check=True).stdout
    assert "did not return after its queries stopped" not in log, log[-2000:]
    ids = sorted(row["id"] for row in read_json_dir(workdir / "rows"))
    assert ids == sorted(row["id"] for row in ORDERS)
