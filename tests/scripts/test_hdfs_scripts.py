"""start-cluster.sh --hdfs / stop-cluster.sh: a real NameNode and DataNode on loopback; the
bad options of --hdfs and --yarn refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.hdfs import Hdfs
from tests.fixtures.sockets import listening_addresses
from tests.fixtures.spark_cluster import START, free_ports

pytestmark = pytest.mark.spark


def test_every_port_of_the_hdfs_is_on_loopback(hdfs_cluster: Hdfs) -> None:
    pid = hdfs_cluster.pid()
    assert pid is not None
    addresses = listening_addresses(pid)
    ports = {port for _, port in addresses}
    # the NameNode's RPC and web UI, the DataNode's data transfer, web UI and IPC at least
    assert {hdfs_cluster.port, hdfs_cluster.http_port} <= ports and len(addresses) >= 5, addresses
    assert {address for address, _ in addresses} == {"127.0.0.1"}, addresses
    out = (hdfs_cluster.cluster_dir / "logs" / "hdfs.out").read_text()
    assert f"fs.defaultFS: {hdfs_cluster}" in out


def test_the_file_system_is_hadoops_own(hdfs_cluster: Hdfs) -> None:
    """Hadoop's own shell, a client of its own, writes and lists through the NameNode."""
    hdfs_cluster.mkdir("scripts-test/a/b")
    assert hdfs_cluster.ls("scripts-test") == ["a/", "a/b/"]


def test_a_second_hdfs_on_the_same_directory_is_refused(hdfs_cluster: Hdfs) -> None:
    port, http_port = free_ports(2)
    result = subprocess.run(
        ["bash", str(START), "--hdfs", "--dir", str(hdfs_cluster.cluster_dir),
         "--hdfs-port", str(port), "--hdfs-http-port", str(http_port)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"ERROR: an HDFS started from {hdfs_cluster.cluster_dir} is already running (pid "
        f"{hdfs_cluster.pid()}); stop it with: scripts/stop-cluster.sh --dir "
        f"{hdfs_cluster.cluster_dir}"
    )


#: bad options of ``start-cluster.sh --hdfs`` and ``--yarn``: (mode, options, the error)
BAD_OPTIONS = [
    ("--hdfs", ["--hdfs-port", "0"], "--hdfs-port must be a fixed port"),
    ("--hdfs", ["--hdfs-port", "70000"], "'70000' is not a port (0 to 65535)"),
    ("--hdfs", ["--hdfs-heap", "lots"], "--hdfs-heap 'lots' is not like 512m or 1g"),
    ("--hdfs", ["--hdfs-port"], "option '--hdfs-port' needs a value"),
    ("--yarn", ["--yarn-port", "70000"], "'70000' is not a port (0 to 65535)"),
    ("--yarn", ["--yarn-memory", "lots"], "'lots' is not a positive number"),
    ("--yarn", ["--yarn-memory", "512"], "--yarn-memory 512 is too small for a Spark driver"),
    ("--yarn", ["--yarn-max-container", "9000"], "--yarn-max-container 9000 is larger than"),
    ("--yarn", ["--yarn-heap", "big"], "--yarn-heap 'big' is not like 512m or 1g"),
    ("--yarn", ["--yarn-vcores"], "option '--yarn-vcores' needs a value"),
]


@pytest.mark.parametrize(("mode", "args", "message"), BAD_OPTIONS)
def test_bad_hdfs_and_yarn_options_are_refused_in_one_line(
    tmp_path: Path, mode: str, args: list[str], message: str
) -> None:
    """One line on standard error, exit status 1, and nothing started (neither the HDFS that
    ``--yarn`` starts first nor the YARN)."""
    result = subprocess.run(
        ["bash", str(START), mode, "--dir", str(tmp_path / "c"), *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert not (tmp_path / "c" / "yarn.pid").exists() and not (tmp_path / "c" / "hdfs.pid").exists()
