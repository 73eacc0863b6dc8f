"""The two flavours of Spark a job's program can talk to, behind one narrow seam.

- ``classic`` (:mod:`.classic`): the program runs in a Spark driver (``spark-submit``), and
  pyspark's classes talk to the driver's JVM through py4j.
- ``connect`` (:mod:`.connect`): the program runs in a per-job client process of a session
  cluster, and pyspark's Spark Connect classes talk to the Connect server over gRPC.

The runtime (hooks, job, restore, the job graph) is written once against the
:class:`Flavour` protocol; what differs between the two is only which classes to patch and a
handful of operations below, each implemented once per flavour, as pyspark itself keeps its
classic and Connect classes apart. :func:`by_name` is the one place that chooses. pyspark's
Connect classes are imported only for the ``connect`` flavour (they need pandas, pyarrow and
grpc, which a classic driver never loads).
"""

from __future__ import annotations

from typing import Any, Protocol

from flinkish_cli.runtime.flavours import classic, connect

CLASSIC = classic.NAME
CONNECT = connect.NAME


class Flavour(Protocol):
    """The pyspark classes of one flavour of Spark, and what differs between flavours."""

    @property
    def name(self) -> str:
        """``classic`` or ``connect``."""

    @property
    def writer(self) -> type:
        """DataStreamWriter."""

    @property
    def query(self) -> type:
        """StreamingQuery."""

    @property
    def manager(self) -> type:
        """StreamingQueryManager."""

    @property
    def session(self) -> type:
        """SparkSession."""

    @property
    def context(self) -> type | None:
        """SparkContext (classic only)."""

    @property
    def batch_writer(self) -> type | None:
        """DataFrameWriter (classic only: exactly-once Kafka)."""

    @property
    def driver_owns_jvm(self) -> bool:
        """Whether Spark's JVM lives and dies with this driver (classic: spark-submit's JVM
        started it), so that its loss means the driver must start again; a session
        cluster's server outlives its clients."""

    @property
    def remote(self) -> bool:
        """Whether the program talks to Spark from a process of its own (Spark Connect):
        no JVM to reach through py4j, and a relative path means nothing to the server."""

    # -- the writer ----------------------------------------------------------------------
    def session_of(self, writer: Any) -> Any:
        """The SparkSession a DataStreamWriter belongs to."""

    def sink_of(self, writer: Any) -> str:
        """The kind of sink the writer writes to: a format, foreach, foreachBatch or table."""

    def sources_of(self, writer: Any) -> tuple[str, ...] | None:
        """The kinds of the query's streaming sources, in plan order, or None if unknown."""

    def ship_job_code(self) -> None:
        """Before a query or function is serialised: make the job's code travel with it."""

    # -- a running query ------------------------------------------------------------------
    def explain(self, query: Any) -> str | None:
        """Spark's physical plan of the query's last batch, as ``query.explain()`` prints it
        (the same text in both flavours); None while the query has planned no batch."""

    # -- the session ---------------------------------------------------------------------
    def repartition(
        self, spark: Any, checkpoint: str, partitions: int, flink_conf: dict[str, str]
    ) -> None:
        """Repartition a stopped query's state offline (Spark 4.2+, RocksDB), with the job's
        configuration ``flink_conf`` for its Hadoop settings."""


def by_name(name: str) -> Flavour:
    """The flavour called ``name`` (``classic`` or ``connect``): the one place that chooses."""
    return connect.flavour() if name == CONNECT else classic.flavour()
