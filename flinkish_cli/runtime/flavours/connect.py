"""The Spark Connect flavour of Spark (:class:`~.flavour.Flavour`): the program runs in a
per-job client process of a session cluster (:mod:`.session`), and pyspark's Spark Connect
classes talk to the Connect server over gRPC. Nothing here imports pyspark's Connect classes
before :func:`flavour` is called (they need pandas, pyarrow and grpc)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flinkish_cli.runtime.flavours.classic import recorded_sink

NAME = "connect"


@dataclass(frozen=True)
class ConnectFlavour:
    """pyspark's Spark Connect classes (given: a test may give stand-ins), and how a
    session cluster's client reaches Spark. Spark Connect has no SparkContext and no
    DataFrameWriter flinkish patches."""

    writer: type  # DataStreamWriter
    query: type  # StreamingQuery
    manager: type  # StreamingQueryManager
    session: type  # SparkSession

    @property
    def name(self) -> str:
        return NAME

    @property
    def context(self) -> type | None:
        return None

    @property
    def batch_writer(self) -> type | None:
        return None

    @property
    def driver_owns_jvm(self) -> bool:
        return False  # the session cluster's server outlives its clients

    @property
    def remote(self) -> bool:
        return True

    def session_of(self, writer: Any) -> Any:
        return writer._session

    def sink_of(self, writer: Any) -> str:
        recorded = recorded_sink(writer)
        if recorded:
            return recorded
        proto = writer._write_proto
        if proto.HasField("foreach_batch"):
            return "foreachBatch"
        if proto.HasField("foreach_writer"):
            return "foreach"
        if proto.format:
            return str(proto.format).lower()
        return "default"

    def sources_of(self, writer: Any) -> tuple[str, ...] | None:
        try:
            return _sources(writer._write_stream)
        except Exception:  # a best effort: a shape without sources still identifies the sink
            return None

    def ship_job_code(self) -> None:
        """The job's modules are pickled by value (see :mod:`.session`)."""
        from flinkish_cli.runtime.flavours.session import pickle_job_modules_by_value

        pickle_job_modules_by_value()

    def explain(self, query: Any) -> str | None:
        """As a command to the server."""
        from pyspark.sql.connect.proto import StreamingQueryCommand

        command = StreamingQueryCommand()
        command.explain.extended = False
        text = str(query._execute_streaming_query_cmd(command).explain.result)
        return None if text.startswith("No physical plan") else text

    def repartition(
        self, spark: Any, checkpoint: str, partitions: int, flink_conf: dict[str, str]
    ) -> None:
        """Spark Connect has no such call: a local classic Spark in a child process does it
        (:mod:`.offline_repartition`)."""
        from flinkish_cli.runtime.flavours.offline_repartition import repartition_offline

        repartition_offline(checkpoint, partitions, flink_conf)


def flavour() -> ConnectFlavour:
    """pyspark's Spark Connect classes."""
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.connect.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.connect.streaming.readwriter import DataStreamWriter

    return ConnectFlavour(DataStreamWriter, StreamingQuery, StreamingQueryManager, SparkSession)


def _sources(write_stream: Any) -> tuple[str, ...] | None:
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
