"""The exactly-once Kafka sink's own decisions, without Spark or a broker: the producer's
settings from the sink's options, the transactional ids, the batch markers, the rows of
Spark's Kafka sink's shape (the sink itself is proven on a real broker in tests/kafka)."""

from __future__ import annotations

import pytest

from flinkish_cli.runtime import faults
from flinkish_cli.runtime.connectors.kafka_sink import (
    _record,
    batch_marker,
    marker_topic,
    spec_for,
    transactional_id,
)
from flinkish_cli.savepoints.layout import with_shuffle_partitions


def test_the_producer_gets_the_sinks_kafka_options_and_spark_keeps_its_own() -> None:
    options = {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "kafka.acks": "all",
        "topic": "out",
        "checkpointLocation": "/tmp/c",
    }
    spec = spec_for(options, "orders", "enrich", attempt=2)
    assert spec.producer == {"bootstrap.servers": "127.0.0.1:9092", "acks": "all"}
    assert spec.topic == "out" and spec.attempt == 2 and spec.markers == "orders-markers"
    assert transactional_id("orders", "enrich", 3) == "orders-enrich-3"
    assert marker_topic("p") == "p-markers"


def test_a_batch_marker_names_the_batch_and_its_offsets() -> None:
    entry = 'v1\n{"batchTimestampMs":1}\n{"orders":{"0":28}}'
    assert batch_marker(4, entry) == batch_marker(4, entry)  # a replay finds it
    assert batch_marker(4, entry).startswith("4:")
    assert batch_marker(4, entry.replace("28", "30")) != batch_marker(4, entry)  # planned anew
    # a resume with -p rewrites the entry's SQL settings: the replay finds its marker
    settings = 'v1\n{"batchTimestampMs":1,"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"o":3}'
    rescaled = with_shuffle_partitions(settings, 5)
    assert rescaled != settings and batch_marker(4, rescaled) == batch_marker(4, settings)
    assert batch_marker(4, settings.replace('Ms":1', 'Ms":2')) != batch_marker(4, settings)


def test_rows_of_sparks_kafka_sink_shape() -> None:
    row = {"key": "k", "value": bytearray(b"v"), "partition": 1}
    assert _record(row, "out") == (b"k", b"v", "out", 1, None)
    headers = [{"key": "h", "value": b"x"}]
    assert _record({"value": "v", "topic": "t", "headers": headers}, None)[2:] == (
        "t",
        None,
        [("h", b"x")],
    )
    with pytest.raises(ValueError, match="needs a topic"):
        _record({"value": "v"}, None)


def test_a_fault_is_wanted_in_its_driver_attempt_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        faults.VARIABLE, "kafka-sink-committed:python,kafka-sink-first-record:worker"
    )
    assert faults.wanted("kafka-sink-committed", 0) == "python"
    assert faults.wanted("kafka-sink-first-record", 0) is None
    assert faults.wanted("kafka-sink-first-record", 1) == "worker"
    assert faults.wanted("kafka-sink-first-record", 2) is None
