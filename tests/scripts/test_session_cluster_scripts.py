"""start-cluster.sh --session / stop-cluster.sh: a real Spark Connect server and real clients."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
from collections import Counter
from pathlib import Path

import generate_events as gen
import pytest

from flinkish_cli.spark import cds, local_fs
from flinkish_cli.spark.install import pyspark_home
from tests.fixtures.connect_server import (
    ConnectServer,
    connect_env,
    run_client,
    running_connect_server,
    start_connect_server,
    stop_connect_server,
)
from tests.fixtures.spark_cluster import START, STOP, on_free_ports
from tests.scripts.test_cluster_scripts import in_group

APP = Path(__file__).resolve().parent / "connect_app" / "order_counts.py"


def write_orders(directory: Path, files: int = 2) -> Counter[str]:
    """Order files in ``directory``; returns the expected count per order status."""
    expected: Counter[str] = Counter()
    for seq in range(files):
        events = gen.file_events("orders", seq, seed=11, events_per_file=150)
        gen.write_batch(directory, events, seq)
        expected.update(e["order_status"] for e in events)
    return expected


def last_batch_counts(output: Path) -> dict[str, int]:
    """The counts ``order_counts.py`` wrote for its last micro-batch."""
    batches = sorted(output.glob("batch=*"), key=lambda p: int(p.name.split("=")[1]))
    assert batches, f"no batch written under {output}"
    rows = [
        json.loads(line)
        for part in sorted(batches[-1].glob("part-*.json"))
        for line in part.read_text().splitlines()
    ]
    return {row["order_status"]: row["count"] for row in rows}


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def run_start(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cluster_dir = tmp_path / "cluster"
    return subprocess.run(
        ["bash", str(START), "--dir", str(cluster_dir), *args],
        env=env or connect_env(cluster_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.spark
def test_session_cluster_serves_a_streaming_job_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLINK_CONF_DIR", raising=False)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(
        "taskmanager.numberOfTaskSlots: 3\nparallelism.default: 2\n"
    )
    cluster_dir = tmp_path / "session"
    with running_connect_server(
        cluster_dir, slots=None, extra_args=("--conf-dir", str(conf))
    ) as server:
        lines = server.output.strip().splitlines()
        assert lines[-1] == f"sc://127.0.0.1:{server.port}"
        assert "warm-up failed" not in server.errors, server.errors  # it returned warm
        assert (cluster_dir / "connect.url").read_text().strip() == server.url
        pid = server.pid
        assert pid is not None and pid in in_group(pid)
        # The server is a Spark driver: it maps the drivers' class-data sharing archive, as
        # theirs do, when scripts/setup.sh made one (what the JVM really did: its mappings).
        archive = cds.archive_path(pyspark_home())
        if archive is not None and cds.usable(archive):
            assert str(archive) in Path(f"/proc/{pid}/maps").read_text()

        expected = write_orders(tmp_path / "orders")
        result = run_client(
            server,
            APP,
            str(tmp_path / "orders"),
            str(tmp_path / "out"),
            str(tmp_path / "checkpoint"),
        )
        assert result.returncode == 0, result.stderr[-4000:]
        # An unmodified getOrCreate() became a Connect session of this server, over
        # local[max(slots, parallelism)] of the configuration.
        assert "session=pyspark.sql.connect.session master=local[3]" in result.stdout
        assert last_batch_counts(tmp_path / "out") == dict(expected)
        # The query's checkpoint, written by the server, is readable here.
        assert (tmp_path / "checkpoint" / "commits" / "0").is_file()
        # ... through flinkish's local file system when setup.sh made its jar: the server's
        # JVM loaded its class from the jar, which it holds open (what the JVM really did).
        jar = local_fs.jar_path(pyspark_home())
        if jar is not None and local_fs.usable(jar):
            held = {os.path.realpath(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
            assert str(jar) in held, "no local file system"
        # Its foreachBatch worker was forked ready by the fork server (the warm-up's and
        # this app's), not started cold.
        forks = (cluster_dir / "logs" / "worker-fork.log").read_text()
        forked = re.findall(r"forked worker \d+ for \S+\.foreach_batch_worker", forks)
        assert len(forked) >= 2, forks

    assert in_group(pid) == [], "Connect server processes left behind (the fork server too)"
    assert not (cluster_dir / "worker-fork.sock").exists()
    assert not (cluster_dir / "connect.pid").exists()
    assert not (cluster_dir / "connect.url").exists()
    assert port_is_free(server.port)
    assert "No Spark cluster running" in stop_connect_server(cluster_dir)  # twice is fine


@pytest.mark.spark
@pytest.mark.cluster
def test_session_cluster_over_standalone(tmp_path: Path) -> None:
    cluster_dir = tmp_path / "cluster"

    def start(ports: list[int]) -> tuple[ConnectServer, list[int]]:
        standalone = (
            *("--standalone", "--master-port", str(ports[0])),
            *("--master-webui-port", str(ports[1])),
            *("--worker-port", "0", "--worker-webui-port", str(ports[2])),
            *("--cores", "2", "--memory", "1g"),
            "--no-web",  # flinkish web in front of it: tests/runtime/test_session_cluster.py
        )
        return start_connect_server(cluster_dir, port=ports[3], extra_args=standalone), ports

    server, ports = on_free_ports(4, start)
    with contextlib.ExitStack() as stack:
        stack.callback(stop_connect_server, cluster_dir)
        assert server.output.strip().splitlines()[-1] == f"sc://127.0.0.1:{ports[3]}"
        assert "Spark master running" in server.output and "Spark worker running" in server.output
        pids = {
            role: int((cluster_dir / f"{role}.pid").read_text())
            for role in ("master", "worker", "connect")
        }

        expected = write_orders(tmp_path / "orders", files=1)
        result = run_client(
            server,
            APP,
            str(tmp_path / "orders"),
            str(tmp_path / "out"),
            str(tmp_path / "checkpoint"),
        )
        assert result.returncode == 0, result.stderr[-4000:]
        assert f"master=spark://127.0.0.1:{ports[0]}" in result.stdout
        assert last_batch_counts(tmp_path / "out") == dict(expected)

    for role, pid in pids.items():
        assert in_group(pid) == [], f"{role} processes left behind"
    assert not any((cluster_dir / f"{role}.pid").exists() for role in pids)


def test_session_refuses_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_start(tmp_path, "--session", "--session-port", str(port), "--slots", "1")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"ERROR: port {port} on 127.0.0.1 is in use: choose other ports (see --help) "
        "or stop what uses it"
    ]
    assert not (tmp_path / "cluster" / "connect.pid").exists()


def test_session_without_connect_packages_says_what_to_install(tmp_path: Path) -> None:
    # An interpreter whose grpc cannot be imported, as in an environment without the extra.
    shadow = tmp_path / "shadow" / "grpc"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named grpc')\n")
    env = {**connect_env(tmp_path / "cluster"), "PYTHONPATH": str(shadow.parent)}
    result = run_start(tmp_path, "--session", "--slots", "1", env=env)
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.startswith("ERROR: Spark Connect's client packages")
    assert "'session' extra" in message and len(message.splitlines()) == 1
    assert not (tmp_path / "cluster" / "connect.pid").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--session-conf", "driver.memory=2g"), "is not like spark.key=value"),
        (("--slots", "0"), "--slots must be at least 1"),
        (("--session-port", "70000"), "--session-port 70000 is not a port"),
        (("--session-port",), "option '--session-port' needs a value"),
        (("--rest-port", "80a"), "--rest-port '80a' is not a port, a list"),
    ],
)
def test_session_options_are_checked(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    result = run_start(tmp_path, "--session", *args)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_help_describes_the_session_cluster() -> None:
    for script in (START, STOP):
        result = subprocess.run(
            ["bash", str(script), "--help"], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0
        assert "--dir" in result.stdout
    start_help = subprocess.run(
        ["bash", str(START), "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "--session-port" in start_help and "sc://127.0.0.1:PORT" in start_help
    assert "FLINKISH_WORKER_FORK=0" in start_help
    # the whole header, to its last line, and nothing of the script after it
    assert start_help.rstrip().endswith("(flinkish's 'session' extra).")
    assert "set -euo" not in start_help
