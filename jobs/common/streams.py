"""Sources and sinks of the example jobs: JSON file sources and idempotent batch writers."""

from __future__ import annotations

import os
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from common.args import is_local


def json_stream(
    spark: SparkSession, schema: StructType, path: str, max_files_per_trigger: int | None = None
) -> DataFrame:
    """A streaming DataFrame over the JSON-lines files arriving in ``path``.

    A missing local directory is created, so a job can start before its generator.
    """
    if is_local(path):
        os.makedirs(path.removeprefix("file://"), exist_ok=True)
    reader = spark.readStream.schema(schema)
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    return reader.json(path)


def batch_writer(path: str, fmt: str = "json") -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function writing batch ``N`` to ``path/batch=N/`` in overwrite mode.

    A batch that Spark replays after a failure (same id, same content) overwrites its own
    earlier output, so the output is the same as if every batch ran exactly once.
    """
    base = path.rstrip("/")

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.write.mode("overwrite").format(fmt).save(f"{base}/batch={batch_id}")

    return write
