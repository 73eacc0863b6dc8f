"""The autoscaler on a Kafka job, on the shared broker: the orders pipeline
(``jobs/orders_kafka.py``) reads a 3-partition topic that keeps receiving orders, under an
autoscaler that wants more parallelism as soon as input flows and may go up to 8. It scales
the job up in place within the topic's partitions (Flink aligns a Kafka source's parallelism
to them: a task more would read nothing), the decision records the source's real lag as its
backlog (Flink's ``pendingRecords``), and every large order reaches the sink topic."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.kafka_broker import KafkaBroker, create_topic, produce
from tests.kafka.test_kafka_jobs import JOBS_DIR, expected, order
from tests.kafka.test_kafka_source import CONNECTOR, wait_for_records

pytestmark = pytest.mark.spark

PARTITIONS = 3
#: Wants more than the job has as soon as any input flows (a target utilisation of 1 %),
#: decides every second over a 20 s window (enough busy time for a rate), from 1 up to 8
#: (more than the topic's partitions).
EAGER = {
    "parallelism.default": "1",
    "state.backend.type": "rocksdb",
    "job.autoscaler.enabled": "true",
    "job.autoscaler.interval": "1 s",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "3 s",
    "job.autoscaler.utilization.target": "0.01",
    "job.autoscaler.utilization.min": "0.005",
    "job.autoscaler.utilization.max": "0.02",
    "job.autoscaler.vertex.min-parallelism": "1",
    "job.autoscaler.vertex.max-parallelism": "8",
    "job.autoscaler.scale-down.interval": "10 min",
}


def _rescales(env: FlinkishEnv, job_id: str) -> list[dict[str, Any]]:
    """The job's rescale history as the registry keeps it (read in this process)."""
    from flinkish_cli.config import load_configuration
    from flinkish_cli.registry.rescales import RescaleHistory
    from flinkish_cli.registry.store import registry_for

    registry = registry_for(load_configuration(conf_dir=str(env.conf_dir)))
    return [record.to_dict() for record in RescaleHistory.read(registry, job_id).rescales]


def _backlogs(record: dict[str, Any]) -> list[float | None]:
    """The backlogs the decision weighed, at the window's newest and oldest batch, of each
    query (None where its sources report none, as a rate source)."""
    queries = record["figures"]["queries"].values()
    return [q[key] for q in queries for key in ("backlog", "backlog_start")]


def test_the_autoscaler_scales_a_kafka_job_on_its_lag_within_the_topics_partitions(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    env = flinkish_env
    env.write_conf(EAGER)
    source = create_topic(kafka_broker, partitions=PARTITIONS)
    sink = create_topic(kafka_broker)
    orders = [order(i) for i in range(60)]
    produce(kafka_broker, source, [(o["order_id"], json.dumps(o)) for o in orders])
    args = ["--bootstrap-servers", str(kafka_broker), "--source-topic", source]
    args += ["--sink-topic", sink, "--max-offsets-per-trigger", "15"]
    started = env.run("run", "-d", *CONNECTOR, str(JOBS_DIR / "orders_kafka.py"), *args)
    assert started.returncode == 0, started.stderr
    job_id = job_id_of(started.stdout)
    stop = threading.Event()
    produced: list[dict[str, Any]] = []

    def feed() -> None:  # input keeps flowing, so that the window always holds rows
        while not stop.wait(0.5):
            more = [order(len(orders) + len(produced) + i) for i in range(10)]
            produce(kafka_broker, source, [(o["order_id"], json.dumps(o)) for o in more])
            produced.extend(more)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    deadline = time.monotonic() + 300
    try:
        while True:
            done = [r for r in _rescales(env, job_id) if r.get("outcome") == "COMPLETED"]
            job = env.polled(job_id)
            if done and job["state"] == "RUNNING":
                break
            assert time.monotonic() < deadline, f"no completed rescale: {_rescales(env, job_id)}"
            time.sleep(0.5)
    finally:
        stop.set()
        feeder.join()
    up = done[0]
    assert up["direction"] == "up" and up["from"] == 1
    assert 1 < up["to"] <= PARTITIONS, "scaled within the topic's partitions"
    assert any(backlog and backlog > 0 for backlog in _backlogs(up)), up["figures"]
    status = env.checkpoints / job_id / "_flinkish" / "status.json"
    assert json.loads(status.read_text())["parallelism"] == up["to"]
    want = expected(orders + produced)
    found = wait_for_records(kafka_broker, sink, len(want))
    env.run("cancel", job_id, check=True)
    written = {key for *_, key, _ in found}
    assert written >= set(want), "every large order reached the sink"
