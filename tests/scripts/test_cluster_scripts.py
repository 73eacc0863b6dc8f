"""start-cluster.sh / stop-cluster.sh: a real standalone master and worker, a real job."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import zipfile
from pathlib import Path

import generate_events as gen
import pyspark
import pytest

from tests.fixtures.flinkish_env import SHORT_JVM
from tests.fixtures.spark_cluster import (
    ROOT,
    START,
    STOP,
    cluster_env,
    running_cluster,
    stop_cluster,
)

APP = Path(__file__).resolve().parent / "cluster_app" / "orders_batch.py"


def processes_with(*needles: str) -> list[str]:
    """Command lines of running processes that contain any of ``needles``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(needle in cmdline for needle in needles):
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def in_group(pgid: int) -> list[int]:
    """Pids of running processes in process group ``pgid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                pids.append(int(entry.name))
    return pids


def zip_jobs(dest: Path) -> Path:
    archive_path = dest / "jobs.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        for path in sorted((ROOT / "jobs").rglob("*.py")):
            archive.write(path, path.relative_to(ROOT / "jobs").as_posix())
    return archive_path


@pytest.mark.cluster
def test_start_submit_stop(tmp_path: Path) -> None:
    cluster_dir = tmp_path / "cluster"
    with running_cluster(cluster_dir, cores=2, memory="1g") as cluster:
        pids = {role: cluster.pid(role) for role in ("master", "worker")}
        assert all(pids.values()), pids
        state = cluster.state()
        assert state["status"] == "ALIVE"
        workers = [w for w in state["workers"] if w["state"] == "ALIVE"]
        assert len(workers) == 1 and workers[0]["cores"] == 2 and workers[0]["memory"] == 1024
        assert workers[0]["host"] == "127.0.0.1"

        events = gen.file_events("orders", 0, seed=21, events_per_file=200)
        gen.write_batch(tmp_path / "orders", events)
        spark_home = Path(pyspark.__file__).parent
        result = subprocess.run(
            [
                str(spark_home / "bin" / "spark-submit"),
                *("--master", cluster.master_url),
                *("--conf", "spark.ui.enabled=false"),
                *("--conf", "spark.sql.shuffle.partitions=2"),
                *("--executor-memory", "512m", "--total-executor-cores", "1"),
                *("--conf", f"spark.executor.defaultJavaOptions={SHORT_JVM}"),
                *("--py-files", str(zip_jobs(tmp_path))),
                str(APP),
                str(tmp_path / "orders"),
                str(tmp_path / "out"),
            ],
            cwd=tmp_path,
            env={**cluster.env(), "SPARK_HOME": str(spark_home)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-4000:]

        rows = [
            json.loads(line)
            for part in sorted((tmp_path / "out").glob("part-*.json"))
            for line in part.read_text().splitlines()
        ]
        expected = sorted(
            (e["order_id"], e["order_status"].upper(), round(e["total_price"] * 1.2, 2))
            for e in events
            if e["total_price"] > 100
        )
        got = sorted((r["order_id"], r["order_status"], r["price_with_tax"]) for r in rows)
        assert got == expected and len(got) > 50

        apps = cluster.state()["completedapps"]
        assert [a["name"] for a in apps] == ["flinkish-cluster-test"]
        assert apps[0]["state"] == "FINISHED"

    assert not (cluster_dir / "master.pid").exists() and not (cluster_dir / "worker.pid").exists()
    for role, pid in pids.items():
        assert pid is not None and in_group(pid) == [], f"{role} processes left behind"
    ports = (cluster.master_port, cluster.worker_port)
    leftovers = processes_with(
        f"--port {ports[0]}", f"127.0.0.1:{ports[0]}", f"Worker@127.0.0.1:{ports[1]}"
    )
    assert leftovers == [], leftovers
    assert "No Spark cluster running" in stop_cluster(cluster_dir)  # idempotent


def test_start_without_java_says_so(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(START)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "Java not found: install Java 17" in result.stderr


def test_stop_without_cluster_is_a_no_op(tmp_path: Path) -> None:
    env = {**os.environ, "FLINKISH_CLUSTER_DIR": str(tmp_path / "none")}
    result = subprocess.run(
        ["bash", str(STOP)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "No Spark cluster running" in result.stdout


def test_start_refuses_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**cluster_env(tmp_path / "cluster"), "FLINKISH_MASTER_PORT": str(port)}
        result = subprocess.run(
            ["bash", str(START)], env=env, capture_output=True, text=True, timeout=60
        )
    assert result.returncode != 0
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
    assert not (tmp_path / "cluster" / "master.pid").exists()
