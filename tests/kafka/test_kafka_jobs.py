"""The example jobs' orders pipeline, Kafka to Kafka, on the shared broker: ``orders_kafka.py``
(the DataStream form) and ``orders_kafka_sql.py`` (``spark.sql`` over a Kafka-backed stream)
write the same large orders, each once, for a ``read_committed`` consumer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.kafka_broker import KafkaBroker, create_topic, produce
from tests.kafka.test_kafka_source import CONNECTOR, wait_for_records

pytestmark = pytest.mark.spark

JOBS_DIR = Path(__file__).resolve().parents[2] / "jobs"
STATUSES = ("created", " paid ", "Shipped", "cancelled")


def order(i: int) -> dict:
    return {
        "order_id": f"o-{i}",
        "customer_id": f"c-{i % 5}",
        "order_status": STATUSES[i % len(STATUSES)],
        "total_price": float(40 + (i * 37) % 150),
        "order_time": f"2026-01-01T00:00:{i % 60:02d}.000Z",
    }


def expected(orders: list[dict]) -> dict[str, dict]:
    return {
        o["order_id"]: {
            "order_status": o["order_status"].strip().upper(),
            "total_price": o["total_price"],
            "price_with_tax": round(o["total_price"] * 1.2, 2),
        }
        for o in orders
        if o["total_price"] > 100
    }


@pytest.mark.parametrize("job", ["orders_kafka.py", "orders_kafka_sql.py"])
def test_the_orders_pipeline_from_kafka_to_kafka(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker, job: str
) -> None:
    env = flinkish_env
    source, sink = create_topic(kafka_broker, partitions=2), create_topic(kafka_broker)
    orders = [order(i) for i in range(40)]
    produce(kafka_broker, source, [(o["order_id"], json.dumps(o)) for o in orders])
    want = expected(orders)
    assert 0 < len(want) < len(orders)
    args = ["--bootstrap-servers", str(kafka_broker), "--source-topic", source]
    args += ["--sink-topic", sink]
    started = env.run("run", "-d", *CONNECTOR, str(JOBS_DIR / job), *args, check=True)
    found = wait_for_records(kafka_broker, sink, len(want))
    env.run("cancel", job_id_of(started.stdout), check=True)

    written = {key: json.loads(value) for *_, key, value in found}
    assert len(found) == len(want) == len(written), "each large order once"
    assert {k: {f: v[f] for f in want[k]} for k, v in written.items()} == want
    assert all(v["order_id"] == k for k, v in written.items())
