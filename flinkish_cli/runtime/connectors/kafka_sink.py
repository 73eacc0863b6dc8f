"""Exactly once into Kafka: Flink's ``DeliveryGuarantee.EXACTLY_ONCE`` for Spark's Kafka sink.

Spark's Kafka sink writes each batch's records and then commits the batch in its checkpoint:
a batch the driver did not commit is written again. With
``flinkish.kafka.sink.delivery-guarantee: exactly-once`` the runtime turns a query's Kafka
sink (``writeStream.format("kafka")``) into a ``foreachBatch`` that writes each batch in
Kafka transactions:

- each Spark partition of a batch is written by its task, on the executor, with a
  transactional producer of its own, ``transactional.id`` = ``<prefix>-<query>-<partition>``.
  Its ``init_transactions`` fences every earlier producer of that id (a task of a killed
  driver, a zombie task) and ends the transaction it left open (aborted: a
  ``read_committed`` reader never sees its records);
- the partition's records and a *marker*, the batch id, are committed in one transaction:
  the marker is the offset ``batch + 1`` the transaction commits for the consumer group
  ``<transactional.id>`` on partition 0 of the marker topic ``<prefix>-markers`` (as Kafka
  Streams commits its input offsets with its output); the driver creates that topic (one
  partition, compacted, empty) on the query's first batch;
  the offset's metadata is the batch's id and a digest of its entry in the query's offset
  log (:func:`batch_marker`);
- a task first reads its marker (a ``read_committed`` offset fetch, stable once its
  transactional id is fenced): a batch its partition already committed (Kafka committed, the
  driver died before Spark's commit log) is skipped, so a replayed batch writes only what
  was not committed. A marker is recognised by its digest, whatever its batch id
  (:func:`same_input`): a planned batch that a rescale of a stateful query replays under the
  next id (Spark's offline repartition takes the id it had,
  :mod:`~flinkish_cli.runtime.queries.restoring`) is the same batch.

The markers rely on partition ``i`` of a replayed batch holding the records partition ``i``
held in the batch's first run. Spark does not promise that: its Kafka source numbers a
batch's input partitions in the iteration order of the batch's offsets, which the first run
takes from the broker and a replay from the offset log (sorted), so a replay may read the
source's topic-partitions in another order. A partition skipped by its marker would then drop
records and another one write committed records again. So the sink first hash-partitions each
batch by its records' content (:func:`by_content`: the key, or the value of a record without
one) into as many partitions as the batch has in its first run, a number the driver records
before any partition is written (:func:`planned_partitions`): every run of a batch puts each
record into the same partition, whatever order Spark planned and whatever parallelism a
replay runs at (a resume with ``-p`` changes the partitions of a script that shuffles); a
batch with fewer partitions than the one before fences the writers it no longer has.

The records go through the executors' Python workers with confluent-kafka (librdkafka, a
maintained client with transactions; ``pip install 'flinkish[kafka]'``), so every executor
writes its own partitions; the producer's settings are the sink's ``kafka.*`` options
(librdkafka's names, which are Java's for the common ones).

Test faults (:mod:`.faults`): ``kafka-sink-first-record`` (a task's transaction begun,
nothing sent), ``kafka-sink-between-records`` (the first record in the broker's log,
uncommitted) in the executors' workers, which can kill ``worker`` (themselves), ``jvm`` or
``python`` (the driver); ``kafka-sink-committed`` (every partition committed in Kafka, the
batch not yet in Spark's commit log) in the driver.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from flinkish_cli.runtime import faults

log = logging.getLogger("flinkish.runtime")

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
NONE = "none"
#: flinkish.kafka.sink.delivery-guarantee's values, Flink's DeliveryGuarantee in its words.
GUARANTEES = (EXACTLY_ONCE, AT_LEAST_ONCE, NONE)
GUARANTEE_KEY = "flinkish.kafka.sink.delivery-guarantee"
PREFIX_KEY = "flinkish.kafka.sink.transactional-id-prefix"
#: How long a Kafka call of a transaction (init, offsets, commit) may take.
TIMEOUT_S = 60.0
#: The sink's options that are Spark's, not the producer's.
_SPARK_OPTIONS = {"topic", "includeheaders", "checkpointlocation", "path"}
#: The columns of Spark's Kafka sink's rows that name where a record goes.
TARGET_COLUMNS = ("topic", "partition")


def marker_topic(prefix: str) -> str:
    """The topic whose partition 0 the markers of a prefix's sinks are committed on."""
    return f"{prefix}-markers"


def transactional_id(prefix: str, query: str, partition: int) -> str:
    """The transactional id of ``query``'s writer of Spark partition ``partition``."""
    return f"{prefix}-{query}-{partition}"


@dataclass(frozen=True)
class SinkSpec:
    """What a batch's tasks need to write it (pickled to the executors)."""

    producer: dict[str, str]
    topic: str | None
    prefix: str
    query: str
    attempt: int
    fault_token: str = ""
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def markers(self) -> str:
        return marker_topic(self.prefix)


def spec_for(options: dict[str, str], prefix: str, query: str, attempt: int) -> SinkSpec:
    """The sink of a query whose writer was given ``options`` (Spark's Kafka sink's)."""
    producer = {
        key[len("kafka.") :]: str(value)
        for key, value in options.items()
        if key.lower().startswith("kafka.")
        and key[len("kafka.") :] not in {"key.serializer", "value.serializer"}
    }
    topic = next((str(v) for k, v in options.items() if k.lower() == "topic"), None)
    # one per driver (its restarts of the query included) and query: a fault fires once
    token = str(Path(tempfile.gettempdir()) / f"flinkish-kafka-fault-{os.getpid()}-{query}")
    pids = {"python": os.getpid(), "jvm": os.getppid()}
    return SinkSpec(producer, topic, prefix, query, attempt, token, pids)


class TransactionalSink:
    """The ``foreachBatch`` function that replaces a query's Kafka sink; ``offsets(batch)``
    reads the batch's entry of the query's offset log (what makes the batch's records)."""

    def __init__(self, spec: SinkSpec, offsets: Callable[[int], str]) -> None:
        self.spec = spec
        self.offsets = offsets
        self._marker_ready = False

    def __call__(self, df: Any, batch_id: int) -> None:
        if not self._marker_ready:
            ensure_marker_topic(self.spec)
            self._marker_ready = True
        marker = batch_marker(int(batch_id), self.offsets(int(batch_id)))
        count = planned_partitions(self.spec, marker, df.rdd.getNumPartitions())
        rows = by_content(df, count).rdd
        rows.foreachPartition(partial(write_partition, self.spec, int(batch_id), marker))
        faults.inject("kafka-sink-committed", self.spec.attempt, int(batch_id))


class TransactionalBatchWrites:
    """Wraps a script's own ``foreachBatch`` function: each ``df.write.format("kafka")
    .save()`` it makes in a batch is written as :class:`TransactionalSink` writes, the k-th of
    the batch as the sink ``<query>-w<k>`` (its own transactional ids and markers)."""

    def __init__(
        self,
        function: Callable[[Any, int], Any],
        spec: SinkSpec,
        offsets: Callable[[int], str],
        slot: Any,
    ) -> None:
        self.function = function
        self.spec = spec
        self.offsets = offsets
        self.slot = slot  # hooks.batch_kafka_writer
        self._marker_ready = False

    def __call__(self, df: Any, batch_id: int) -> Any:
        count = [0]

        def write(frame: Any, options: dict[str, str]) -> None:
            count[0] += 1
            given = {k: v for k, v in options.items() if k.lower() != "checkpointlocation"}
            spec = spec_for(
                given, self.spec.prefix, f"{self.spec.query}-w{count[0]}", self.spec.attempt
            )
            if not self._marker_ready:
                ensure_marker_topic(spec)
                self._marker_ready = True
            marker = batch_marker(int(batch_id), self.offsets(int(batch_id)))
            partitions = planned_partitions(spec, marker, frame.rdd.getNumPartitions())
            rows = by_content(frame, partitions).rdd
            rows.foreachPartition(partial(write_partition, spec, int(batch_id), marker))

        self.slot.write = write
        try:
            result = self.function(df, batch_id)
        finally:
            self.slot.write = None
        faults.inject("kafka-sink-committed", self.spec.attempt, int(batch_id))
        return result


def batch_marker(batch_id: int, offsets: str) -> str:
    """A batch's marker: its id and a digest of what of its offset log entry makes its
    records (:func:`~flinkish_cli.savepoints.layout.planned_input`: the sources' offsets,
    watermark and timestamp; not the SQL settings, which a resume with ``-p`` rewrites). A
    replay of the batch finds its marker, at any parallelism; a batch of the same id planned
    anew (a job resumed from an older savepoint, other offsets) does not, and is written."""
    from flinkish_cli.savepoints.layout import planned_input

    digest = hashlib.sha256(planned_input(offsets).encode()).hexdigest()[:16]
    return f"{batch_id}:{digest}"


def same_input(recorded: str | None, marker_text: str) -> bool:
    """Whether a recorded marker (``<batch>:<digest>``) is of the batch of ``marker_text``:
    the same digest, whatever the batch's id. The digest covers the batch's end offsets, its
    watermark and its timestamp, and it starts where the batch before it ended: two batches
    of one digest read the same records (a batch planned anew has another timestamp)."""
    digest = marker_text.partition(":")[2]
    return bool(recorded) and bool(digest) and str(recorded).partition(":")[2] == digest


def plan_group(spec: SinkSpec) -> str:
    """The consumer group whose offset on the marker topic records the sink's batch plans
    (never a transactional id's: those end in a partition number)."""
    return f"{spec.prefix}-{spec.query}-plan"


def planned_partitions(spec: SinkSpec, marker_text: str, count: int) -> int:
    """How many partitions (transactions) the batch of ``marker_text`` is written in: the
    number its first run recorded, else ``count`` (the batch's partitions now), recorded
    before any of them is written. A replay at another parallelism, whose batch has another
    number of partitions (a script's shuffle follows ``-p``), is so written in the
    partitions, transactional ids and markers of its first run. In the driver.

    The plan is the offset ``batch + 1`` of the group :func:`plan_group` on the marker
    topic, its metadata ``<marker>/<partitions>``; the writers of partitions the previous
    batch had and this one has not are fenced (a transaction such a writer left open would
    hold back ``read_committed`` readers until Kafka's transaction timeout)."""
    from confluent_kafka import Consumer, TopicPartition

    batch = int(marker_text.split(":", 1)[0])
    consumer = Consumer(
        {
            "bootstrap.servers": spec.producer.get("bootstrap.servers", ""),
            "group.id": plan_group(spec),
            "enable.auto.commit": False,
        }
    )
    try:
        where = [TopicPartition(spec.markers, 0)]
        (plan,) = _retried(lambda: consumer.committed(where, timeout=TIMEOUT_S))
        recorded, _, partitions = (plan.metadata or "").rpartition("/")
        if same_input(recorded, marker_text) and partitions.isdigit():
            return int(partitions)
        before = int(partitions) if partitions.isdigit() else 0
        offsets = [TopicPartition(spec.markers, 0, batch + 1, metadata=f"{marker_text}/{count}")]
        _retried(lambda: consumer.commit(offsets=offsets, asynchronous=False))
    finally:
        consumer.close()
    for partition in range(max(count, 1), before):
        fence(spec, partition)
    return count


def _retried(call: Callable[[], Any]) -> Any:
    """``call()``, again while Kafka answers with a retriable error (a group coordinator
    still loading, or moved), for up to :data:`TIMEOUT_S`."""
    import time

    from confluent_kafka import KafkaError, KafkaException

    coordinator = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return call()
        except KafkaException as error:
            cause = error.args[0]
            again = cause.retriable() or cause.code() in coordinator
            if not again or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def fence(spec: SinkSpec, partition: int) -> None:
    """End the writer of ``partition`` (its open transaction aborted)."""
    from confluent_kafka import Producer

    tid = transactional_id(spec.prefix, spec.query, partition)
    Producer({**spec.producer, "transactional.id": tid}).init_transactions(TIMEOUT_S)
    log.info("Kafka sink of '%s': writer '%s' fenced (fewer partitions).", spec.query, tid)


def by_content(df: Any, count: int | None = None) -> Any:
    """The batch ``df`` in ``count`` partitions (default: as many as ``df`` has) decided by
    each record's content: each record in the one its key hashes to (its value when it has
    no key; with its ``topic`` and ``partition`` columns; Spark's Murmur3 hash partitioning,
    the same in every JVM). All records of a key are in one partition, in their order, as
    Spark's sink writes them. A batch of one partition or none asked for is its own."""
    has = df.rdd.getNumPartitions()
    count = has if count is None else count
    if count <= 1:
        return df if has <= 1 else df.coalesce(1)
    from pyspark.sql import functions

    names = {name.lower(): name for name in df.columns}
    record = [df[names[c]].cast("binary") for c in ("key", "value") if c in names]
    columns = [functions.coalesce(*record)] + [df[names[c]] for c in TARGET_COLUMNS if c in names]
    return df.repartition(count, *columns)


def ensure_marker_topic(spec: SinkSpec) -> None:
    """Create the marker topic (one partition, compacted) unless it is there."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": spec.producer.get("bootstrap.servers", "")})
    config = {"cleanup.policy": "compact"}
    futures = admin.create_topics([NewTopic(spec.markers, 1, config=config)], request_timeout=30)
    try:
        futures[spec.markers].result(timeout=TIMEOUT_S)
        log.info("Kafka sink of '%s': marker topic '%s' created.", spec.query, spec.markers)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def write_partition(spec: SinkSpec, batch_id: int, marker_text: str, rows: Any) -> None:
    """One Spark partition of batch ``batch_id``, in one Kafka transaction (on an executor)."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    tid = transactional_id(spec.prefix, spec.query, partition)
    producer = Producer({**spec.producer, "transactional.id": tid})
    producer.init_transactions(TIMEOUT_S)  # fences earlier writers of this partition
    marker = Consumer(
        {
            "bootstrap.servers": spec.producer.get("bootstrap.servers", ""),
            "group.id": tid,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        (committed,) = marker.committed([TopicPartition(spec.markers, 0)], timeout=TIMEOUT_S)
        if same_input(committed.metadata, marker_text):
            return  # this partition of the batch is in Kafka already
        failed: list[str] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failed.append(str(error))

        producer.begin_transaction()
        _fault(spec, "kafka-sink-first-record", batch_id)
        for index, row in enumerate(rows):
            key, value, topic, target, headers = _record(row, spec.topic)
            extra = {} if target is None else {"partition": target}
            producer.produce(
                topic, value=value, key=key, headers=headers, on_delivery=delivered, **extra
            )
            producer.poll(0)
            if index == 0:
                producer.flush(TIMEOUT_S)
                _fault(spec, "kafka-sink-between-records", batch_id)
        offsets = [TopicPartition(spec.markers, 0, batch_id + 1, metadata=marker_text)]
        producer.send_offsets_to_transaction(offsets, marker.consumer_group_metadata(), TIMEOUT_S)
        producer.commit_transaction(TIMEOUT_S)
        if failed:
            raise KafkaException(failed[0])
    finally:
        marker.close()


def _record(row: Any, topic: str | None) -> tuple[Any, Any, str, int | None, Any]:
    """A row of Spark's Kafka sink's shape: ``value``, optional ``key``, ``topic``,
    ``partition``, ``headers``."""
    fields = row.asDict() if hasattr(row, "asDict") else dict(row)
    target = fields.get("topic") or topic
    if not target:
        raise ValueError(
            "The Kafka sink needs a topic: the option topic or a column 'topic' in each row."
        )
    headers = fields.get("headers")
    if headers:
        headers = [(h["key"], _bytes(h["value"])) for h in headers]
    partition = fields.get("partition")
    return _bytes(fields.get("key")), _bytes(fields.get("value")), str(target), partition, headers


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode()


def _fault(spec: SinkSpec, point: str, batch: int) -> None:
    """A test fault in an executor's worker: once per driver attempt (a token file)."""
    process = faults.wanted(point, spec.attempt, batch)
    if process is None:
        return
    try:
        os.close(os.open(spec.fault_token, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return  # fired already (the batch's retry in the same driver)
    target = spec.pids.get(process, os.getpid())
    os.kill(target, signal.SIGKILL)
    if target != os.getpid():
        signal.pause()
