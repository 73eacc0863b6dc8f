"""The classic flavour of Spark (:class:`~.flavour.Flavour`): the program runs in a Spark
driver (``spark-submit``), and pyspark's classic classes talk to the driver's own JVM
through py4j."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NAME = "classic"


@dataclass(frozen=True)
class ClassicFlavour:
    """pyspark's classic classes (given: a test may give stand-ins), and how a classic
    driver reaches Spark."""

    writer: type  # DataStreamWriter
    query: type  # StreamingQuery
    manager: type  # StreamingQueryManager
    session: type  # SparkSession
    context: type | None = None  # SparkContext
    batch_writer: type | None = None  # DataFrameWriter (exactly-once Kafka)

    @property
    def name(self) -> str:
        return NAME

    @property
    def driver_owns_jvm(self) -> bool:
        return True  # spark-submit's JVM started this driver

    @property
    def remote(self) -> bool:
        return False

    def session_of(self, writer: Any) -> Any:
        return writer._spark

    def sink_of(self, writer: Any) -> str:
        return recorded_sink(writer) or "default"

    def sources_of(self, writer: Any) -> tuple[str, ...] | None:
        try:
            return _sources(writer._df._jdf.queryExecution().logical())
        except Exception:  # a best effort: a shape without sources still identifies the sink
            return None

    def ship_job_code(self) -> None:
        """Nothing to do: classic Spark ships the job's code with ``--py-files``."""

    def explain(self, query: Any) -> str | None:
        text = str(query._jsq.explainInternal(False))
        return None if text.startswith("No physical plan") else text

    def repartition(
        self, spark: Any, checkpoint: str, partitions: int, flink_conf: dict[str, str]
    ) -> None:
        """In the driver's own session."""
        from flinkish_cli.savepoints.restore import repartition

        repartition(spark, checkpoint, partitions)


def flavour() -> ClassicFlavour:
    """pyspark's classic classes."""
    from pyspark import SparkContext
    from pyspark.sql.readwriter import DataFrameWriter
    from pyspark.sql.session import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    return ClassicFlavour(
        DataStreamWriter,
        StreamingQuery,
        StreamingQueryManager,
        SparkSession,
        SparkContext,
        DataFrameWriter,
    )


def recorded_sink(writer: Any) -> str | None:
    """The kind of sink the hooks recorded on the writer (``toTable``, a format, foreach,
    foreachBatch), in either flavour; None when they recorded none."""
    recorded = getattr(writer, "_flinkish_sink", None)
    return str(recorded) if recorded else None


def _sources(plan: Any) -> tuple[str, ...]:
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
