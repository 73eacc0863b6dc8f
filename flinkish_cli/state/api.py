"""The state package's entry points: list, show and export the state of what a user names.

Each function checks everything it can before Spark starts (what is named, the query and
operator chosen, an export's target), then starts one local Spark session (``notice`` hears
"Starting Spark to read the state..." first) only when there is state to read, reads, and
closes the session and any temporary copy. A savepoint or checkpoint without stateful
queries is listed without Spark.

These are what the job client calls (:class:`flinkish_cli.client.jobs.JobClient`), and what
the upgrade check reuses (:func:`list_state` gives each store's key and value schemas).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import StateError
from flinkish_cli.state.model import QueryState, StateListing, StoreRows
from flinkish_cli.state.source import NOTHING_READ, StateSource, open_source

if TYPE_CHECKING:
    from flinkish_cli.state.export import Export
    from flinkish_cli.state.reader import StateReader

Notice = Callable[[str], None]


#: Settings of the job's translation a reading session takes too: the driver's JVM options
#: (``env.java.opts.all``/``.jobmanager``: it is a driver).
_DRIVER_KEYS = ("spark.driver.extraJavaOptions",)


def spark_conf(config: Any) -> dict[str, str]:
    """The Spark settings a reading session takes from the configuration: Hadoop's (file
    systems, credentials) and the driver's JVM options; the state's own settings come from
    its checkpoint."""
    from flinkish_cli.config import to_spark

    conf = to_spark(config).conf
    return {k: v for k, v in conf.items() if k.startswith("spark.hadoop.") or k in _DRIVER_KEYS}


@contextmanager
def _reading(source: StateSource, config: Any, notice: Notice | None) -> Iterator[StateReader]:
    from flinkish_cli.spark.install import check_java
    from flinkish_cli.state.reader import StateReader, spark_session

    check_java()
    sharing = bool(config.get("env.java.class-data-sharing"))
    with spark_session(spark_conf(config), notice, sharing) as spark:
        yield StateReader(spark, source)


def _without_state(source: StateSource, query: str | None) -> StateListing:
    listing = StateListing(source.kind, source.path, source.job_id)
    for q in source.queries:
        if query is None or q.name == query:
            listing.queries.append(
                QueryState(q.name, q.location, q.batch, source_offsets=q.source_offsets)
            )
    return listing


def list_state(
    target: str,
    config: Any,
    query: str | None = None,
    operator: int | None = None,
    notice: Notice | None = None,
    verify: bool = True,
) -> StateListing:
    """``state ls``: the queries of ``target`` (or the one named), their stateful operators
    (or the one named), stores, key and value schemas, partitions, rows and bytes
    (``verify`` false: a savepoint's files were just checked by the caller)."""
    with open_source(target, config, verify) as source:
        chosen = source.select(query, operator)
        if not any(q.batch >= 0 for q, _ in chosen):
            return _without_state(source, query)
        with _reading(source, config, notice) as reader:
            return reader.listing(query, operator)


def show_state(
    target: str,
    config: Any,
    query: str | None = None,
    operator: int | None = None,
    store: str | None = None,
    key: str | None = None,
    limit: int = 20,
    notice: Notice | None = None,
) -> list[StoreRows]:
    """``state show``: each chosen store's rows, biggest keys first, at most ``limit`` per
    store; with ``key``, only the rows of the keys it matches."""
    if limit < 1:
        raise StateError(f"--limit {limit}: show at least one row.", "Give --limit 1 or more.")
    with open_source(target, config) as source:
        chosen = _stateful(source, query, operator)
        _check_store(chosen, store)
        shown = []
        with _reading(source, config, notice) as reader:
            for q, layout in chosen:
                op = reader.operator(q, layout)
                stores = [reader.store(q, op, store)] if store is not None else op.stores
                for one in stores:
                    rows = reader.show(q, op, one, key, limit)
                    if rows is not None:
                        shown.append(rows)
        if key is not None and not shown:
            raise StateError(
                f"--key {key}: no store chosen has a key with the fields it names.",
                "'flinkish state ls' shows each store's key schema; give a value alone to "
                "compare it with every field of the key.",
            )
        return shown


def export_state(
    target: str,
    directory: str,
    config: Any,
    fmt: str = "parquet",
    query: str | None = None,
    operator: int | None = None,
    store: str | None = None,
    overwrite: bool = False,
    notice: Notice | None = None,
) -> Export:
    """``state export``: each chosen store written under ``directory`` (local or S3) as
    Parquet or JSON lines (:mod:`.export`)."""
    from flinkish_cli.state.export import FORMATS, check_target, export_stores

    if fmt not in FORMATS:
        raise StateError(
            f"--format {fmt}: not a format state export writes.", "Use parquet or jsonl."
        )
    with open_source(target, config) as source:
        chosen = _stateful(source, query, operator)
        _check_store(chosen, store)
        destination = check_target(directory, config, overwrite)
        with _reading(source, config, notice) as reader:
            stores = []
            for q, layout in chosen:
                op = reader.operator(q, layout)
                picked = [reader.store(q, op, store)] if store is not None else op.stores
                stores += [(q, op, one) for one in picked]
            return export_stores(reader, stores, destination, fmt)


def _stateful(source: StateSource, query: str | None, operator: int | None) -> list[Any]:
    chosen = [(q, o) for q, o in source.select(query, operator) if q.batch >= 0]
    if not chosen:
        what = f"Query '{query}' of {source.path}" if query is not None else source.path
        raise StateError(
            f"{what} holds no state: no stateful operator has committed a batch.",
            f"{NOTHING_READ}. 'flinkish state ls {source.path}' lists its queries.",
        )
    return chosen


def _check_store(chosen: list[Any], store: str | None) -> None:
    """Refuse a ``--store`` an operator does not have before Spark starts, where its
    metadata says which stores it has (Spark's reader checks the others)."""
    from flinkish_cli.state.metadata import pick_store, read_metadata, stores_of
    from flinkish_cli.state.model import operator_kind

    if store is None:
        return
    for query, layout in chosen:
        metadata = read_metadata(query.read_path, layout.operator_id, query.batch)
        if metadata is not None:
            stores = stores_of(metadata, layout.stores)
            pick_store(query.name, layout.operator_id, operator_kind(metadata.name), stores, store)
