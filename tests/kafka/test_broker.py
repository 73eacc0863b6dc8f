"""scripts/start-cluster.sh --kafka: a real single-node Kafka broker (KRaft) from Maven's
jars, on 127.0.0.1 only, stopped by scripts/stop-cluster.sh."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.kafka_broker import (
    KafkaBroker,
    consume_all,
    create_topic,
    produce,
    start_kafka,
)
from tests.fixtures.sockets import LOOPBACK, listening_addresses
from tests.fixtures.spark_cluster import START, cluster_env, stop_cluster

pytestmark = pytest.mark.spark  # starts JVMs


def test_the_broker_listens_on_127_0_0_1_only(kafka_broker: KafkaBroker) -> None:
    assert kafka_broker.pid is not None
    sockets = listening_addresses(kafka_broker.pid)
    assert {port for _, port in sockets} >= {kafka_broker.port, kafka_broker.controller_port}
    assert sockets and all(address == LOOPBACK for address, _ in sockets)
    assert kafka_broker.output.strip().splitlines()[-1] == f"bootstrap.servers: {kafka_broker}"


def test_records_written_to_a_topic_are_read_back(kafka_broker: KafkaBroker) -> None:
    topic = create_topic(kafka_broker, partitions=3)
    records = [(f"k{i}", f"v{i}") for i in range(30)]
    produce(kafka_broker, topic, records)
    found = consume_all(kafka_broker, topic, expected=30)
    assert sorted((key, value) for _, _, key, value in found) == sorted(records)
    assert {partition for partition, _, _, _ in found} <= {0, 1, 2}


def test_a_second_broker_is_refused_while_the_first_runs_and_data_survive_a_restart(
    tmp_path: Path,
) -> None:
    broker = start_kafka(tmp_path / "own")
    try:
        topic = create_topic(broker)
        produce(broker, topic, [("a", "1"), ("b", "2")])
        again = subprocess.run(
            ["bash", str(START), "--kafka", "--dir", str(broker.cluster_dir)],
            env=cluster_env(broker.cluster_dir),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 1
        assert again.stderr.strip().startswith("ERROR: a Kafka broker started from")
        assert "stop it with: scripts/stop-cluster.sh" in again.stderr
        pid = broker.pid
        stopped = stop_cluster(broker.cluster_dir)
        assert f"Stopped the Kafka broker (pid {pid})" in stopped
        with socket.socket() as probe:  # its port is free again
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", broker.port))
        restarted = start_kafka(broker.cluster_dir)
        assert sorted(v for *_, v in consume_all(restarted, topic, expected=2)) == ["1", "2"]
    finally:
        stop_cluster(broker.cluster_dir)
    assert not (broker.cluster_dir / "kafka.pid").exists()


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            ["bash", str(START), "--kafka", "--dir", str(tmp_path), "--kafka-port", str(port)],
            env=cluster_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"ERROR: port {port} on 127.0.0.1 is in use: choose other ports (--kafka-port, "
        "--kafka-controller-port) or stop what uses it"
    )
    assert not (tmp_path / "kafka.pid").exists()
