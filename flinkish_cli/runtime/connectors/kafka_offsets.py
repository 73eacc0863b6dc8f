"""Kafka offsets where Kafka's tools see them: each committed batch's end offsets, committed
to the source's consumer group (Flink's ``commit.offsets.on.checkpoint``).

Spark's Kafka source keeps its offsets in the query's checkpoint only and never commits them
to a consumer group, so ``kafka-consumer-groups.sh --describe`` and lag exporters see
nothing. After each committed batch (Spark reports a batch's progress after its commit log
entry is written: never ahead of the checkpoint), flinkish commits the batch's end offsets of
each Kafka source to its group: the source's ``kafka.group.id`` when the script sets one,
else ``flinkish-<job name>``. The committed offsets are never read back: where a restored
job starts is its checkpoint's or savepoint's decision, as in Flink.

The commits run on a thread of their own with Kafka's admin client in the driver's JVM (the
connector's ``kafka-clients``), the newest offsets of each group first; one that fails is
logged once per group and tried again at the next batch. In a driver without a JVM of its
own (Spark Connect) the source's options cannot be read, and nothing is committed.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from flinkish_cli.registry.batch_figures import KAFKA_SOURCE

log = logging.getLogger("flinkish.runtime")

#: How long one commit may take before it is given up (the next batch tries again).
COMMIT_TIMEOUT_S = 30


def default_group(job_name: str) -> str:
    """The group a Kafka source's offsets go to when the script names none."""
    return f"flinkish-{job_name}"


class GroupCommitter:
    """Commits each Kafka source's end offsets after each committed batch."""

    def __init__(self, job_name: str) -> None:
        self.job_name = job_name
        #: query identity -> source description -> its options (read once per query run)
        self._sources: dict[str, dict[str, dict[str, str]]] = {}
        self._pending: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._admins: dict[str, Any] = {}
        self._failed: set[str] = set()
        self._jvm: Any = None

    def committed(self, name: str, handle: Any, progress: dict[str, Any]) -> None:
        """A batch of query ``name`` (Spark's ``handle``) committed with ``progress``."""
        sources = [s for s in progress.get("sources") or [] if _is_kafka(s)]
        if not sources:
            return
        options = self._options(name, handle)
        for source in sources:
            found = options.get(str(source.get("description")))
            offsets = _offsets(source.get("endOffset"))
            if found is None or not offsets:
                continue
            servers = found.get("kafka.bootstrap.servers")
            if not servers:
                continue
            group = found.get("kafka.group.id") or default_group(self.job_name)
            with self._lock:
                merged = self._pending.setdefault((servers, group), {})
                for topic, partitions in offsets.items():
                    merged.setdefault(topic, {}).update(partitions)
                self._lock.notify()
        self._start()

    def _options(self, name: str, handle: Any) -> dict[str, dict[str, str]]:
        if name not in self._sources:
            self._sources[name] = _source_options(handle)
        return self._sources[name]

    def new_attempt(self) -> None:
        """The program starts its queries again: their sources are read again."""
        self._sources.clear()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="flinkish-kafka-offsets", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending:
                    self._lock.wait()
                (servers, group), offsets = self._pending.popitem()
            try:
                self._commit(servers, group, offsets)
                if group in self._failed:
                    self._failed.discard(group)
                    log.info("Kafka consumer group '%s': offsets committed again.", group)
            except Exception as error:
                if group not in self._failed:
                    self._failed.add(group)
                    reason = str(error).strip().splitlines()[0][:300] if str(error) else ""
                    log.warning(
                        "Kafka consumer group '%s': the batch's offsets could not be committed "
                        "(%s); trying again at the next batch.",
                        group,
                        reason or type(error).__name__,
                    )

    def _commit(self, servers: str, group: str, offsets: dict[str, dict[str, int]]) -> None:
        from pyspark import SparkContext

        jvm = SparkContext._jvm
        if jvm is None:
            return
        admin = self._admins.get(servers)
        if admin is None:
            properties = jvm.java.util.Properties()
            properties.put("bootstrap.servers", servers)
            properties.put("client.id", f"flinkish-offsets-{self.job_name}")
            admin = jvm.org.apache.kafka.clients.admin.Admin.create(properties)
            self._admins[servers] = admin
        kafka = jvm.org.apache.kafka
        committed = jvm.java.util.HashMap()
        for topic, partitions in offsets.items():
            for partition, offset in partitions.items():
                committed.put(
                    kafka.common.TopicPartition(topic, int(partition)),
                    kafka.clients.consumer.OffsetAndMetadata(int(offset)),
                )
        seconds = jvm.java.util.concurrent.TimeUnit.SECONDS
        admin.alterConsumerGroupOffsets(group, committed).all().get(COMMIT_TIMEOUT_S, seconds)


def added_partitions(progress: dict[str, Any]) -> dict[str, list[int]]:
    """The partitions a batch's Kafka sources read that their start offsets did not hold
    (a topic that gained partitions since the previous batch, or since the checkpoint or
    savepoint the query was restored from): topic -> partitions. Spark's Kafka source reads
    them from their earliest offset, as Flink's does; the first batch of a new query (no
    start offsets) has none."""
    added: dict[str, list[int]] = {}
    for source in progress.get("sources") or []:
        if not isinstance(source, dict) or not _is_kafka(source):
            continue
        start, end = _offsets(source.get("startOffset")), _offsets(source.get("endOffset"))
        if not start:
            continue
        for topic, partitions in end.items():
            new = sorted(int(p) for p in set(partitions) - set(start.get(topic) or {}))
            if new:
                added.setdefault(topic, []).extend(new)
    return added


def added_partitions_line(query: str, added: dict[str, list[int]]) -> str:
    """The job's log line for :func:`added_partitions`."""
    parts = "; ".join(
        f"topic '{topic}' partitions {', '.join(str(p) for p in partitions)}"
        for topic, partitions in sorted(added.items())
    )
    return (
        f"Query '{query}': Kafka {parts} are new since the query's checkpoint or savepoint; "
        "they are read from their earliest offset."
    )


def _is_kafka(source: dict[str, Any]) -> bool:
    return str(source.get("description", "")).startswith(KAFKA_SOURCE)


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    """A Kafka source's offsets from a progress report (JSON text or already parsed)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    found: dict[str, dict[str, int]] = {}
    for topic, partitions in value.items():
        if isinstance(partitions, dict):
            found[str(topic)] = {
                str(p): int(o) for p, o in partitions.items() if isinstance(o, int) and o >= 0
            }
    return found


def _source_options(handle: Any) -> dict[str, dict[str, str]]:
    """Each Kafka source's options, by its description, from the running query's plan (a
    classic driver's JVM); nothing where they cannot be read."""
    try:
        leaves = handle._jsq.streamingQuery().logicalPlan().collectLeaves().iterator()
    except Exception:
        return {}
    found: dict[str, dict[str, str]] = {}
    while leaves.hasNext():
        leaf = leaves.next()
        try:
            description = str(leaf.stream().toString())
            options = dict(leaf.relation().options().asCaseSensitiveMap())
        except Exception:
            continue
        if description.startswith(KAFKA_SOURCE):
            found[description] = {str(k): str(v) for k, v in options.items()}
    return found
