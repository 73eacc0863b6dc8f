"""The patches on pyspark that make an unmodified script a flinkish job.

One documented patch point per pyspark class, for each
:class:`~flinkish_cli.runtime.flavours.flavour.Flavour` (classic and Spark Connect classes
alike), tested against the pinned pyspark version:

``DataStreamWriter``
    ``option``/``options``/``queryName``/``outputMode``/``trigger``/``format``/``foreach``/
    ``foreachBatch`` record what the script set and pass it on unchanged. ``start``/
    ``toTable`` start the query at once, as Spark does, after the :class:`QueryStarter` has
    given it its identity, its checkpoint (restored from a savepoint when the job resumes)
    and its trigger; they return Spark's own ``StreamingQuery``.
``StreamingQuery``
    ``awaitTermination``/``processAllAvailable``: the program's first wait (see below).
``StreamingQueryManager``
    ``awaitAnyTermination``: the first wait. ``addListener``: listeners the script adds are
    recorded, so that a restarted attempt starts without the previous attempt's listeners.
``DataFrameWriter`` (classic)
    ``format``/``option``/``options`` record what the script set; ``save`` of a Kafka
    writer inside a ``foreachBatch`` call of an ``exactly-once`` query hands the batch to
    that query's transactional writer (:data:`batch_kafka_writer`); every other ``save`` is
    Spark's.
``SparkSession`` (and classic ``SparkContext``)
    ``stop``: stops the job's queries, as Spark's ``stop()`` does, but keeps the session: the
    job still records its end, and a restarted attempt needs the session.

The program's *first wait* (its first ``awaitTermination``, ``awaitAnyTermination`` or
``processAllAvailable``, or its return) is where a Flink program would call ``execute()``:
the queries started so far are the job, and a job resuming from a savepoint checks there
that every query of the savepoint has found its query. A wait the program begins after the
runtime stopped its queries (a cancel, a stop, a rescale, a failed attempt) raises
:class:`ProgramEnded` instead, which ends the program as its job has ended: a script that
waits in a loop (``while True: query.processAllAvailable()``) would otherwise never return,
as its waits return at once once nothing runs. The wait that was under way returns as
Spark's does, so what the script does right after it still runs.

Patched methods look up the current :class:`QueryController` when called, so installing
another controller (a restarted attempt, ``flinkish info``'s dry run) swaps a pointer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from flinkish_cli.runtime.flavours.flavour import Flavour
from flinkish_cli.runtime.queries.identity import (
    Identities,
    QueryIdentity,
    QueryShape,
    check_distinct,
)

log = logging.getLogger("flinkish.runtime")

_CHECKPOINT_OPTION = "checkpointlocation"


class ProgramEnded(BaseException):
    """Raised at a wait the program begins after the runtime stopped its queries: the
    program ends there (the runtime takes it as the program's return). A ``BaseException``,
    as ``SystemExit`` is, so that a script's ``except Exception`` does not hold it."""


class QueryStarter(Protocol):
    """What the hooks call into: the job runtime (or the ``info`` planner)."""

    @property
    def dry_run(self) -> bool:
        """True when queries are only planned (``flinkish info``), never started."""

    @property
    def stopped(self) -> bool:
        """True once the runtime has stopped this attempt's queries (the job ends or the
        attempt failed): the program's next wait ends it."""

    def configure(self, writer: Any, query: QueryIdentity, spark: Any) -> None:
        """Give ``writer`` its checkpoint location and trigger; restore its state first."""

    def started(self, query: QueryIdentity, handle: Any) -> None:
        """A query has started."""

    def first_wait(self) -> None:
        """The program waits for its queries for the first time (or returned)."""

    def listener_added(self, manager: Any, listener: Any) -> None:
        """The script added a StreamingQueryListener."""

    def session_stopped(self) -> None:
        """The script called ``spark.stop()``."""


class PlannedQuery:
    """What ``start()`` returns in a dry run: a query that never runs."""

    def __init__(self, query: QueryIdentity) -> None:
        self.name = query.spark_name
        self.id = self.runId = None
        self.isActive = False
        self.lastProgress = None
        self.recentProgress: list[Any] = []
        self.status: dict[str, Any] = {}

    def awaitTermination(self, timeout: int | None = None) -> bool | None:
        return True if timeout is not None else None

    def processAllAvailable(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def exception(self) -> None:
        return None


class QueryController:
    """The queries of one run (attempt) of the program."""

    def __init__(self, starter: QueryStarter, flavour: Flavour) -> None:
        self.starter = starter
        self.flavour = flavour
        self.identities = Identities()
        self.writers: dict[str, Any] = {}  # identity -> writer (the planner explains them)
        self.handles: dict[str, Any] = {}  # identity -> StreamingQuery
        self.waited = False

    def start(self, writer: Any, begin: Callable[[], Any]) -> Any:
        """Give the query its identity, checkpoint and trigger, then start it (``begin``)."""
        shape = QueryShape(self.flavour.sink_of(writer), self.flavour.sources_of(writer))
        query = self.identities.assign(getattr(writer, "_flinkish_name", None), shape)
        active = [name for name, handle in self.handles.items() if _is_active(handle)]
        check_distinct(query.identity, active)
        self.writers[query.identity] = writer
        if self.starter.dry_run:
            return PlannedQuery(query)
        self.starter.configure(writer, query, self.flavour.session_of(writer))
        self.flavour.ship_job_code()
        handle = begin()
        self.handles[query.identity] = handle
        self.starter.started(query, handle)
        return handle

    def program_waits(self) -> None:
        """A wait of the program's: :class:`ProgramEnded` once the runtime stopped its
        queries, else a :meth:`wait_point`."""
        if self.starter.stopped:
            raise ProgramEnded
        self.wait_point()

    def wait_point(self) -> None:
        """The program's first wait: the job is complete (see the module's docstring)."""
        if not self.waited:
            self.waited = True
            if not self.starter.dry_run:
                self.starter.first_wait()


_controller: QueryController | None = None
#: Set by the runtime while a ``foreachBatch`` call of an ``exactly-once`` query runs (on
#: the thread Spark calls it on): takes a Kafka ``DataFrameWriter.save``'s DataFrame and
#: options and writes them, returning True; None outside such a call.
batch_kafka_writer = threading.local()
#: pyspark class -> its original methods, saved once before the first patch.
_originals: dict[type, dict[str, Any]] = {}


def current() -> QueryController | None:
    """The installed controller (None before :func:`install`)."""
    return _controller


def install(controller: QueryController) -> None:
    """Make ``controller`` the one the patches call; patch its flavour's classes once."""
    global _controller
    _controller = controller
    flavour = controller.flavour
    if flavour.writer not in _originals:
        _patch_writer(flavour.writer)
        _patch_query(flavour.query)
        _patch_manager(flavour.manager)
        _patch_stop(flavour.session)
        if flavour.context is not None:
            _patch_stop(flavour.context)
        if flavour.batch_writer is not None:
            _patch_batch_writer(flavour.batch_writer)


def original(cls: type, name: str) -> Any:
    """The method ``name`` of ``cls`` as pyspark defines it (before any patch)."""
    return _originals.get(cls, {}).get(name) or getattr(cls, name)


def _save(cls: type, names: tuple[str, ...]) -> dict[str, Any]:
    saved = _originals.setdefault(cls, {})
    for name in names:
        saved.setdefault(name, getattr(cls, name))
    return saved


def _active() -> QueryController:
    if _controller is None:  # pragma: no cover - install() always precedes the program
        raise RuntimeError("flinkish's hooks are not installed")
    return _controller


def _ship_job_code() -> None:
    if _controller is not None:
        _controller.flavour.ship_job_code()


def _is_active(handle: Any) -> bool:
    try:
        return bool(handle.isActive)
    except Exception:
        return False


def _patch_writer(cls: type) -> None:
    """``DataStreamWriter``: record what the script set; start through the controller."""
    orig = _save(
        cls,
        (
            "option",
            "options",
            "queryName",
            "outputMode",
            "trigger",
            "format",
            "foreach",
            "foreachBatch",
            "start",
            "toTable",
        ),
    )

    def record(self: Any, key: str, value: Any) -> None:
        if value is not None:
            if not hasattr(self, "_flinkish_options"):
                self._flinkish_options = {}
            self._flinkish_options[str(key)] = str(value)
        if value is not None and str(key).lower() == _CHECKPOINT_OPTION:
            self._flinkish_checkpoint = str(value)
        elif value is not None and str(key).lower() == "path":
            self._flinkish_path = str(value)

    def option(self: Any, key: str, value: Any) -> Any:
        record(self, key, value)
        return orig["option"](self, key, value)

    def options(self: Any, **opts: Any) -> Any:
        for key, value in opts.items():
            record(self, key, value)
        return orig["options"](self, **opts)

    def query_name(self: Any, queryName: str) -> Any:
        self._flinkish_name = queryName
        return orig["queryName"](self, queryName)

    def output_mode(self: Any, outputMode: str) -> Any:
        self._flinkish_output_mode = str(outputMode)
        return orig["outputMode"](self, outputMode)

    def trigger(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig["trigger"](self, *args, **kwargs)
        self._flinkish_trigger = dict(kwargs)
        return result

    def format_(self: Any, source: str) -> Any:
        self._flinkish_sink = str(source).lower()
        return orig["format"](self, source)

    def foreach(self: Any, f: Any) -> Any:
        self._flinkish_sink = "foreach"
        _ship_job_code()
        return orig["foreach"](self, f)

    def foreach_batch(self: Any, func: Any) -> Any:
        self._flinkish_sink = "foreachBatch"
        self._flinkish_batch_function = func
        _ship_job_code()
        return orig["foreachBatch"](self, func)

    def prepare(self: Any, fmt: Any, mode: Any, partition_by: Any, name: Any, opts: Any) -> None:
        """What Spark's own start() does with its arguments, through the patches above."""
        options(self, **opts)
        if mode is not None:
            self.outputMode(mode)
        if partition_by is not None:
            self.partitionBy(partition_by)
        if fmt is not None:
            format_(self, fmt)
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
        prepare(self, format, outputMode, partitionBy, queryName, opts)
        if path is not None:  # start(path) is option("path", path), as Spark's own start()
            record(self, "path", path)
        begin = orig["start"]
        return _active().start(self, lambda: begin(self) if path is None else begin(self, path))

    def to_table(
        self: Any,
        tableName: str,
        format: str | None = None,
        outputMode: str | None = None,
        partitionBy: Any = None,
        queryName: str | None = None,
        **opts: Any,
    ) -> Any:
        prepare(self, format, outputMode, partitionBy, queryName, opts)
        self._flinkish_sink = "table"
        begin = orig["toTable"]
        return _active().start(self, lambda: begin(self, tableName))

    patches = {
        "option": option,
        "options": options,
        "queryName": query_name,
        "outputMode": output_mode,
        "trigger": trigger,
        "format": format_,
        "foreach": foreach,
        "foreachBatch": foreach_batch,
        "start": start,
        "toTable": to_table,
    }
    for name, patch in patches.items():
        patch.__doc__ = getattr(orig[name], "__doc__", None)
        setattr(cls, name, patch)


def _patch_query(cls: type) -> None:
    """``StreamingQuery``: ``awaitTermination`` and ``processAllAvailable`` are waits."""
    orig = _save(cls, ("awaitTermination", "processAllAvailable"))

    def await_termination(self: Any, *args: Any, **kwargs: Any) -> Any:
        _active().program_waits()
        return orig["awaitTermination"](self, *args, **kwargs)

    def process_all_available(self: Any) -> Any:
        _active().program_waits()
        return orig["processAllAvailable"](self)

    cls.awaitTermination = await_termination  # type: ignore[attr-defined]
    cls.processAllAvailable = process_all_available  # type: ignore[attr-defined]


def _patch_manager(cls: type) -> None:
    """``StreamingQueryManager``: ``awaitAnyTermination`` waits; ``addListener`` recorded."""
    orig = _save(cls, ("awaitAnyTermination", "addListener"))

    def await_any_termination(self: Any, *args: Any, **kwargs: Any) -> Any:
        controller = _active()
        controller.program_waits()
        if controller.starter.dry_run:
            return True if (args or kwargs) else None
        return orig["awaitAnyTermination"](self, *args, **kwargs)

    def add_listener(self: Any, listener: Any) -> Any:
        result = orig["addListener"](self, listener)
        if _controller is not None:
            _controller.starter.listener_added(self, listener)
        return result

    cls.awaitAnyTermination = await_any_termination  # type: ignore[attr-defined]
    cls.addListener = add_listener  # type: ignore[attr-defined]


def _patch_batch_writer(cls: type) -> None:
    """``DataFrameWriter``: a Kafka ``save`` in an ``exactly-once`` query's batch goes to
    :data:`batch_kafka_writer`."""
    orig = _save(cls, ("format", "option", "options", "save"))

    def format_(self: Any, source: str) -> Any:
        self._flinkish_format = str(source).lower()
        return orig["format"](self, source)

    def option(self: Any, key: str, value: Any) -> Any:
        if value is not None:
            self.__dict__.setdefault("_flinkish_options", {})[str(key)] = str(value)
        return orig["option"](self, key, value)

    def options(self: Any, **opts: Any) -> Any:
        for key, value in opts.items():
            if value is not None:
                self.__dict__.setdefault("_flinkish_options", {})[str(key)] = str(value)
        return orig["options"](self, **opts)

    def save(
        self: Any,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **opts: Any,
    ) -> Any:
        write = getattr(batch_kafka_writer, "write", None)
        kind = str(format).lower() if format else getattr(self, "_flinkish_format", None)
        if write is not None and kind == "kafka":
            given = {**getattr(self, "_flinkish_options", {})}
            given.update({str(k): str(v) for k, v in opts.items() if v is not None})
            write(self._df, given)
            return None
        return orig["save"](self, path, format, mode, partitionBy, **opts)

    for name, patch in {"format": format_, "option": option, "options": options,
                        "save": save}.items():  # fmt: skip
        patch.__doc__ = getattr(orig[name], "__doc__", None)
        setattr(cls, name, patch)


def _patch_stop(cls: type) -> None:
    """``SparkSession.stop`` / ``SparkContext.stop``: stop the job's queries, keep Spark."""
    _save(cls, ("stop",))

    def stop(self: Any) -> None:
        if _controller is None:
            return original(cls, "stop")(self)
        _controller.starter.session_stopped()
        return None

    cls.stop = stop  # type: ignore[attr-defined]


# -- flinkish's own calls, bypassing the patches --------------------------------------------
def set_writer_option(flavour: Flavour, writer: Any, key: str, value: str) -> None:
    """Set an option on ``writer`` as pyspark would, without recording it as the script's."""
    original(flavour.writer, "option")(writer, key, value)


def set_writer_foreach_batch(flavour: Flavour, writer: Any, func: Any) -> None:
    """Make ``writer``'s sink ``func`` (a ``foreachBatch``), without recording it as the
    script's (the query keeps the identity of the sink the script chose)."""
    original(flavour.writer, "foreachBatch")(writer, func)


def writer_options(writer: Any) -> dict[str, str]:
    """The options the script set on ``writer`` (``option``/``options``/``start``'s)."""
    return dict(getattr(writer, "_flinkish_options", {}))


def set_writer_trigger(flavour: Flavour, writer: Any, **kwargs: Any) -> None:
    """Set a trigger on ``writer`` without recording it as the script's."""
    original(flavour.writer, "trigger")(writer, **kwargs)


def process_all_available(flavour: Flavour, query: Any) -> None:
    """``processAllAvailable`` for flinkish itself (not one of the program's waits)."""
    original(flavour.query, "processAllAvailable")(query)


def stop_session(flavour: Flavour, spark: Any) -> None:
    """Really stop the session (the script's own ``stop()`` only stops its queries)."""
    original(flavour.session, "stop")(spark)
