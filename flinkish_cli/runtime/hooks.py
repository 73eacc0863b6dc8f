"""Patches on pyspark that make an unmodified script a flinkish job.

``DataStreamWriter.start()`` and ``toTable()`` no longer start a query on the spot: they
validate the query's name (its stable identity), record it, and return a
:class:`DeferredQuery`. The recorded queries start together, each with the checkpoint
location and trigger flinkish chose, as soon as the script waits on any of them, touches one,
or returns. A script whose second query has no name therefore fails before its first query
has processed anything.

A ``checkpointLocation`` or ``spark.sql.streaming.checkpointLocation`` set by the script is
ignored (with a warning in the job's log): flinkish owns where checkpoints live, because that
is what savepoints and resumption rely on. A trigger set by the script is kept, except in
BATCH mode where every query processes the available input and stops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from flinkish_cli.runtime.identity import validate_query_name

log = logging.getLogger("flinkish.runtime")

_CHECKPOINT_OPTION = "checkpointlocation"


class QueryStarter(Protocol):
    """What the hooks call into: the job runtime (or the ``info`` planner)."""

    def before_start(self, names: list[str]) -> None:
        """The queries about to start (all recorded so far); may refuse them."""

    def configure(self, writer: Any, name: str) -> None:
        """Set the query's checkpoint location and trigger on ``writer``."""

    def started(self, name: str, query: Any) -> None:
        """A query has started."""

    def all_started(self) -> None:
        """Every query recorded so far has started."""

    @property
    def dry_run(self) -> bool:
        """True when queries are only planned (``flinkish info``), never started."""


@dataclass
class PendingQuery:
    """A query the script has asked to start."""

    name: str
    writer: Any
    start: Callable[[], Any]
    proxy: DeferredQuery


class DeferredQuery:
    """Stands for a ``StreamingQuery`` until the job's queries start together."""

    def __init__(self, controller: QueryController, name: str) -> None:
        self._controller = controller
        self._name = name
        self._query: Any = None

    @property
    def name(self) -> str:
        return self._name

    def _bind(self, query: Any) -> None:
        self._query = query

    def __getattr__(self, attribute: str) -> Any:
        if self._query is None:
            self._controller.start_pending()
        if self._query is None:  # a dry run: nothing ever starts
            if attribute in ("awaitTermination", "stop", "processAllAvailable"):
                return lambda *args, **kwargs: None
            if attribute == "isActive":
                return False
            raise AttributeError(
                f"'{attribute}' of query '{self._name}' is not available while planning"
            )
        return getattr(self._query, attribute)

    def __repr__(self) -> str:
        state = "started" if self._query is not None else "pending"
        return f"<flinkish query '{self._name}' ({state})>"


class QueryController:
    """Collects the script's queries and starts them together."""

    def __init__(self, starter: QueryStarter) -> None:
        self.starter = starter
        self.pending: list[PendingQuery] = []
        self.names: list[str] = []
        self.writers: dict[str, Any] = {}

    def defer(self, writer: Any, start: Callable[[], Any]) -> DeferredQuery:
        """Validate and record a query the script started; it runs later, with the others."""
        name = validate_query_name(getattr(writer, "_flinkish_name", None), len(self.names) + 1)
        if name in self.names:
            from flinkish_cli.errors import JobError

            raise JobError(
                f"Two streaming queries of the job are named '{name}'.",
                "Each query needs its own name: it identifies the query's checkpoint.",
            )
        user_checkpoint = getattr(writer, "_flinkish_user_checkpoint", None)
        if user_checkpoint:
            log.warning(
                "Query '%s': checkpointLocation %s set by the script is ignored; "
                "flinkish manages the query's checkpoint.",
                name,
                user_checkpoint,
            )
        self.names.append(name)
        self.writers[name] = writer
        proxy = DeferredQuery(self, name)
        self.pending.append(PendingQuery(name, writer, start, proxy))
        return proxy

    def start_pending(self) -> None:
        """Start every recorded query, in the order the script started them."""
        if self.starter.dry_run or not self.pending:
            return
        self.starter.before_start([item.name for item in self.pending])
        while self.pending:
            item = self.pending.pop(0)
            self.starter.configure(item.writer, item.name)
            query = item.start()
            item.proxy._bind(query)
            self.starter.started(item.name, query)
        self.starter.all_started()


_originals: dict[str, Any] = {}


def install(controller: QueryController) -> None:
    """Patch pyspark for ``controller``; calling it again switches to another controller."""
    from pyspark.sql.session import SparkSession
    from pyspark.sql.streaming.query import StreamingQueryManager
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    if not _originals:
        for cls, names in (
            (DataStreamWriter, ("option", "options", "queryName", "trigger", "start", "toTable")),
            (StreamingQueryManager, ("awaitAnyTermination",)),
            (SparkSession, ("stop",)),
        ):
            for attribute in names:
                _originals[f"{cls.__name__}.{attribute}"] = getattr(cls, attribute)
    original = _originals

    def option(self: Any, key: str, value: Any) -> Any:
        if key.lower() == _CHECKPOINT_OPTION:
            self._flinkish_user_checkpoint = value
            return self
        return original["DataStreamWriter.option"](self, key, value)

    def options(self: Any, **opts: Any) -> Any:
        for key in [k for k in opts if k.lower() == _CHECKPOINT_OPTION]:
            self._flinkish_user_checkpoint = opts.pop(key)
        return original["DataStreamWriter.options"](self, **opts)

    def query_name(self: Any, queryName: str) -> Any:
        self._flinkish_name = queryName
        return original["DataStreamWriter.queryName"](self, queryName)

    def trigger(self: Any, **kwargs: Any) -> Any:
        self._flinkish_trigger = kwargs
        return original["DataStreamWriter.trigger"](self, **kwargs)

    def _prepare(self: Any, fmt: Any, output_mode: Any, partition_by: Any, name: Any, opts: Any):
        options(self, **opts)
        if output_mode is not None:
            self.outputMode(output_mode)
        if partition_by is not None:
            self.partitionBy(partition_by)
        if fmt is not None:
            self.format(fmt)
        if name is not None:
            query_name(self, name)

    def start(
        self: Any,
        path: str | None = None,
        format: str | None = None,
        outputMode: str | None = None,
        partitionBy: Any = None,
        queryName: str | None = None,
        **opts: Any,
    ) -> Any:
        _prepare(self, format, outputMode, partitionBy, queryName, opts)
        begin = original["DataStreamWriter.start"]
        return controller.defer(self, lambda: begin(self) if path is None else begin(self, path))

    def to_table(
        self: Any,
        tableName: str,
        format: str | None = None,
        outputMode: str | None = None,
        partitionBy: Any = None,
        queryName: str | None = None,
        **opts: Any,
    ) -> Any:
        _prepare(self, format, outputMode, partitionBy, queryName, opts)
        begin = original["DataStreamWriter.toTable"]
        return controller.defer(self, lambda: begin(self, tableName))

    def await_any_termination(self: Any, timeout: int | None = None) -> Any:
        controller.start_pending()
        if controller.starter.dry_run:
            return True
        return original["StreamingQueryManager.awaitAnyTermination"](self, timeout)

    def session_stop(self: Any) -> None:
        log.info("The script's SparkSession.stop() is deferred until all queries have ended.")

    DataStreamWriter.option = option  # type: ignore[method-assign]
    DataStreamWriter.options = options  # type: ignore[method-assign]
    DataStreamWriter.queryName = query_name  # type: ignore[method-assign]
    DataStreamWriter.trigger = trigger  # type: ignore[method-assign]
    DataStreamWriter.start = start  # type: ignore[method-assign]
    DataStreamWriter.toTable = to_table  # type: ignore[method-assign]
    StreamingQueryManager.awaitAnyTermination = await_any_termination  # type: ignore[method-assign]
    SparkSession.stop = session_stop  # type: ignore[method-assign]


def set_writer_option(writer: Any, key: str, value: str) -> None:
    """Set an option on ``writer`` bypassing the patches (flinkish's own settings)."""
    writer._jwrite = writer._jwrite.option(key, value)


def set_writer_trigger(writer: Any, **kwargs: Any) -> None:
    """Set a trigger on ``writer`` bypassing the patches."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    _originals.get("DataStreamWriter.trigger", DataStreamWriter.trigger)(writer, **kwargs)


def stop_session(spark: Any) -> None:
    """Really stop the session (the script's own ``stop()`` is deferred)."""
    stop = _originals.get("SparkSession.stop")
    if stop is not None:
        stop(spark)
    else:
        spark.stop()
