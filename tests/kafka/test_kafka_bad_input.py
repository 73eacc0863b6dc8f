"""Bad input to a Kafka job, on the real broker: a missing connector, a broker that does not
answer, a topic that does not exist, and a savepoint whose offsets are no longer in its
topics (records deleted by retention, the topic deleted and created again). Each is one line
naming what is wrong and what to do, a non-zero exit, a FAILED job with the reason in
``list`` and its exception history, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.cycle import savepoint_path
from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of, read_json_dir
from tests.fixtures.kafka_broker import (
    KafkaBroker,
    create_topic,
    delete_records_before,
    produce,
    recreate_topic,
)
from tests.kafka.test_kafka_source import CONNECTOR, orders, wait_for_rows

pytestmark = pytest.mark.spark

JOB = str(JOBS / "kafka_orders.py")


def refused(env: FlinkishEnv, *args: str) -> tuple[str, dict]:
    """``run -d ARGS`` that fails at start-up: its message and the FAILED job as listed."""
    result = env.run("run", "-d", *args, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    message = result.stderr.strip()
    job = next(j for j in env.list_jobs() if j["state"] == "FAILED" and j["jid"] in message)
    return message, job


def assert_reason(message: str, job: dict, expected: str) -> None:
    assert expected in message.splitlines()[0], message
    assert expected in job["failure-cause"], job["failure-cause"]
    assert any(expected in e["cause"] for e in job["exceptions"]), job["exceptions"]


def test_missing_connector_unreachable_broker_and_missing_topic_fail_in_one_line(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    env = flinkish_env
    output = env.root / "out"

    message, job = refused(env, JOB, str(kafka_broker), create_topic(kafka_broker), str(output))
    assert_reason(message, job, "Spark's Kafka connector is not on the job's class path")
    assert "-D flinkish.connectors=kafka" in message.splitlines()[0]

    message, job = refused(env, *CONNECTOR, JOB, "127.0.0.1:9", "orders", str(output))
    assert_reason(message, job, "no Kafka broker answered at 127.0.0.1:9")

    missing = "no-such-topic"
    message, job = refused(env, *CONNECTOR, JOB, str(kafka_broker), missing, str(output))
    assert_reason(message, job, f"Kafka topic '{missing}' does not exist on {kafka_broker}")
    assert not output.exists(), "nothing written"


def test_a_savepoint_whose_offsets_are_gone_from_its_topics_is_refused(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """One savepoint of a job reading two topics: the second deleted and created again
    (its end before the savepoint's offset), then the first's records deleted by retention
    past the savepoint's offset; each resume fails naming the topic, and writes nothing."""
    env = flinkish_env
    first, second = create_topic(kafka_broker), create_topic(kafka_broker)
    output = env.root / "out"
    args = (*CONNECTOR, JOB, str(kafka_broker), f"{first},{second}", str(output))
    produce(kafka_broker, first, orders(0, 10))
    produce(kafka_broker, second, orders(10, 10))
    job = job_id_of(env.run("run", "-d", *args, check=True).stdout)
    wait_for_rows(output, 20)
    stops = env.root / "stops"
    stopped = savepoint_path(env.run("stop", "--savepointPath", str(stops), job, check=True).stdout)
    written = sorted(p.name for p in Path(output).iterdir())

    recreate_topic(kafka_broker, second)
    produce(kafka_broker, second, orders(20, 3))
    message, failed = refused(env, "-s", stopped, *args)
    assert_reason(
        message,
        failed,
        f"Kafka topic '{second}' partition 0 ends at offset 3, before offset 10 the savepoint "
        "holds: the topic was deleted and created again.",
    )

    produce(kafka_broker, first, orders(30, 10))  # offsets 10..19
    delete_records_before(kafka_broker, first, 0, 15)
    message, failed = refused(env, "-s", stopped, *args)
    assert_reason(
        message,
        failed,
        f"Kafka topic '{first}' partition 0 starts at offset 15, after offset 10 the "
        "savepoint holds: the topic's retention deleted records the job had not read.",
    )
    assert "failOnDataLoss" in message
    assert sorted(p.name for p in Path(output).iterdir()) == written, "nothing written"
    assert len(read_json_dir(output)) == 20
