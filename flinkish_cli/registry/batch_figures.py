"""The figures of a query's latest micro-batch per node of its graph, as its status records
them: each source's offsets and rates, each stateful operator's state, and the sink's rows.

Spark reports them in every ``StreamingQueryProgress`` (``sources``, ``stateOperators``,
``sink``); the driver keeps the latest batch's in the query's
:class:`~flinkish_cli.registry.status.QueryStatus` (``figures``), written with the status on
every batch anyway, so the figures cost no write of their own. Only the latest batch is kept
(the status's recent batches hold the per-query figures over time), and what Spark reports
in the clear is kept small: an offset longer than :data:`MAX_OFFSET` characters of JSON (a
Kafka topic of hundreds of partitions) is kept as the start of its text, ending in "…"; the
whole offsets stay in the query's checkpoint (``offsets/``) and in ``savepoint info``.
Spark's custom metrics (RocksDB's, ``transformWithState``'s) are not kept.

The graph (:mod:`flinkish_cli.registry.graph`) matches them to its nodes by position: a
source node holds its index in ``sources``, a stateful node its index in ``stateOperators``.
Reading is forgiving: figures that are not figures are none, never an unreadable status.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

#: The longest offset (its JSON text) kept as it is.
MAX_OFFSET = 1000


@dataclass(frozen=True)
class SourceFigures:
    """One source of the batch (Spark's ``SourceProgress``)."""

    description: str
    input_rows: int = 0
    input_rows_per_second: float = 0.0
    processed_rows_per_second: float = 0.0
    #: offsets as Spark reports them (JSON values), each cut to :data:`MAX_OFFSET` characters
    start_offset: Any = None
    end_offset: Any = None
    latest_offset: Any = None

    @property
    def is_kafka(self) -> bool:
        return self.description.startswith(KAFKA_SOURCE)

    def kafka_lag(self) -> KafkaLag | None:
        """The Kafka source's records behind the latest offsets after the batch (None for
        another source, or offsets cut short)."""
        return kafka_lag(self.end_offset, self.latest_offset) if self.is_kafka else None

    def kafka_partitions(self) -> int | None:
        """How many topic-partitions the Kafka source reads (None for another source, or
        offsets cut short)."""
        end = _parsed(self.end_offset) if self.is_kafka else None
        if not isinstance(end, dict):
            return None
        counts = [len(p) for p in end.values() if isinstance(p, dict)]
        return sum(counts) if counts else None


#: How Spark describes its Kafka source in a progress report (``KafkaV2[Subscribe[orders]]``).
KAFKA_SOURCE = "KafkaV2["


@dataclass(frozen=True)
class KafkaLag:
    """A Kafka source's records behind its topics' latest offsets, as Flink's Kafka source
    reports them: ``pending`` over all its partitions (Flink's ``pendingRecords``), and the
    most of one partition (the Kafka consumer's ``records-lag-max``)."""

    pending: int
    most: int
    partitions: int


def kafka_lag(end: Any, latest: Any) -> KafkaLag | None:
    """The lag between a Kafka source's end offsets after a batch and the latest offsets
    Spark saw (``{topic: {partition: offset}}``, JSON text or parsed); None when either is
    not Kafka's offsets."""
    end, latest = _parsed(end), _parsed(latest)
    if not isinstance(end, dict) or not isinstance(latest, dict):
        return None
    behind: list[int] = []
    for topic, partitions in latest.items():
        done = end.get(topic)
        if not isinstance(partitions, dict) or not isinstance(done, dict):
            continue
        for partition, offset in partitions.items():
            at = done.get(partition)
            if isinstance(offset, int) and isinstance(at, int) and offset >= 0 and at >= 0:
                behind.append(max(0, offset - at))
    if not behind:
        return None
    return KafkaLag(sum(behind), max(behind), len(behind))


def _parsed(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


@dataclass(frozen=True)
class OperatorFigures:
    """One stateful operator of the batch (Spark's ``StateOperatorProgress``)."""

    name: str
    rows_total: int = 0
    rows_updated: int = 0
    rows_removed: int = 0
    memory_bytes: int = 0
    dropped_by_watermark: int = 0
    partitions: int = 0
    store_instances: int = 0


@dataclass(frozen=True)
class BatchFigures:
    """The latest batch of a query, per node: its sources, stateful operators (in Spark's
    order: the one nearest the sink first) and sink."""

    batch_id: int
    sources: list[SourceFigures] = field(default_factory=list)
    operators: list[OperatorFigures] = field(default_factory=list)
    sink: str | None = None
    #: rows the sink wrote (None where Spark does not count them: ``foreachBatch``, v1 sinks)
    sink_rows: int | None = None

    @classmethod
    def from_spark(cls, progress: dict[str, Any]) -> BatchFigures:
        """From a Spark ``StreamingQueryProgress`` JSON document."""
        sources = [
            SourceFigures(
                description=str(source.get("description") or ""),
                input_rows=_int(source.get("numInputRows")),
                input_rows_per_second=_number(source.get("inputRowsPerSecond")),
                processed_rows_per_second=_number(source.get("processedRowsPerSecond")),
                start_offset=_offset(source.get("startOffset")),
                end_offset=_offset(source.get("endOffset")),
                latest_offset=_offset(source.get("latestOffset")),
            )
            for source in progress.get("sources") or []
            if isinstance(source, dict)
        ]
        operators = [
            OperatorFigures(
                name=str(op.get("operatorName") or ""),
                rows_total=_int(op.get("numRowsTotal")),
                rows_updated=_int(op.get("numRowsUpdated")),
                rows_removed=_int(op.get("numRowsRemoved")),
                memory_bytes=_int(op.get("memoryUsedBytes")),
                dropped_by_watermark=_int(op.get("numRowsDroppedByWatermark")),
                partitions=_int(op.get("numShufflePartitions")),
                store_instances=_int(op.get("numStateStoreInstances")),
            )
            for op in progress.get("stateOperators") or []
            if isinstance(op, dict)
        ]
        raw_sink = progress.get("sink")
        sink = raw_sink if isinstance(raw_sink, dict) else {}
        rows = sink.get("numOutputRows")
        return cls(
            batch_id=_int(progress.get("batchId"), -1),
            sources=sources,
            operators=operators,
            sink=str(sink["description"]) if sink.get("description") else None,
            sink_rows=_int(rows) if isinstance(rows, int) and rows >= 0 else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> BatchFigures | None:
        """The figures in a status file; None when there are none or they are damaged."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                batch_id=_int(data.get("batch_id"), -1),
                sources=[SourceFigures(**_known(SourceFigures, s)) for s in data["sources"]],
                operators=[
                    OperatorFigures(**_known(OperatorFigures, o)) for o in data["operators"]
                ],
                sink=data.get("sink") if isinstance(data.get("sink"), str) else None,
                sink_rows=data.get("sink_rows") if isinstance(data.get("sink_rows"), int) else None,
            )
        except (KeyError, TypeError, AttributeError):
            return None


def _known(cls: type, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError("not an object")
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _offset(value: Any) -> Any:
    """An offset as Spark reports it, or the start of its JSON text when it is long."""
    if value is None:
        return None
    text = json.dumps(value, separators=(",", ":"), default=str)
    return value if len(text) <= MAX_OFFSET else text[: MAX_OFFSET - 1] + "…"


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0
