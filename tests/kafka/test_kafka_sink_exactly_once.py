"""Exactly once into Kafka (``flinkish.kafka.sink.delivery-guarantee: exactly-once``), on a
real broker with Spark's real Kafka connector: an unmodified script with Spark's Kafka sink
(``writeStream.format("kafka")``) has its driver, its JVM and an executor's Python worker
killed at each step of a batch's write and commit, and during a savepoint; it resumes from a
stop with a savepoint at another parallelism, takes periodic savepoints, and is upgraded (at
a third parallelism), with input between each step; a ``read_committed`` consumer reads each
input record's output exactly once, each key's records in one partition of the sink topic in
their order, and a ``read_uncommitted`` one reads what the killed transactions had written
too. An upgrade whose new program dies in the middle of a batch is not rolled back when
the batch was planned beyond the state it started from (it may be in Kafka), and is rolled
back when that state had planned it; either way that batch is written once."""

from __future__ import annotations

import collections
import json
import time
import uuid
from pathlib import Path

import pytest

from tests.fixtures.cycle import savepoint_path
from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of
from tests.fixtures.kafka_broker import KafkaBroker, consume_all, create_topic, produce
from tests.fixtures.upgrade_pipeline import (
    ROLLED_BACK,
    ROLLED_BACK_LAST_STATE,
    STABLE,
    SUBMITTED,
    UNSTABLE,
)

pytestmark = pytest.mark.spark

JOB = str(JOBS / "kafka_to_kafka.py")
#: More than the source's two partitions: each key's records stay in one of them.
SINK_PARTITIONS = 3
CONNECTOR = ("-D", "flinkish.connectors=kafka")
EXACTLY_ONCE = (
    "-D",
    "flinkish.kafka.sink.delivery-guarantee=exactly-once",
    "-D",
    "flinkish.kafka.sink.transactional-id-prefix=orders-eos",
)
RESTARTS = (
    "-D",
    "restart-strategy.type=fixed-delay",
    "-D",
    "restart-strategy.fixed-delay.attempts=8",
    "-D",
    "restart-strategy.fixed-delay.delay=1 s",
)
FAULT = "FLINKISH_TEST_FAULT"
#: One fault per driver attempt, in order (flinkish_cli/runtime/faults.py).
FAULTS = ",".join(
    [
        "kafka-sink-between-records:jvm",  # batch 0: a record in the broker's log, uncommitted
        "kafka-sink-committed:python",  # batch 0 again: in Kafka, not in Spark's commit log
        "savepoint-snapshot:jvm",  # a savepoint under way
        "kafka-sink-first-record:worker",  # batch 1: a transaction begun, nothing sent
    ]
)


def orders(start: int, count: int) -> list[tuple[str, str]]:
    return [(f"k{i % 7}", f"order-{i}") for i in range(start, start + count)]


def expected_values(count: int) -> set[str]:
    return {value.upper() for _, value in orders(0, count)}


def replanned_topic() -> str:
    """A new topic name whose two partitions Spark's Kafka source plans in one order in a
    batch's first run and in the other in its replay: a first run takes the batch's offsets
    from the broker (a ``java.util.HashMap`` of ``TopicPartition``: its buckets' order), a
    replay from the offset log (sorted). The batch killed half written is then replayed with
    its topic-partitions in swapped Spark partitions, which the sink must not depend on."""
    while True:
        topic = f"t-{uuid.uuid4().hex[:12]}"
        if _bucket(topic, 1) < _bucket(topic, 0):
            return topic


def _bucket(topic: str, partition: int) -> int:
    """The bucket of ``TopicPartition(topic, partition)`` in a HashMap of 16 buckets."""
    code = 0
    for char in topic:
        code = (31 * code + ord(char)) & 0xFFFFFFFF  # String.hashCode
    code = (31 * (31 + partition) + code) & 0xFFFFFFFF  # TopicPartition.hashCode
    return (code ^ (code >> 16)) & 15


def read_until(broker: str, topic: str, values: set[str], timeout: float = 400) -> list:
    """The topic's records, read (``read_committed``) until they hold every value of
    ``values``."""
    deadline = time.monotonic() + timeout
    while True:
        found = consume_all(broker, topic, len(values), timeout=10)
        if values <= {value for *_, value in found}:
            return found
        missing = len(values - {value for *_, value in found})
        assert time.monotonic() < deadline, f"{missing} of {len(values)} records missing"


def wait_running(env: FlinkishEnv, job: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while (state := env.job(job)["state"]) != "RUNNING":
        assert time.monotonic() < deadline, f"the job is {state}"
        time.sleep(0.5)


def test_kafka_sink_exactly_once_through_kills_a_rescaled_resume_and_an_upgrade(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    env = flinkish_env
    source = create_topic(kafka_broker, partitions=2, name=replanned_topic())
    sink = create_topic(kafka_broker, partitions=SINK_PARTITIONS)
    args = (*CONNECTOR, *EXACTLY_ONCE, *RESTARTS, JOB, str(kafka_broker), source, sink)
    produce(kafka_broker, source, orders(0, 30))
    faults = {"FLINKISH_TEST_FAULT": FAULTS}
    job = job_id_of(env.run("run", "-d", *args, check=True, env=faults).stdout)

    read_until(kafka_broker, sink, expected_values(30))
    wait_running(env, job)
    killed = env.run("savepoint", job, check=False, timeout=400)  # its driver's JVM is killed
    assert killed.returncode != 0, killed.stdout
    produce(kafka_broker, source, orders(30, 20))
    read_until(kafka_broker, sink, expected_values(50))
    wait_running(env, job)

    stops = env.root / "stops"
    stopped = savepoint_path(
        env.run("stop", "--savepointPath", str(stops), job, check=True, timeout=400).stdout
    )
    produce(kafka_broker, source, orders(50, 10))  # while the job is stopped
    # resumed with another parallelism than the stopped job's (2), and periodic savepoints
    periodic = ("-D", "flinkish.savepoint.periodic.interval=3 s")
    resumed = job_id_of(
        env.run("run", "-d", "-s", stopped, "-p", "3", *periodic, *args, check=True).stdout
    )
    read_until(kafka_broker, sink, expected_values(60))
    wait_running(env, resumed)
    assert parallelism(env, resumed) == 3
    produce(kafka_broker, source, orders(60, 10))
    read_until(kafka_broker, sink, expected_values(70))
    wait_periodic_savepoint(env, resumed)
    produce(kafka_broker, source, orders(70, 10))
    read_until(kafka_broker, sink, expected_values(80))

    # upgraded to a new program (at parallelism 1): stopped with a savepoint, started from it
    program = (JOBS / "kafka_to_kafka.py").read_text()
    version_2 = env.root / "kafka_to_kafka_v2.py"
    version_2.write_text(program.replace('appName("kafka-to-kafka")', 'appName("orders v2")'))
    readiness = ("-D", "flinkish.upgrade.readiness.timeout=4 min")
    settings = args[:-4]
    upgrade = ("upgrade", "-p", "1", *readiness, *settings, resumed, str(version_2), *args[-3:])
    upgraded = env.run(*upgrade, check=True, timeout=600)
    stable = STABLE.search(upgraded.stdout)
    assert stable and stable["old"] == resumed, upgraded.stdout
    final = stable["new"]
    produce(kafka_broker, source, orders(80, 10))
    read_until(kafka_broker, sink, expected_values(90))
    assert parallelism(env, final) == 1

    # an upgrade to a program that cannot start: rolled back to version 2, from the savepoint
    version_3 = env.root / "kafka_to_kafka_v3.py"
    version_3.write_text('raise RuntimeError("version 3 cannot start")\n' + program)
    failing = ("upgrade", *readiness, *settings, final, str(version_3), *args[-3:])
    failed = env.run(*failing, check=False, timeout=600)
    rolled = ROLLED_BACK.search(failed.stdout)
    assert failed.returncode == 1 and rolled and rolled["old"] == final, failed
    assert "version 3 cannot start" in rolled["reason"] and rolled["prog"] == str(version_2)
    produce(kafka_broker, source, orders(90, 10))
    committed = read_until(kafka_broker, sink, expected_values(100))
    assert env.job(rolled["back"])["state"] == "RUNNING"
    env.run("cancel", rolled["back"], check=True)

    seen = collections.Counter(value for *_, value in committed)
    assert set(seen) == expected_values(100)
    assert set(seen.values()) == {1}, {v: n for v, n in seen.items() if n > 1}
    # each key's records in one of the sink's partitions, in the order they came in
    by_key: dict[str, list[tuple[int, int, int]]] = collections.defaultdict(list)
    for partition, offset, key, value in committed:
        by_key[key].append((partition, offset, int(value.split("-")[1])))
    assert set(by_key) == {f"k{i}" for i in range(7)}
    for key, records in by_key.items():
        assert len({p for p, *_ in records}) == 1, (key, records)
        assert {p for p, *_ in records} <= set(range(SINK_PARTITIONS))
        numbers = [n for *_, n in sorted(records)]
        assert numbers == sorted(numbers), (key, numbers)
    # A read_uncommitted reader also reads the records of the aborted transactions.
    uncommitted = consume_all(kafka_broker, sink, 101, timeout=15, isolation="read_uncommitted")
    twice = collections.Counter(value for *_, value in uncommitted)
    assert max(twice.values()) > 1, "the killed transaction's record is in the log"
    assert set(twice) == expected_values(100)


def test_an_upgrade_failing_mid_batch_is_not_rolled_back_and_writes_the_batch_once(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """``flinkish upgrade`` of a job writing the exactly-once sink, whose new program's JVM
    is killed in the middle of its first batch (a record of it in an open transaction): that
    batch was planned beyond the savepoint and may be in Kafka (each Spark partition commits
    a transaction of its own), and a rollback, which plans its input anew, could write it
    again; so the upgrade does not roll back, says why and
    exits 1, and the failed job resumed from its checkpoints, as its line says, writes the
    batch once: a read_committed reader reads every record exactly once."""
    env = flinkish_env
    source = create_topic(kafka_broker, partitions=2)
    sink = create_topic(kafka_broker, partitions=SINK_PARTITIONS)
    settings, tail = (*CONNECTOR, *EXACTLY_ONCE), (str(kafka_broker), source, sink)
    produce(kafka_broker, source, orders(0, 20))
    job = job_id_of(env.run("run", "-d", *settings, JOB, *tail, check=True).stdout)
    read_until(kafka_broker, sink, expected_values(20))
    (query,) = [p for p in (env.checkpoints / job).iterdir() if (p / "offsets").is_dir()]
    caught_up(query, source, 20)
    batch = max(int(p.name) for p in (query / "offsets").glob("[0-9]*")) + 1  # the new job's

    program = (JOBS / "kafka_to_kafka.py").read_text()
    version_2 = env.root / "kafka_to_kafka_v2.py"
    version_2.write_text(program.replace('appName("kafka-to-kafka")', 'appName("orders v2")'))
    readiness = ("-D", "flinkish.upgrade.readiness.timeout=4 min")
    faults = {FAULT: f"kafka-sink-between-records@{batch}:jvm"}
    upgrade = ("upgrade", *readiness, *settings, job, str(version_2), *tail)
    upgrading = env.popen(*upgrade, env=faults)
    assert upgrading.stdout is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith("Savepoint completed."):
        lines.append(upgrading.stdout.readline())
        assert lines[-1], ("".join(lines), upgrading.communicate(timeout=60))
    produce(kafka_broker, source, orders(20, 20))  # the new program's first batch
    rest, errors = upgrading.communicate(timeout=600)
    output = "".join(lines) + rest
    assert upgrading.returncode == 1, (output, errors)
    unstable = UNSTABLE.search(output)
    assert unstable and unstable["old"] == job, (output, errors)
    new = unstable["new"]
    assert f"(query {query.name} batch {batch}, planned and maybe in Kafka)" in unstable["reason"]
    assert "that a rollback would have to undo" in unstable["reason"]
    assert SUBMITTED.findall(output) == [new] and "rolled back" not in output, "no rollback"
    env.wait_for_state(new, ["FAILED"])
    listed = {j["jid"]: j for j in env.list_jobs()}
    assert listed[job]["state"] == "FINISHED" and listed[new]["state"] == "FAILED", listed
    # the batch partly in Kafka: a partition's transaction committed or not, the killed
    # one's record in the log and not committed
    committed = {value for *_, value in consume_all(kafka_broker, sink, 20, timeout=15)}
    assert expected_values(20) <= committed < expected_values(40), committed
    written = consume_all(kafka_broker, sink, 21, timeout=15, isolation="read_uncommitted")
    assert {value for *_, value in written} - committed, "a record of the killed transaction"

    # resumed from the failed job's checkpoints with the previous program, as the line says
    resume = ("run", "-d", "-s", unstable["dir"], *settings, JOB, *tail)
    resumed = job_id_of(env.run(*resume, check=True).stdout)
    produce(kafka_broker, source, orders(40, 10))
    found = read_until(kafka_broker, sink, expected_values(50))
    env.run("cancel", resumed, check=True)
    seen = collections.Counter(value for *_, value in consume_all(kafka_broker, sink, 51, 15))
    assert set(seen) == expected_values(50) and len(found) >= 50
    assert set(seen.values()) == {1}, {v: n for v, n in seen.items() if n > 1}


def test_an_upgrade_failing_in_the_batch_its_state_planned_rolls_back_and_writes_it_once(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """The rule's other side: a job killed in the middle of batch 1, its one restart too, is
    upgraded from its last state (``--upgrade-mode last-state``), whose offset log had
    planned batch 1; the new program dies in the middle of that batch, replayed as planned,
    so nothing it may have put in Kafka is new: the upgrade rolls back, and the previous
    program, from the same checkpoints, writes the batch (the partitions already in Kafka
    known by their markers); a read_committed reader reads every record exactly once."""
    env = flinkish_env
    source = create_topic(kafka_broker, partitions=2)
    sink = create_topic(kafka_broker, partitions=SINK_PARTITIONS)
    settings, tail = (*CONNECTOR, *EXACTLY_ONCE), (str(kafka_broker), source, sink)
    one_restart = (*RESTARTS[:3], "restart-strategy.fixed-delay.attempts=1", *RESTARTS[4:])
    killed = "kafka-sink-between-records@1:jvm"
    produce(kafka_broker, source, orders(0, 20))
    run = ("run", "-d", *settings, *one_restart, JOB, *tail)
    job = job_id_of(env.run(*run, check=True, env={FAULT: f"{killed},{killed}"}).stdout)
    read_until(kafka_broker, sink, expected_values(20))  # batch 0
    produce(kafka_broker, source, orders(20, 20))  # batch 1: the job and its restart killed
    env.wait_for_state(job, ["FAILED"], timeout=400)
    (query,) = [p for p in (env.checkpoints / job).iterdir() if (p / "offsets").is_dir()]
    assert (query / "offsets" / "1").exists() and not (query / "commits" / "1").exists()

    program = (JOBS / "kafka_to_kafka.py").read_text()
    version_2 = env.root / "kafka_to_kafka_v2.py"
    version_2.write_text(program.replace('appName("kafka-to-kafka")', 'appName("orders v2")'))
    readiness = ("-D", "flinkish.upgrade.readiness.timeout=4 min")
    upgrade = ("upgrade", "--upgrade-mode", "last-state", *readiness, *settings)
    # the rollback job, started by the same command, meets the fault once too: its restart
    # strategy (the previous program's) takes it on
    failed = env.run(*upgrade, job, str(version_2), *tail, env={FAULT: killed}, timeout=600)
    rolled = ROLLED_BACK_LAST_STATE.search(failed.stdout)
    assert failed.returncode == 1 and rolled and rolled["old"] == job, failed
    assert rolled["prog"] == JOB and rolled["dir"].rstrip("/") == str(env.checkpoints / job)
    assert "ended FAILED" in rolled["reason"] and "a rollback would" not in rolled["reason"]
    assert SUBMITTED.findall(failed.stdout) == [rolled["new"], rolled["back"]]
    listed = {j["jid"]: j for j in env.list_jobs()}
    assert listed[job]["state"] == "FAILED" and listed[rolled["new"]]["state"] == "FAILED"
    wait_running(env, rolled["back"])
    produce(kafka_broker, source, orders(40, 10))
    read_until(kafka_broker, sink, expected_values(50))
    env.run("cancel", rolled["back"], check=True)
    seen = collections.Counter(value for *_, value in consume_all(kafka_broker, sink, 51, 15))
    assert set(seen) == expected_values(50)
    assert set(seen.values()) == {1}, {v: n for v, n in seen.items() if n > 1}
    written = consume_all(kafka_broker, sink, 51, timeout=15, isolation="read_uncommitted")
    assert max(collections.Counter(v for *_, v in written).values()) > 1, "killed mid-batch"


def parallelism(env: FlinkishEnv, job: str) -> int:
    """The parallelism the job's status in the registry records."""
    status = env.checkpoints / job / "_flinkish" / "status.json"
    return int(json.loads(status.read_text())["parallelism"])


def wait_periodic_savepoint(env: FlinkishEnv, job: str, timeout: float = 300) -> None:
    """Until the job's savepoint history holds a completed periodic savepoint."""
    deadline = time.monotonic() + timeout
    while True:
        listed = env.run("savepoint", "list", job, "--output", "json", check=True).stdout
        records = json.loads(listed)["savepoints"]
        if any(r["trigger"] == "PERIODIC" and r["state"] == "COMPLETED" for r in records):
            return
        assert time.monotonic() < deadline, records
        time.sleep(1)


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            ["flinkish.kafka.sink.delivery-guarantee=exactly_twice"],
            "flinkish.kafka.sink.delivery-guarantee",
        ),
        (
            ["flinkish.kafka.sink.delivery-guarantee=exactly-once"],
            "exactly-once needs flinkish.kafka.sink.transactional-id-prefix",
        ),
    ],
)
def test_bad_delivery_guarantee_settings_are_one_line_and_start_nothing(
    flinkish_env: FlinkishEnv, settings: list[str], line: str
) -> None:
    env = flinkish_env
    options = [part for setting in settings for part in ("-D", setting)]
    refused = env.run("run", "-d", *options, JOB, "127.0.0.1:9", "in", "out", check=False)
    assert refused.returncode != 0
    assert line in refused.stderr.strip().splitlines()[0], refused.stderr
    assert "Traceback" not in refused.stderr
    assert not env.checkpoints.exists() or not any(env.checkpoints.iterdir())


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_a_foreach_batch_kafka_writer_replayed_after_a_kill_writes_twice_or_once(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker, guarantee: str
) -> None:
    """A script's own ``foreachBatch`` writing with ``df.write.format("kafka")``, its JVM
    killed after the batch's write and before Spark's commit log: at-least-once (Spark's
    writer) writes the replayed batch again, and a read_committed reader reads every record
    twice; exactly-once finds the batch's markers and writes nothing again."""
    env = flinkish_env
    source, sink = create_topic(kafka_broker, partitions=2), create_topic(kafka_broker)
    flag = env.root / f"killed-{guarantee}"
    job_file = str(JOBS / "kafka_foreach_batch.py")
    settings = ("-D", f"flinkish.kafka.sink.delivery-guarantee={guarantee}")
    settings += ("-D", "flinkish.kafka.sink.transactional-id-prefix=fb-eos")
    args = (*CONNECTOR, *settings, *RESTARTS, job_file, str(kafka_broker), source, sink)
    produce(kafka_broker, source, orders(0, 20))
    job = job_id_of(env.run("run", "-d", *args, str(flag), check=True).stdout)
    read_until(kafka_broker, sink, expected_values(20))
    deadline = time.monotonic() + 300  # the restarted driver's replay of the batch
    while not (env.job(job)["state"] == "RUNNING" and flag.exists() and replayed(env, job)):
        assert time.monotonic() < deadline, "the batch was not replayed"
        time.sleep(0.5)
    produce(kafka_broker, source, orders(20, 5))
    found = read_until(kafka_broker, sink, expected_values(25))
    env.run("cancel", job, check=True)
    seen = collections.Counter(value for *_, value in found)
    first = {seen[value] for value in expected_values(20)}
    assert first == ({2} if guarantee == "at-least-once" else {1}), seen
    assert {seen[v.upper()] for _, v in orders(20, 5)} == {1}


def replayed(env: FlinkishEnv, job: str) -> bool:
    """Whether the job's restarted driver has committed a batch (its log says so)."""
    logs = list((env.root / "log").glob(f"*{job}*.log"))
    text = logs[0].read_text(errors="replace") if logs else ""
    return "Driver attempt 1" in text and "batch 0:" in text.split("Driver attempt 1", 1)[1]


def test_a_stateful_query_rescaled_from_a_checkpoint_kafka_committed_writes_nothing_again(
    flinkish_env: FlinkishEnv, kafka_broker: KafkaBroker
) -> None:
    """A stateful query (``dropDuplicates``) whose driver dies after Kafka committed batch 1
    and before Spark's commit log did, resumed from its retained checkpoint at another
    parallelism (``run -s <checkpoint> -p 3``): its state is repartitioned, Spark's offline
    repartition takes batch 1's id, and the batch is replayed under the next id with the
    offsets it was planned with; the sink knows it by its digest and writes none of it again.
    The repartitioned state still drops values it saw before the kill."""
    env = flinkish_env
    source = create_topic(kafka_broker, partitions=2)
    sink = create_topic(kafka_broker, partitions=SINK_PARTITIONS)
    rocksdb = ("-D", "state.backend.type=rocksdb")
    args = (*CONNECTOR, *EXACTLY_ONCE, *rocksdb, JOB, str(kafka_broker), source, sink, "dedup")
    produce(kafka_broker, source, orders(0, 20))
    faults = {"FLINKISH_TEST_FAULT": "kafka-sink-committed@1:python"}
    job = job_id_of(env.run("run", "-d", *args, check=True, env=faults).stdout)
    read_until(kafka_broker, sink, expected_values(20))  # batch 0, committed
    produce(kafka_broker, source, orders(20, 20))
    read_until(kafka_broker, sink, expected_values(40))  # batch 1, in Kafka only
    deadline = time.monotonic() + 300
    while (state := env.job(job)["state"]) != "FAILED":  # no restarts: the job failed
        assert time.monotonic() < deadline, f"the job is {state}"
        time.sleep(0.5)
    (query,) = [p for p in (env.checkpoints / job).iterdir() if (p / "offsets").is_dir()]
    assert (query / "offsets" / "1").exists() and not (query / "commits" / "1").exists()

    produce(kafka_broker, source, orders(0, 5) + orders(40, 10))  # 5 seen before, 10 new
    resumed = job_id_of(
        env.run("run", "-d", "-s", str(env.checkpoints / job), "-p", "3", *args, check=True).stdout
    )
    read_until(kafka_broker, sink, expected_values(50))
    # the sum of the source's offsets: 20 + 20 + 15 records
    caught_up(env.checkpoints / resumed / query.name, source, 55)
    assert parallelism(env, resumed) == 3
    env.run("cancel", resumed, check=True)
    committed = consume_all(kafka_broker, sink, 51, timeout=15)
    seen = collections.Counter(value for *_, value in committed)
    assert set(seen) == expected_values(50)
    assert set(seen.values()) == {1}, {v: n for v, n in seen.items() if n > 1}


def caught_up(query: Path, topic: str, records: int, timeout: float = 300) -> None:
    """Until the query's checkpoint has committed a batch that ends at ``records`` records of
    ``topic`` (the sum of its partitions' offsets)."""
    deadline = time.monotonic() + timeout
    while True:
        batches = sorted(int(p.name) for p in (query / "offsets").glob("[0-9]*"))
        if batches and (query / "commits" / str(batches[-1])).exists():
            text = (query / "offsets" / str(batches[-1])).read_text().splitlines()
            ends = json.loads(text[2]).get(topic, {})
            if sum(ends.values()) >= records:
                return
        assert time.monotonic() < deadline, f"the query did not reach {records} records"
        time.sleep(0.5)
