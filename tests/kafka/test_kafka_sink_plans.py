"""The exactly-once Kafka sink's batch plans on a real broker: a replayed batch is written in
as many partitions (transactions, markers) as its first run, whatever its partitions are now
(a script's shuffle follows ``run -s ... -p N``); a batch with fewer partitions than the one
before it fences the writers it no longer has, so a transaction one of them left open does
not hold back ``read_committed`` readers until Kafka's transaction timeout."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from flinkish_cli.runtime.connectors.kafka_sink import (
    ensure_marker_topic,
    planned_partitions,
    spec_for,
    transactional_id,
)
from tests.fixtures.kafka_broker import KafkaBroker, consume_all, create_topic, produce


def test_a_replay_keeps_its_first_runs_partitions_and_fewer_partitions_fence_the_rest(
    kafka_broker: KafkaBroker,
) -> None:
    prefix = f"plan-{uuid.uuid4().hex[:8]}"
    spec = spec_for({"kafka.bootstrap.servers": str(kafka_broker)}, prefix, "q", attempt=0)
    ensure_marker_topic(spec)
    assert planned_partitions(spec, "0:aaaa", 3) == 3  # batch 0's first run: 3 partitions
    assert planned_partitions(spec, "0:aaaa", 2) == 3  # its replay at another parallelism
    assert planned_partitions(spec, "0:bbbb", 2) == 2  # batch 0 planned anew: its own

    # writer 2 of batch 1 (3 partitions) is killed with its transaction open
    assert planned_partitions(spec, "1:cccc", 3) == 3
    topic = create_topic(kafka_broker)
    lingering = Producer(
        {
            "bootstrap.servers": str(kafka_broker),
            "transactional.id": transactional_id(prefix, "q", 2),
            "transaction.timeout.ms": 900000,  # the broker's longest: it would hold for 15 min
        }
    )
    lingering.init_transactions(30)
    lingering.begin_transaction()
    lingering.produce(topic, value=b"open")
    lingering.flush(30)
    # batch 2 has 2 partitions: writer 2 is fenced, its transaction aborted
    assert planned_partitions(spec, "2:dddd", 2) == 2
    produce(kafka_broker, topic, [("k", "after")])
    seen = consume_all(kafka_broker, topic, 1, timeout=60)
    assert [value for *_, value in seen] == ["after"]
    assert planned_partitions(spec, "2:dddd", 3) == 2  # and its replay keeps 2
