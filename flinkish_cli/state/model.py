"""What a query's state is made of, as ``flinkish state ls`` lists it: plain data, no Spark.

A query has stateful operators (Spark numbers them from 0 in its checkpoint, ``state/<id>/``);
an operator has one or more **stores**, the units Spark's state reader reads one at a time
and that ``state show`` and ``state export`` name:

- ``default``: the one store of an aggregation, a deduplication, a session window,
  ``applyInPandasWithState`` / ``flatMapGroupsWithState`` (Spark's store name ``default``);
- ``left`` and ``right``: the rows a stream-stream join buffers on each side (each side is
  two stores of Spark's, ``<side>-keyToNumValues`` and ``<side>-keyWithIndexToValue``,
  which Spark's reader joins with its ``joinSide`` option);
- one per state variable of a ``transformWithState`` operator (its ``stateVarName``), all
  in Spark's one ``default`` store.

Each store has a key schema and a value schema (Spark's, as its reader gives them, in
Spark's simple notation and as Spark's JSON schema), and rows; an operator has partitions
and bytes (the size on storage of the state files its batch needs, every retained version
included: what the state costs on disk, not in memory). The documents ``--output json``
prints, and the REST API serves, are :meth:`StateListing.summary` and
:meth:`StoreRows.summary`: this module owns their shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Spark's operator names (its ``StateStoreWriter.shortName``) as a Spark user calls them.
OPERATOR_KINDS = {
    "stateStoreSave": "aggregation",
    "dedupe": "deduplication",
    "dedupeWithinWatermark": "deduplication within watermark",
    "symmetricHashJoin": "stream-stream join",
    "sessionWindowStateStoreSaveExec": "session window",
    "applyInPandasWithState": "applyInPandasWithState",
    "flatMapGroupsWithState": "flatMapGroupsWithState",
    "transformWithStateExec": "transformWithState",
    "transformWithStateInPandasExec": "transformWithState",
    "transformWithStateInPySparkExec": "transformWithState",
    "globalLimit": "streaming limit",
}

#: The store of an operator that has only one (Spark's default store name).
DEFAULT_STORE = "default"
#: A stream-stream join's stores, one per side.
JOIN_SIDES = ("left", "right")


def operator_kind(spark_name: str | None) -> str:
    """What a Spark operator name means to a user (Spark's own name when unknown)."""
    if not spark_name:
        return "unknown"
    return OPERATOR_KINDS.get(spark_name, spark_name)


@dataclass
class StoreState:
    """One store of an operator: what selects it in Spark's reader, its schemas and rows."""

    name: str
    #: the reader option that selects it (``joinSide``, ``stateVarName``), or None
    option: tuple[str, str] | None = None
    key_schema: str = ""
    value_schema: str = ""
    #: Spark's JSON schemas (``StructType.jsonValue()``), for tools that compare schemas
    key_schema_json: dict[str, Any] = field(default_factory=dict)
    value_schema_json: dict[str, Any] = field(default_factory=dict)
    #: the kind of a transformWithState variable (ValueState, ListState, MapState)
    variable_type: str | None = None
    rows: int | None = None
    #: bytes of its own state files; None when it shares its files with the operator's
    #: other stores (transformWithState's variables)
    bytes: int | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key-schema": self.key_schema,
            "value-schema": self.value_schema,
            "rows": self.rows,
            "bytes": self.bytes,
            "variable-type": self.variable_type,
            "key-schema-json": self.key_schema_json,
            "value-schema-json": self.value_schema_json,
        }


@dataclass
class OperatorState:
    """One stateful operator of a query."""

    operator_id: int
    #: Spark's name for it (``stateStoreSave``...), None when its metadata could not be read
    spark_name: str | None
    partitions: int
    #: Spark's own store names (``default``, ``left-keyToNumValues``...)
    spark_stores: list[str] = field(default_factory=list)
    stores: list[StoreState] = field(default_factory=list)
    bytes: int = 0

    @property
    def kind(self) -> str:
        return operator_kind(self.spark_name)

    @property
    def rows(self) -> int | None:
        counts = [s.rows for s in self.stores]
        return None if any(c is None for c in counts) else sum(c for c in counts if c)

    def store(self, name: str) -> StoreState | None:
        return next((s for s in self.stores if s.name == name), None)

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.operator_id,
            "kind": self.kind,
            "spark-name": self.spark_name,
            "partitions": self.partitions,
            "rows": self.rows,
            "bytes": self.bytes,
            "spark-stores": self.spark_stores,
            "stores": [s.summary() for s in self.stores],
        }


@dataclass
class QueryState:
    """One query of what was read: its last committed batch (the state's version) and its
    stateful operators (none for a stateless query)."""

    name: str
    #: where its checkpoint is (a savepoint's query directory, a job's checkpoint)
    location: str
    batch: int
    operators: list[OperatorState] = field(default_factory=list)
    #: each source's end offsets at that batch (Spark's offset log; Kafka's per topic-partition)
    source_offsets: list[Any] = field(default_factory=list)

    def operator(self, operator_id: int) -> OperatorState | None:
        return next((o for o in self.operators if o.operator_id == operator_id), None)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "location": self.location,
            "batch": self.batch,
            "source-offsets": self.source_offsets,
            "operators": [o.summary() for o in self.operators],
        }


@dataclass
class StateListing:
    """``state ls``: every query of a savepoint, a retained checkpoint or a job."""

    #: "savepoint", "checkpoint" (a job's retained checkpoints or one query's) or "job"
    kind: str
    path: str
    job_id: str | None
    queries: list[QueryState] = field(default_factory=list)

    def query(self, name: str) -> QueryState | None:
        return next((q for q in self.queries if q.name == name), None)

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "job-id": self.job_id,
            "queries": [q.summary() for q in self.queries],
        }

    @classmethod
    def from_summary(cls, data: dict[str, Any]) -> StateListing:
        """The listing :meth:`summary` gave (read back from a child process's answer)."""
        return cls(
            kind=data["kind"],
            path=data["path"],
            job_id=data.get("job-id"),
            queries=[
                QueryState(
                    name=q["name"],
                    location=q["location"],
                    batch=q["batch"],
                    source_offsets=list(q.get("source-offsets") or []),
                    operators=[
                        OperatorState(
                            operator_id=o["id"],
                            spark_name=o.get("spark-name"),
                            partitions=o["partitions"],
                            spark_stores=list(o.get("spark-stores") or []),
                            bytes=o.get("bytes") or 0,
                            stores=[
                                StoreState(
                                    name=s["name"],
                                    key_schema=s.get("key-schema", ""),
                                    value_schema=s.get("value-schema", ""),
                                    key_schema_json=s.get("key-schema-json") or {},
                                    value_schema_json=s.get("value-schema-json") or {},
                                    variable_type=s.get("variable-type"),
                                    rows=s.get("rows"),
                                    bytes=s.get("bytes"),
                                )
                                for s in o.get("stores") or []
                            ],
                        )
                        for o in q.get("operators") or []
                    ],
                )
                for q in data.get("queries") or []
            ],
        )


@dataclass
class StateRow:
    """One state row: its key, its value (None for a store without values, such as a
    deduplication's), its partition, and the size of its key (:data:`BIGGEST`)."""

    key: Any
    value: Any
    partition: int
    key_rows: int
    key_bytes: int

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "partition": self.partition,
            "key-rows": self.key_rows,
            "key-bytes": self.key_bytes,
        }


#: How ``state show`` orders keys, biggest first (documented in docs/guides/reading-state.md).
BIGGEST = (
    "a key's size is the bytes of its rows in Spark's JSON encoding (key and value of each "
    "row, summed over the key's rows), then its number of rows (a join side's buffered rows, "
    "a list's elements, a map's entries, a key's session windows)"
)


@dataclass
class StoreRows:
    """``state show`` of one store: its rows, biggest keys first."""

    query: str
    operator_id: int
    store: str
    batch: int
    rows: list[StateRow] = field(default_factory=list)
    #: the store's rows in all (after the key filter)
    total: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "operator": self.operator_id,
            "store": self.store,
            "batch": self.batch,
            "total": self.total,
            "rows": [r.summary() for r in self.rows],
        }

    def lines(self) -> list[dict[str, Any]]:
        """One self-describing object per row (``--output jsonl``)."""
        where = {"query": self.query, "operator": self.operator_id, "store": self.store}
        return [{**where, **r.summary()} for r in self.rows]

    @classmethod
    def from_summary(cls, data: dict[str, Any]) -> StoreRows:
        return cls(
            query=data["query"],
            operator_id=data["operator"],
            store=data["store"],
            batch=data["batch"],
            total=data.get("total", 0),
            rows=[
                StateRow(r["key"], r["value"], r["partition"], r["key-rows"], r["key-bytes"])
                for r in data.get("rows") or []
            ],
        )
