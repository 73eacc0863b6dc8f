"""The example jobs' orders pipeline, Kafka to Kafka, on the shared broker: ``orders_kafka.py``
(the DataStream form) and ``orders_kafka_sql.py`` (``spark.sql`` over a Kafka-backed stream)
write the same large orders, each once, for a ``read_committed`` consumer; while they work
off their backlog (a few records a batch), a real Prometheus scraping ``flinkish web``'s
``/metrics`` sees the source's lag in Flink's Kafka connector's names go down to 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.kafka_broker import KafkaBroker, create_topic, produce
from tests.fixtures.prometheus import running_prometheus
from tests.fixtures.web_server import running_web
from tests.kafka.test_kafka_source import CONNECTOR, wait_for_records

pytestmark = pytest.mark.spark

PENDING = "flink_taskmanager_job_task_operator_pendingRecords"
LAG_MAX = "flink_taskmanager_job_task_operator_KafkaSourceReader_KafkaConsumer_records_lag_max"
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
    args += ["--sink-topic", sink, "--max-offsets-per-trigger", "8"]
    with running_web(env) as web, running_prometheus(web.address, env.root) as prometheus:
        started = env.run("run", "-d", *CONNECTOR, str(JOBS_DIR / job), *args, check=True)
        jid = job_id_of(started.stdout)
        found = wait_for_records(kafka_broker, sink, len(want))
        selector = f'{{job_id="{jid}",operator_name=~"Source: KafkaV2.*"}}'
        # the backlog as it was worked off (after a first batch of at most 8: Spark shares
        # maxOffsetsPerTrigger among the partitions rounding down), and the lag once the job
        # caught up
        seen = prometheus.wait_for(f"max_over_time({PENDING}{selector}[10m]) > 0")
        assert 0 < float(seen[0]["value"][1]) < len(orders)
        caught_up = prometheus.wait_for(f"{PENDING}{selector} == 0")
        assert caught_up[0]["metric"]["subtask_index"] == "0"
        most = prometheus.wait_for(f"max_over_time({LAG_MAX}{selector}[10m])")
        assert 0 < float(most[0]["value"][1]) <= float(seen[0]["value"][1])
    env.run("cancel", jid, check=True)

    written = {key: json.loads(value) for *_, key, value in found}
    assert len(found) == len(want) == len(written), "each large order once"
    assert {k: {f: v[f] for f in want[k]} for k, v in written.items()} == want
    assert all(v["order_id"] == k for k, v in written.items())
