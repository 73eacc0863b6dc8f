"""Kafka sources checked before their query starts: the broker answers, the topics exist, and
a savepoint's offsets are still in the topics.

Spark's Kafka source does not say any of this clearly: against a broker that does not answer
it retries for minutes; a subscribed topic that does not exist leaves the query running
without ever reading a record (Flink's Kafka source fails the job: its topic's metadata
cannot be found); a savepoint's offset behind the topic's first one (its records deleted by
the topic's retention) or past its last one (the topic deleted and created again) fails with
Spark's ``KAFKA_DATA_LOSS`` only once the batch reads it. So when a query first starts in a
job, flinkish asks the broker of each of its Kafka sources (Kafka's admin client, in the
driver's JVM, with the source's own ``kafka.`` options, so its security settings) and fails
the job in one line naming the topic and what to do, before the query starts and before a
savepoint is restored: nothing is written. A source with ``failOnDataLoss`` set to false
keeps Spark's choice (lost records skipped) and its offsets are not compared.

A restarted attempt is not checked again (a broker that is down for a while is what
restarts are for), nor is a query in a driver without a JVM of its own (Spark Connect).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from flinkish_cli.errors import KafkaError

log = logging.getLogger("flinkish.runtime")

#: How long the broker may take to answer the checks.
CHECK_TIMEOUT_S = 20
#: The source options that name its topics.
_TOPIC_OPTIONS = ("subscribe", "assign")


@dataclass(frozen=True)
class KafkaSource:
    """A Kafka source of a query as the script set it: its options."""

    options: dict[str, str]

    @property
    def servers(self) -> str:
        return self.options.get("kafka.bootstrap.servers", "")

    def topics(self) -> list[str]:
        """The topics it names (none for ``subscribePattern``)."""
        if "subscribe" in self.options:
            return [t.strip() for t in self.options["subscribe"].split(",") if t.strip()]
        if "assign" in self.options:
            try:
                return sorted(json.loads(self.options["assign"]))
            except (ValueError, TypeError):
                return []
        return []

    @property
    def fails_on_data_loss(self) -> bool:
        return self.options.get("failOnDataLoss", "true").strip().lower() != "false"

    def client_properties(self) -> dict[str, str]:
        """Kafka client settings of the source (its ``kafka.`` options without the prefix)."""
        return {k[len("kafka.") :]: v for k, v in self.options.items() if k.startswith("kafka.")}


def sources_of(writer: Any) -> list[KafkaSource]:
    """The Kafka sources of the DataFrame a ``DataStreamWriter`` writes (before it starts);
    none where its plan cannot be read (Spark Connect)."""
    try:
        leaves = writer._df._jdf.queryExecution().logical().collectLeaves().iterator()
    except Exception:
        return []
    found: list[KafkaSource] = []
    while leaves.hasNext():
        leaf = leaves.next()
        try:
            if str(leaf.getClass().getSimpleName()) != "StreamingRelationV2":
                continue
            if str(leaf.sourceName()).lower() != "kafka":
                continue
            options = dict(leaf.extraOptions().asCaseSensitiveMap())
        except Exception:
            continue
        found.append(KafkaSource({str(k): str(v) for k, v in options.items()}))
    return found


def check(query: str, sources: list[KafkaSource], saved_offsets: list[Any]) -> None:
    """:class:`KafkaError` when a source's broker does not answer, a topic it names does not
    exist, or ``saved_offsets`` (the savepoint's, per source: ``{topic: {partition:
    offset}}``) are outside its topics' offsets."""
    if not sources:
        return
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is None:
        return
    saved = _saved_by_topic(saved_offsets)
    for source in sources:
        if source.servers:
            _check_source(jvm, query, source, saved)


def _check_source(jvm: Any, query: str, source: KafkaSource, saved: dict) -> None:
    properties = jvm.java.util.Properties()
    for key, value in source.client_properties().items():
        properties.put(key, value)
    properties.put("client.id", "flinkish-check")
    properties.put("request.timeout.ms", str(CHECK_TIMEOUT_S * 1000))
    properties.put("default.api.timeout.ms", str(CHECK_TIMEOUT_S * 1000))
    seconds = jvm.java.util.concurrent.TimeUnit.SECONDS
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(properties)
    try:
        try:
            names = set(admin.listTopics().names().get(CHECK_TIMEOUT_S, seconds))
        except Exception as error:
            log.debug("Kafka broker check of %s: %s", source.servers, error)
            raise KafkaError(
                f"Query '{query}': no Kafka broker answered at {source.servers} "
                f"(kafka.bootstrap.servers) within {CHECK_TIMEOUT_S} s.",
                "Start the broker, or set kafka.bootstrap.servers to brokers that run.",
            ) from None
        topics = source.topics()
        missing = [t for t in topics if t not in names]
        if missing:
            listed = ", ".join(f"'{t}'" for t in missing)
            option = "subscribe" if "subscribe" in source.options else "assign"
            raise KafkaError(
                f"Query '{query}': Kafka topic {listed} does not exist on {source.servers}.",
                f"Create it (kafka-topics.sh --create --topic {missing[0]}), or fix {option}.",
            )
        if source.fails_on_data_loss:
            for topic in topics:
                if topic in saved:
                    _check_offsets(jvm, admin, query, topic, saved[topic], seconds)
    finally:
        admin.close()


def _check_offsets(
    jvm: Any, admin: Any, query: str, topic: str, saved: dict[int, int], seconds: Any
) -> None:
    """The savepoint's offset of each partition of ``topic`` within the topic's offsets."""
    kafka = jvm.org.apache.kafka
    spec = kafka.clients.admin.OffsetSpec
    partitions = {p: kafka.common.TopicPartition(topic, p) for p in saved}
    bounds: dict[str, dict[int, int]] = {}
    for name, which in (("earliest", spec.earliest()), ("latest", spec.latest())):
        asked = jvm.java.util.HashMap()
        for tp in partitions.values():
            asked.put(tp, which)
        try:
            result = admin.listOffsets(asked).all().get(CHECK_TIMEOUT_S, seconds)
        except Exception as error:  # a partition gone: Spark says so (PARTITIONS_DELETED)
            log.debug("Kafka offsets of %s: %s", topic, error)
            return
        bounds[name] = {p: int(result.get(tp).offset()) for p, tp in partitions.items()}
    for partition, offset in sorted(saved.items()):
        earliest, latest = bounds["earliest"][partition], bounds["latest"][partition]
        if offset > latest:
            raise KafkaError(
                f"Query '{query}': Kafka topic '{topic}' partition {partition} ends at offset "
                f"{latest}, before offset {offset} the savepoint holds: the topic was deleted "
                "and created again.",
                "Start the job without the savepoint, or set the source option failOnDataLoss "
                "to false to accept the loss (Spark then reads on from where the topic is).",
            )
        if offset < earliest:
            raise KafkaError(
                f"Query '{query}': Kafka topic '{topic}' partition {partition} starts at offset "
                f"{earliest}, after offset {offset} the savepoint holds: the topic's retention "
                f"deleted records the job had not read.",
                "Set the source option failOnDataLoss to false to skip them, or start the job "
                "without the savepoint; raise the topic's retention.ms to keep records longer.",
            )


def _saved_by_topic(saved_offsets: list[Any]) -> dict[str, dict[int, int]]:
    """The savepoint's Kafka offsets by topic (a source's entry that is not Kafka's is left)."""
    found: dict[str, dict[int, int]] = {}
    for entry in saved_offsets:
        if isinstance(entry, str):
            try:
                entry = json.loads(entry)
            except ValueError:
                continue
        if not isinstance(entry, dict):
            continue
        for topic, partitions in entry.items():
            if not isinstance(partitions, dict):
                continue
            for partition, offset in partitions.items():
                if str(partition).isdigit() and isinstance(offset, int) and offset >= 0:
                    found.setdefault(str(topic), {})[int(partition)] = offset
    return found
