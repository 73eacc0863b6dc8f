"""Section 11's clients of its Kafka broker (confluent-kafka): its topics, a producer tuned
for backlogs, and a topic's record count; shared by :mod:`.kafka` and :mod:`.kafka_flink`."""

from __future__ import annotations

from typing import Any

#: The partitions of the section's topics (the backlog is produced round-robin over them).
PARTITIONS = 4


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=60)
    futures[name].result(timeout=90)
    return name


def producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 500_000,
        }
    )


def sink_records(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` (the sum of its partitions' end offsets)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        total = 0
        for partition in range(PARTITIONS):
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=30
            )
            total += high
        return total
    finally:
        consumer.close()
