"""A driver whose executors can only be on this machine binds and advertises 127.0.0.1, and
an address the user gave wins (flinkish_cli/spark/loopback.py). Running drivers are checked
from /proc/net by tests/runtime/test_driver_failover.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from flinkish_cli.spark import loopback
from flinkish_cli.submission.spark_submit import Deployment, build_command


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local[4,3]",
        "spark://127.0.0.1:7077",
        "spark://localhost:7077,127.0.0.1:7078",
    ],
)
def test_drivers_of_masters_on_this_machine_bind_loopback(master: str) -> None:
    properties: dict[str, str] = {}
    env: dict[str, str] = {}
    loopback.apply(master, properties, env, environ={})
    assert properties == {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    assert env == {"SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.mark.parametrize(
    "master",
    [
        "spark://10.1.2.3:7077",
        "spark://127.0.0.1:7077,master-2:7077",
        "yarn",
        "k8s://https://k8s:6443",
        "sc://127.0.0.1:15002",
    ],
)
def test_drivers_of_remote_executors_keep_sparks_choice(
    master: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    properties: dict[str, str] = {}
    env: dict[str, str] = {}
    loopback.apply(master, properties, env, environ={})
    assert properties == {} and env == {}


def test_the_users_own_addresses_win() -> None:
    properties = {"spark.driver.host": "10.0.0.5"}
    env: dict[str, str] = {}
    loopback.apply("local[2]", properties, env, environ={"SPARK_LOCAL_IP": "10.0.0.5"})
    assert properties == {"spark.driver.host": "10.0.0.5", "spark.driver.bindAddress": "127.0.0.1"}
    assert env == {}


def test_a_local_jobs_submit_command_carries_loopback(tmp_path: Path) -> None:
    command = build_command(
        Deployment(target="local", master="local[2]", deploy_mode="client"),
        spark_conf={},
        name="job",
        py_files=[],
        archives=[],
        properties_file=str(tmp_path / "spark.properties"),
        run_dir=str(tmp_path),
    )
    assert command.properties["spark.driver.bindAddress"] == "127.0.0.1"
    assert command.properties["spark.driver.host"] == "127.0.0.1"


def _yarn_site(directory: Path, address: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.address</name>"
        f"<value>{address}</value></property></configuration>"
    )
    return str(directory)


@pytest.mark.parametrize(("address", "loopback_yarn"), [
    ("127.0.0.1:8032", True), ("localhost:8032", True), ("rm.example.com:8032", False),
])  # fmt: skip
def test_a_yarn_on_this_machine_keeps_its_containers_on_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str, loopback_yarn: bool
) -> None:
    """The same decision for YARN: the ResourceManager of the client's yarn-site.xml on
    loopback puts the driver's address and the containers' SPARK_LOCAL_IP on 127.0.0.1."""
    monkeypatch.setenv("HADOOP_CONF_DIR", _yarn_site(tmp_path / "conf", address))
    properties: dict[str, str] = {}
    env: dict[str, str] = {}
    loopback.apply("yarn", properties, env, environ={})
    if loopback_yarn:
        assert properties == {
            "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1",
            "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
        }
        assert env == {"SPARK_LOCAL_IP": "127.0.0.1"}
    else:
        assert properties == {} and env == {}
