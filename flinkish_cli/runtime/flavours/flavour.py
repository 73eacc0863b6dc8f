"""The two flavours of Spark a job's program can talk to, behind one narrow seam.

- ``classic``: the program runs in a Spark driver (``spark-submit``), and pyspark's classes
  talk to the driver's JVM through py4j.
- ``connect``: the program runs in a per-job client process of a session cluster, and
  pyspark's Spark Connect classes talk to the Connect server over gRPC.

The runtime (hooks, job, restore, the job graph) is written once against :class:`Flavour`;
what differs between the two is only which classes to patch and a handful of operations
below. pyspark's
Connect classes are imported only for the ``connect`` flavour (they need pandas, pyarrow and
grpc, which a classic driver never loads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLASSIC = "classic"
CONNECT = "connect"


@dataclass(frozen=True)
class Flavour:
    """The pyspark classes of one flavour of Spark, and what differs between flavours."""

    name: str
    writer: type  # DataStreamWriter
    query: type  # StreamingQuery
    manager: type  # StreamingQueryManager
    session: type  # SparkSession
    context: type | None = None  # SparkContext (classic only)
    batch_writer: type | None = None  # DataFrameWriter (classic only: exactly-once Kafka)

    @property
    def driver_owns_jvm(self) -> bool:
        """Whether Spark's JVM lives and dies with this driver (classic: spark-submit's JVM
        started it), so that its loss means the driver must start again; a session
        cluster's server outlives its clients."""
        return self.name == CLASSIC

    # -- the writer ----------------------------------------------------------------------
    def session_of(self, writer: Any) -> Any:
        """The SparkSession a DataStreamWriter belongs to."""
        return writer._session if self.name == CONNECT else writer._spark

    def sink_of(self, writer: Any) -> str:
        """The kind of sink the writer writes to: a format, foreach, foreachBatch or table."""
        recorded = getattr(writer, "_flinkish_sink", None)
        if recorded:
            return str(recorded)
        if self.name == CONNECT:
            proto = writer._write_proto
            if proto.HasField("foreach_batch"):
                return "foreachBatch"
            if proto.HasField("foreach_writer"):
                return "foreach"
            if proto.format:
                return str(proto.format).lower()
        return "default"

    def sources_of(self, writer: Any) -> tuple[str, ...] | None:
        """The kinds of the query's streaming sources, in plan order, or None if unknown."""
        try:
            if self.name == CONNECT:
                return _connect_sources(writer._write_stream)
            return _classic_sources(writer._df._jdf.queryExecution().logical())
        except Exception:  # a best effort: a shape without sources still identifies the sink
            return None

    def ship_job_code(self) -> None:
        """Before a query or function is serialised: make the job's code travel with it.

        Spark Connect: the job's modules are pickled by value (see :mod:`.session`); classic
        Spark ships them with ``--py-files``.
        """
        if self.name == CONNECT:
            from flinkish_cli.runtime.flavours.session import pickle_job_modules_by_value

            pickle_job_modules_by_value()

    # -- a running query ------------------------------------------------------------------
    def explain(self, query: Any) -> str | None:
        """Spark's physical plan of the query's last batch, as ``query.explain()`` prints it
        (the same text in both flavours: classic through py4j, Spark Connect as a command
        to the server); None while the query has planned no batch."""
        if self.name == CONNECT:
            from pyspark.sql.connect.proto import StreamingQueryCommand

            command = StreamingQueryCommand()
            command.explain.extended = False
            text = str(query._execute_streaming_query_cmd(command).explain.result)
        else:
            text = str(query._jsq.explainInternal(False))
        return None if text.startswith("No physical plan") else text

    # -- the session ---------------------------------------------------------------------
    def repartition(
        self, spark: Any, checkpoint: str, partitions: int, flink_conf: dict[str, str]
    ) -> None:
        """Repartition a stopped query's state offline (Spark 4.2+, RocksDB): classic, in the
        driver's own session; Spark Connect has no such call, so a local classic Spark in a
        child process does it (:mod:`.offline_repartition`, with the job's configuration
        ``flink_conf`` for its Hadoop settings)."""
        if self.name == CONNECT:
            from flinkish_cli.runtime.flavours.offline_repartition import repartition_offline

            repartition_offline(checkpoint, partitions, flink_conf)
            return
        from flinkish_cli.savepoints.restore import repartition

        repartition(spark, checkpoint, partitions)


def classic() -> Flavour:
    """pyspark's classic classes."""
    from pyspark import SparkContext
    from pyspark.sql.readwriter import DataFrameWriter
    from pyspark.sql.session import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    return Flavour(
        CLASSIC,
        DataStreamWriter,
        StreamingQuery,
        StreamingQueryManager,
        SparkSession,
        SparkContext,
        DataFrameWriter,
    )


def connect() -> Flavour:
    """pyspark's Spark Connect classes."""
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.connect.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.connect.streaming.readwriter import DataStreamWriter

    return Flavour(CONNECT, DataStreamWriter, StreamingQuery, StreamingQueryManager, SparkSession)


def by_name(name: str) -> Flavour:
    """The flavour called ``name`` (``classic`` or ``connect``)."""
    return connect() if name == CONNECT else classic()


def _classic_sources(plan: Any) -> tuple[str, ...]:
    """Kinds of the streaming relations among the leaves of a JVM logical plan."""
    leaves = plan.collectLeaves()
    kinds = []
    for index in range(leaves.size()):
        leaf = leaves.apply(index)
        node = leaf.nodeName()
        if node == "StreamingRelation":
            kinds.append(str(leaf.dataSource().className()).rsplit(".", 1)[-1].lower())
        elif node == "StreamingRelationV2":
            kinds.append(str(leaf.sourceName()).split("[", 1)[0].lower())
    return tuple(kinds)


def _connect_sources(write_stream: Any) -> tuple[str, ...] | None:
    """Kinds of the streaming reads in a Spark Connect plan (walked on the client)."""
    child = getattr(write_stream, "_child", None)
    if child is None:
        return None
    kinds: list[str] = []

    def walk(plan: Any) -> None:
        read = getattr(plan, "_is_streaming", None)
        source = getattr(plan, "_format", None)
        if read and source:
            kinds.append(str(source).lower())
        for attribute in ("_child", "left", "right", "other", "_other"):
            nested = getattr(plan, attribute, None)
            if nested is not None and nested is not plan:
                walk(nested)

    walk(child)
    return tuple(kinds) or None
