"""Spark's Kafka source under flinkish's lifecycle, on a real broker with Spark's real Kafka
connector (``flinkish.connectors: kafka``): a script in the idiom of Spark's Kafka
integration guide goes through ``run -d``, ``savepoint``, ``stop --savepointPath`` and
``run -s -p 4``, and its file sink holds every record exactly once; the savepoints show
each source's Kafka offsets per topic-partition."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flinkish_cli.spark.connectors import installed
from flinkish_cli.spark.install import pyspark_home
from tests.fixtures.cycle import savepoint_path
from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of, read_json_dir
from tests.fixtures.kafka_broker import (
    KafkaBroker,
    add_partitions,
    consume_all,
    create_topic,
    produce,
)
from tests.fixtures.web_server import running_web

pytestmark = pytest.mark.spark

JOB = str(JOBS / "kafka_orders.py")
KAFKA_POM = Path(__file__).resolve().parents[2] / "scripts" / "maven" / "kafka" / "pom.xml"
CONNECTOR = ("-D", "flinkish.connectors=kafka")


def orders(start: int, count: int) -> list[tuple[str, str]]:
    return [(f"k{i % 7}", f"order-{i}") for i in range(start, start + count)]


def wait_for_rows(output: Path, expected: int, timeout: float = 240) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        rows = read_json_dir(output) if output.exists() else []
        if len(rows) >= expected:
            return rows
        assert time.monotonic() < deadline, f"{len(rows)} of {expected} records in the sink"
        time.sleep(0.5)


def test_kafka_source_through_savepoint_stop_and_rescaled_resume_exactly_once(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    env = flinkish_env
    topic = create_topic(kafka_broker, partitions=2)
    output = env.root / "out"
    args = (JOB, str(kafka_broker), topic, str(output))
    produce(kafka_broker, topic, orders(0, 40))

    job = job_id_of(env.run("run", "-d", *CONNECTOR, *args, check=True).stdout)
    wait_for_rows(output, 40)
    first = savepoint_path(env.run("savepoint", job, check=True).stdout)
    assert env.job(job)["state"] == "RUNNING"

    produce(kafka_broker, topic, orders(40, 20))
    wait_for_rows(output, 60)
    stops = env.root / "stops"
    stopped = env.run("stop", "--savepointPath", str(stops), job, check=True).stdout
    second = savepoint_path(stopped)
    assert second.startswith(f"{stops}/")
    assert env.job(job)["state"] == "FINISHED"

    # The stop savepoint holds the source's end offsets per topic-partition: all 60 records.
    info = json.loads(env.run("savepoint", "info", second, "--output", "json", check=True).stdout)
    (query,) = info["queries"]
    (offsets,) = query["source-offsets"]
    assert set(offsets) == {topic} and set(offsets[topic]) == {"0", "1"}
    assert sum(offsets[topic].values()) == 60
    text = env.run("savepoint", "info", second, check=True).stdout
    for partition, offset in offsets[topic].items():
        assert f"{topic}-{partition}={offset}" in text
    listed = json.loads(env.run("state", "ls", second, "--output", "json", check=True).stdout)
    assert listed["queries"][0]["source-offsets"] == [offsets]

    # While the job is stopped the topic gains a partition: the resumed job reads it from its
    # earliest offset (Flink's behaviour) and says so in its log.
    produce(kafka_broker, topic, orders(60, 20))
    add_partitions(kafka_broker, topic, 3)
    produce(kafka_broker, topic, orders(80, 10), partition=2)
    resumed = job_id_of(
        env.run("run", "-d", "-s", second, "-p", "4", *CONNECTOR, *args, check=True).stdout
    )
    rows = wait_for_rows(output, 90)

    # The REST API: the savepoint the job was restored from with its offsets, and the newest
    # batch's offsets, the new partition's among them.
    with running_web(env) as web:
        latest = web.get(f"/jobs/{resumed}/checkpoints").json()["latest"]
        assert latest["restored"]["source_offsets"] == {query["name"]: [offsets]}
        deadline = time.monotonic() + 120
        while True:
            completed = web.get(f"/jobs/{resumed}/checkpoints").json()["latest"]["completed"]
            ends = (completed or {}).get("source_offsets") or [{}]
            if ends[0].get(topic, {}).get("2") == 10:
                break
            assert time.monotonic() < deadline, f"the newest batch's offsets: {completed}"
            time.sleep(1)
    log = env.run("logs", resumed, check=True).stdout
    assert f"Kafka topic '{topic}' partitions 2 are new since the query's checkpoint" in log
    env.run("cancel", resumed, check=True)

    seen = collections.Counter((r["partition"], r["offset"]) for r in read_json_dir(output))
    assert len(seen) == 90 and set(seen.values()) == {1}, "every record exactly once"
    assert {o for p, o in seen if p == 2} == set(range(10)), "the new partition from offset 0"
    assert sorted(r["value"] for r in rows) == sorted(v.upper() for _, v in orders(0, 90))
    assert Path(first, "_metadata").is_file()


def test_a_spark_connector_of_another_spark_is_refused_before_anything_starts(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    refused = env.run(
        "run",
        "-d",
        "-D",
        "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1",
        JOB,
        "127.0.0.1:9",
        "orders",
        str(env.root / "out"),
        check=False,
    )
    assert refused.returncode == 1
    first = refused.stderr.strip().splitlines()[0]
    assert first.endswith(
        "spark.jars.packages: org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1 is Spark "
        f"4.1.1's connector, and the installed Spark is {installed(pyspark_home()).spark_version}."
    ), refused.stderr
    assert "Traceback" not in refused.stderr
    assert not env.checkpoints.exists() or not any(env.checkpoints.iterdir())


def test_kafka_sink_through_stop_and_resume_writes_every_record_at_least_once(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """Spark's Kafka sink (``writeStream.format("kafka")``) is at-least-once: after a stop
    with a savepoint and a resume, the sink topic holds every input record's output; a
    record written twice would be a batch Spark wrote again (the docs say when)."""
    env = flinkish_env
    source, sink = create_topic(kafka_broker, partitions=2), create_topic(kafka_broker)
    args = (str(JOBS / "kafka_to_kafka.py"), str(kafka_broker), source, sink)
    produce(kafka_broker, source, orders(0, 30))
    job = job_id_of(env.run("run", "-d", *CONNECTOR, *args, check=True).stdout)
    wait_for_records(kafka_broker, sink, 30)
    stopped = savepoint_path(
        env.run("stop", "--savepointPath", str(env.root / "stops"), job, check=True).stdout
    )
    produce(kafka_broker, source, orders(30, 20))  # while the job is stopped
    resumed = job_id_of(env.run("run", "-d", "-s", stopped, *CONNECTOR, *args, check=True).stdout)
    found = wait_for_records(kafka_broker, sink, 50)
    env.run("cancel", resumed, check=True)
    values = collections.Counter(value for *_, value in found)
    assert set(values) == {v.upper() for _, v in orders(0, 50)}, "every record at least once"


def wait_for_records(broker: str, topic: str, expected: int, timeout: float = 240) -> list:
    deadline = time.monotonic() + timeout
    while True:
        found = consume_all(broker, topic, expected, timeout=10)
        if len(found) >= expected:
            return found
        assert time.monotonic() < deadline, f"{len(found)} of {expected} records in {topic}"


def test_info_plans_a_kafka_script_with_its_connector(flinkish_env: FlinkishEnv) -> None:
    """``flinkish info`` plans the script in a local session with the job's connectors: the
    Kafka source is found (no broker needed to plan)."""
    args = (JOB, "127.0.0.1:9", "orders", str(flinkish_env.root / "out"))
    shown = flinkish_env.run("info", *CONNECTOR, *args, check=True).stdout
    assert "StreamingRelation kafka" in shown
    missing = flinkish_env.run("info", *args, check=False)
    assert missing.returncode == 1 and "KAFKA_DATA_SOURCE_NOT_ENABLED" in missing.stderr


def described_group(group: str, broker: str) -> dict[tuple[str, int], tuple[int, int]]:
    """``kafka-consumer-groups --describe --group GROUP``, Kafka's own tool (from the broker's
    jars): ``(topic, partition) -> (current offset, lag)``."""
    classpath = subprocess.run(
        [sys.executable, "-m", "flinkish_cli.spark.maven", "--pom", str(KAFKA_POM)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tool = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    options = ["--bootstrap-server", broker, "--describe", "--group", group]
    described = subprocess.run(
        ["java", "-cp", classpath, tool, *options],
        capture_output=True,
        text=True,
        timeout=180,
    )
    found = {}
    for line in described.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == group and fields[2].isdigit():
            found[(fields[1], int(fields[2]))] = (int(fields[3]), int(fields[5]))
    return found


def test_each_committed_batch_commits_its_offsets_to_the_consumer_group(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """Flink's commit.offsets.on.checkpoint: after the job's batches, Kafka's own
    kafka-consumer-groups shows the group named after the job at the end offsets of the
    source's partitions, lag 0."""
    env = flinkish_env
    topic = create_topic(kafka_broker, partitions=2)
    output = env.root / "out"
    produce(kafka_broker, topic, orders(0, 30))
    args = ("-D", "pipeline.name=orders-offsets", *CONNECTOR, JOB, str(kafka_broker), topic)
    job = job_id_of(env.run("run", "-d", *args, str(output), check=True).stdout)
    rows = wait_for_rows(output, 30)
    ends = {p: max(r["offset"] for r in rows if r["partition"] == p) + 1 for p in (0, 1)}
    expected = {(topic, p): (end, 0) for p, end in ends.items()}  # lag 0: caught up
    deadline = time.monotonic() + 180
    while (found := described_group("flinkish-orders-offsets", kafka_broker)) != expected:
        assert time.monotonic() < deadline, f"the group shows {found}, the batches {expected}"
        time.sleep(1)
    env.run("cancel", job, check=True)
