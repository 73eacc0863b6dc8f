"""start-cluster.sh --yarn / stop-cluster.sh: a real ResourceManager and NodeManager on loopback.

Its bad options are refused with the HDFS's, in tests/scripts/test_hdfs_scripts.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.sockets import listening_addresses
from tests.fixtures.spark_cluster import START
from tests.fixtures.yarn import Yarn, site

pytestmark = pytest.mark.spark


def test_every_port_of_the_yarn_is_on_loopback(yarn_cluster: Yarn) -> None:
    pid = yarn_cluster.pid()
    assert pid is not None
    addresses = listening_addresses(pid)
    ports = {port for _, port in addresses}
    # the ResourceManager's client, scheduler, resource tracker, admin and web ports and the
    # NodeManager's, its localizer's and its web port at least
    assert {yarn_cluster.rm_port, yarn_cluster.web_port} <= ports and len(addresses) >= 8, addresses
    assert {address for address, _ in addresses} == {"127.0.0.1"}, addresses


def test_every_host_name_is_127_0_0_1(yarn_cluster: Yarn) -> None:
    """The configuration clients get, and the node the ResourceManager knows (its id is the
    NM_HOST containers see), name 127.0.0.1, never the machine or "localhost"."""
    conf = site(Path(yarn_cluster) / "yarn-site.xml")
    assert conf["yarn.resourcemanager.hostname"] == conf["yarn.nodemanager.hostname"] == "127.0.0.1"
    addresses = {key: value for key, value in conf.items() if key.endswith(".address")}
    assert len(addresses) >= 10 and all(v.startswith("127.0.0.1:") for v in addresses.values())
    nodes = yarn_cluster.rest("nodes")["nodes"]["node"]
    assert len(nodes) == 1 and nodes[0]["state"] == "RUNNING", nodes
    assert nodes[0]["nodeHostName"] == "127.0.0.1", nodes
    assert nodes[0]["id"].startswith("127.0.0.1:") and nodes[0]["nodeHTTPAddress"].startswith(
        "127.0.0.1:"
    ), nodes
    assert nodes[0]["totalResource"]["memory"] == 4096, nodes
    assert site(Path(yarn_cluster) / "core-site.xml")["fs.defaultFS"] == yarn_cluster.fs


def test_a_second_yarn_on_the_same_directory_is_refused(yarn_cluster: Yarn) -> None:
    result = subprocess.run(
        ["bash", str(START), "--yarn", "--dir", str(yarn_cluster.cluster_dir),
         "--yarn-port", "0", "--yarn-webui-port", "0"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"ERROR: a YARN started from {yarn_cluster.cluster_dir} is already running (pid "
        f"{yarn_cluster.pid()}); stop it with: scripts/stop-cluster.sh --dir "
        f"{yarn_cluster.cluster_dir}"
    )
