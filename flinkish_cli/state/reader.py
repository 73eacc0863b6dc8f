"""Reading a query's state with Spark's state data source, in a local Spark session.

Spark 4.3 reads a stateful operator's state from a query's checkpoint as a batch
DataFrame: ``spark.read.format("statestore")`` with ``batchId``, ``operatorId`` and one of
``joinSide`` (a stream-stream join's side) or ``stateVarName`` (a ``transformWithState``
variable). Each operator's name, store names, partitions and, for ``transformWithState``, its
state variables come from Spark's operator metadata (:mod:`.metadata`, read from its file;
Spark's ``format("state-metadata")`` when the file cannot be read). :class:`StateReader`
puts the two together for every operator Spark can read (see :mod:`.model` for what a
store is) and gives:

- :meth:`StateReader.listing`: every operator with its stores, their key and value schemas
  (Spark's own) and rows (one count per store), and the bytes of its state files;
- :meth:`StateReader.show`: the rows of a store, biggest keys first (:data:`.model.BIGGEST`),
  optionally only those of one key (:func:`key_condition`);
- :meth:`StateReader.frame`: a store's rows as a DataFrame of ``key``, ``value`` and
  ``partition`` (what ``state export`` writes).

Rows are normalised before anything is shown or written: key and value are rebuilt as plain
structs of their fields (a join's buffered value carries a hidden field that breaks Spark's
JSON writer otherwise), and fields of type ``void`` (a deduplication's placeholder value) are
dropped, so a deduplication's rows have no value. A key filter is a full scan: Spark's state
reader has no lookup by key, so finding one key costs reading every partition of the store.

pyspark is imported by the functions that need it only: this module is imported by commands
that have already decided to start Spark.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flinkish_cli.errors import StateError
from flinkish_cli.savepoints.layout import StateOperator
from flinkish_cli.spark.failures import spark_cause
from flinkish_cli.state.metadata import OperatorMetadata, pick_store, read_metadata, stores_of
from flinkish_cli.state.model import (
    DEFAULT_STORE,
    OperatorState,
    QueryState,
    StateListing,
    StateRow,
    StoreRows,
    StoreState,
)
from flinkish_cli.state.source import QuerySource, StateSource

#: The Spark master of the reading session: two threads, as many as the tests' and a small
#: machine's cores; reading is one task per state partition.
MASTER = "local[2]"
#: What the user sees before Spark starts (on a terminal, or with --verbose).
STARTING = "Starting Spark to read the state..."
#: ``state show``: a store's rows (a key's, with ``--key``) are collected in one scan up to
#: this many and ordered here; past it, Spark counts and orders them itself (three scans).
COLLECT_LIMIT = 10_000
#: The columns of a store's rows that are not its value.
_NOT_VALUE = ("key", "partition_id")


@contextmanager
def spark_session(
    conf: Mapping[str, str],
    notice: Callable[[str], None] | None = None,
    class_data_sharing: bool = True,
) -> Iterator[Any]:
    """A quiet local Spark session for reading state (mapping the drivers' class-data
    sharing archive when asked and there is one); ``notice`` hears :data:`STARTING`."""
    from flinkish_cli.spark.local import local_session

    if notice is not None:
        notice(STARTING)
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        **conf,
    }
    with local_session(MASTER, settings, class_data_sharing=class_data_sharing) as spark:
        yield spark


def spark_failure(what: str, error: BaseException, verb: str = "read") -> StateError:
    """Spark's failure to ``verb`` ``what`` in one line (the line of Spark's message that
    says what went wrong), and what to do."""
    return StateError(
        f"Spark could not {verb} {what}: {spark_cause(error)}",
        "A state file may be damaged: read another savepoint, or run with --verbose for "
        "Spark's whole message.",
    )


class StateReader:
    """Spark's state reader over one :class:`~.source.StateSource`."""

    def __init__(self, spark: Any, source: StateSource) -> None:
        self.spark = spark
        self.source = source
        self._metadata: dict[str, list[dict[str, Any]]] = {}
        self._frames: dict[tuple[str, int, str], Any] = {}

    # -- what there is -----------------------------------------------------------------
    def metadata(self, query: QuerySource, operator_id: int) -> OperatorMetadata | None:
        """Spark's metadata of an operator: its file, read directly, else (a file Spark
        wrote in another form) what Spark's ``state-metadata`` source gives."""
        found = read_metadata(query.read_path, operator_id, query.batch)
        if found is not None:
            return found
        if query.name not in self._metadata:
            try:
                rows = self.spark.read.format("state-metadata").load(query.read_path).collect()
                self._metadata[query.name] = [row.asDict() for row in rows]
            except Exception:  # no metadata at all: the layout still says a lot
                self._metadata[query.name] = []
        rows = [m for m in self._metadata[query.name] if m["operatorId"] == operator_id]
        return OperatorMetadata.from_spark(rows)

    def operator(self, query: QuerySource, layout: StateOperator) -> OperatorState:
        """An operator and its stores (schemas filled in, rows not counted)."""
        metadata = self.metadata(query, layout.operator_id)
        operator = OperatorState(
            operator_id=layout.operator_id,
            spark_name=metadata.name if metadata else None,
            partitions=(metadata.partitions if metadata else 0) or layout.partitions,
            spark_stores=metadata.stores if metadata else list(layout.stores or [DEFAULT_STORE]),
            stores=stores_of(metadata, layout.stores),
            bytes=query.state_bytes(layout.operator_id),
        )
        for store in operator.stores:
            if store.option is None:
                store.bytes = operator.bytes
            elif store.option[0] == "joinSide":
                store.bytes = query.state_bytes(layout.operator_id, f"{store.name}-")
            schema = self._raw(query, operator, store).schema
            key, value = _split_schema(schema)
            store.key_schema, store.key_schema_json = key.simpleString(), key.jsonValue()
            store.value_schema, store.value_schema_json = value.simpleString(), value.jsonValue()
        return operator

    def store(self, query: QuerySource, operator: OperatorState, name: str | None) -> StoreState:
        """The store ``--store`` names (the only one when None); refuses another."""
        return pick_store(query.name, operator.operator_id, operator.kind, operator.stores, name)

    def listing(
        self, query: str | None = None, operator: int | None = None, rows: bool = True
    ) -> StateListing:
        """Every query (or the one named) with its operators, stores, schemas and, with
        ``rows``, each store's row count."""
        chosen = self.source.select(query, operator)
        listing = StateListing(self.source.kind, self.source.path, self.source.job_id)
        for q in self.source.queries:
            if query is not None and q.name != query:
                continue
            state = QueryState(q.name, q.location, q.batch, source_offsets=q.source_offsets)
            for source_query, layout in chosen:
                if source_query is not q or q.batch < 0:
                    continue
                op = self.operator(q, layout)
                if rows:
                    for store in op.stores:
                        store.rows = self.count(q, op, store)
                state.operators.append(op)
            listing.queries.append(state)
        return listing

    # -- rows ----------------------------------------------------------------------------
    def _raw(self, query: QuerySource, operator: OperatorState, store: StoreState) -> Any:
        """Spark's DataFrame of the store (made once: its schema and its rows)."""
        name = (query.name, operator.operator_id, store.name)
        if name not in self._frames:
            self._frames[name] = self._load(query, operator, store)
        return self._frames[name]

    def _load(self, query: QuerySource, operator: OperatorState, store: StoreState) -> Any:
        reader = (
            self.spark.read.format("statestore")
            .option("batchId", query.batch)
            .option("operatorId", operator.operator_id)
        )
        if store.option is not None:
            reader = reader.option(*store.option)
        try:
            return reader.load(query.read_path)
        except Exception as error:
            raise spark_failure(_what(query, operator, store), error) from error

    def frame(self, query: QuerySource, operator: OperatorState, store: StoreState) -> Any:
        """The store's rows: ``key`` and ``value`` as plain structs (no value column when
        the store has none), ``partition``."""
        from pyspark.sql import functions as F

        raw = self._raw(query, operator, store)
        key = _rebuilt(F.col("key"), raw.schema["key"].dataType)
        values = [f for f in raw.schema.fields if f.name not in _NOT_VALUE]
        columns = [key.alias("key")]
        value = _value_column(values)
        if value is not None:
            columns.append(value.alias("value"))
        columns.append(F.col("partition_id").alias("partition"))
        return raw.select(*columns)

    def count(self, query: QuerySource, operator: OperatorState, store: StoreState) -> int:
        try:
            return int(self._raw(query, operator, store).count())
        except StateError:
            raise
        except Exception as error:
            raise spark_failure(_what(query, operator, store), error) from error

    def show(
        self,
        query: QuerySource,
        operator: OperatorState,
        store: StoreState,
        key: str | None = None,
        limit: int = 20,
    ) -> StoreRows | None:
        """The store's rows, biggest keys first, at most ``limit``; with ``key``, only the
        rows of the keys it matches (None when the key cannot match this store's keys)."""
        from pyspark.sql import functions as F

        frame = self.frame(query, operator, store)
        if key is not None:
            condition = key_condition(frame.schema["key"].dataType, key)
            if condition is None:
                return None
            frame = frame.where(condition)
        has_value = "value" in frame.columns
        sized = frame.select(
            F.to_json("key").alias("k"),
            F.to_json("value").alias("v") if has_value else F.lit(None).alias("v"),
            "partition",
        ).withColumn("b", F.octet_length("k") + F.coalesce(F.octet_length("v"), F.lit(0)))
        result = StoreRows(query.name, operator.operator_id, store.name, query.batch)
        try:
            collected = sized.limit(COLLECT_LIMIT + 1).collect()
            if len(collected) <= COLLECT_LIMIT:
                result.rows, result.total = _biggest_first(collected, limit), len(collected)
                return result
            result.total = int(frame.count())
            if _unique_keys(store):
                top = sized.orderBy(F.desc("b"), "k").limit(limit).collect()
            else:
                from pyspark.sql.window import Window

                keys = (
                    sized.groupBy("k")
                    .agg(F.count("*").alias("n"), F.sum("b").alias("kb"))
                    .orderBy(F.desc("kb"), F.desc("n"), "k")
                    .limit(limit)
                )
                within = Window.partitionBy("k").orderBy(F.desc("b"), "v")
                top = (
                    sized.join(F.broadcast(keys), "k")
                    .withColumn("r", F.row_number().over(within))
                    .where(F.col("r") <= limit)
                    .collect()
                )
            result.rows = _biggest_first(top, limit)
        except Exception as error:
            raise spark_failure(_what(query, operator, store), error) from error
        return result


def _what(query: QuerySource, operator: OperatorState, store: StoreState) -> str:
    return (
        f"the state of query '{query.name}', operator {operator.operator_id} "
        f"({operator.kind}), store '{store.name}' at batch {query.batch}"
    )


def _unique_keys(store: StoreState) -> bool:
    """Whether each key of the store has one row (so a row's size is its key's)."""
    if store.option is None:
        return True
    return store.variable_type == "ValueState"


def _split_schema(schema: Any) -> tuple[Any, Any]:
    """Spark's key type, and its value type (the ``value`` column's, or a struct of the
    value columns: a list's ``list_element``, a map's ``user_map_key``/``user_map_value``)."""
    from pyspark.sql.types import StructType

    key = schema["key"].dataType
    values = [f for f in schema.fields if f.name not in _NOT_VALUE]
    if len(values) == 1 and values[0].name == "value":
        return key, values[0].dataType
    return key, StructType(values)


def _is_void(data_type: Any) -> bool:
    from pyspark.sql.types import NullType, StructType

    if isinstance(data_type, NullType):
        return True
    return isinstance(data_type, StructType) and all(_is_void(f.dataType) for f in data_type)


def _rebuilt(column: Any, data_type: Any) -> Any:
    """``column`` as a fresh struct of its fields, ``void`` fields left out (None when
    nothing is left)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if not isinstance(data_type, StructType):
        return column
    fields = [f for f in data_type.fields if not _is_void(f.dataType)]
    if not fields:
        return None
    return F.struct(*[column.getField(f.name).alias(f.name) for f in fields])


def _value_column(values: list[Any]) -> Any:
    from pyspark.sql import functions as F

    if len(values) == 1 and values[0].name == "value":
        return _rebuilt(F.col("value"), values[0].dataType)
    parts = []
    for field in values:
        rebuilt = _rebuilt(F.col(field.name), field.dataType)
        if rebuilt is not None:
            parts.append(rebuilt.alias(field.name))
    return F.struct(*parts) if parts else None


def _biggest_first(rows: list[Any], limit: int) -> list[StateRow]:
    """Rows (``k``, ``v``, ``partition``, ``b``, and their key's ``n`` rows and ``kb``
    bytes when Spark summed them) ordered by their key's size: its bytes, then its number
    of rows, then the key's JSON; a key's rows biggest first, then by the value's JSON (as
    Spark orders them); at most ``limit``."""
    sizes: dict[str, tuple[int, int]] = {}
    summed = bool(rows) and "kb" in rows[0].asDict()
    for row in rows:
        if summed:
            sizes[row["k"]] = (int(row["kb"]), int(row["n"]))
        else:
            size = sizes.get(row["k"], (0, 0))
            sizes[row["k"]] = (size[0] + int(row["b"]), size[1] + 1)
    ordered = sorted(
        rows, key=lambda r: (-sizes[r["k"]][0], -sizes[r["k"]][1], r["k"], -r["b"], r["v"] or "")
    )
    return [
        StateRow(
            key=json.loads(row["k"]),
            value=json.loads(row["v"]) if row["v"] is not None else None,
            partition=int(row["partition"]),
            key_rows=sizes[row["k"]][1],
            key_bytes=sizes[row["k"]][0],
        )
        for row in ordered[:limit]
    ]


def key_condition(key_type: Any, text: str) -> Any:
    """The filter ``--key`` means for a store whose key is ``key_type``, or None when it
    cannot match it (a JSON object naming a field the key does not have).

    A JSON object names key fields and their values (``{"key": "k0"}``; nested objects for
    struct fields such as a window's start and end). Anything else is one value compared
    with every top-level field of the key that is not a struct: ``--key k0`` finds the
    key ``k0`` of a count, the join key ``k0`` of a join and every session of ``k0``.
    Values are cast to the field's type, as Spark would (``5`` matches a long 5, an ISO
    timestamp a timestamp)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    if isinstance(parsed, dict):
        return _fields_equal(F.col("key"), key_type, parsed)
    value = parsed if isinstance(parsed, str) else json.dumps(parsed)
    conditions = [
        F.col("key").getField(f.name) == F.lit(value).try_cast(f.dataType)
        for f in key_type.fields
        if not isinstance(f.dataType, StructType)
    ]
    if not conditions:
        return None
    combined = conditions[0]
    for condition in conditions[1:]:
        combined = combined | condition
    return F.coalesce(combined, F.lit(False))


def _fields_equal(column: Any, data_type: Any, wanted: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if not isinstance(data_type, StructType):
        return None
    names = {f.name: f.dataType for f in data_type.fields}
    combined = F.lit(True)
    for name, value in wanted.items():
        if name not in names:
            return None
        field = column.getField(name)
        if isinstance(value, dict):
            nested = _fields_equal(field, names[name], value)
            if nested is None:
                return None
            combined = combined & nested
        elif value is None:
            combined = combined & field.isNull()
        elif isinstance(value, list):
            return None
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            combined = combined & (field == F.lit(text).try_cast(names[name]))
    return F.coalesce(combined, F.lit(False))
