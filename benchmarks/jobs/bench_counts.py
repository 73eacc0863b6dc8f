"""Benchmark job: a running count per key over a backlog of JSON files, then it finishes.

The same unmodified script runs under ``flinkish run`` and under plain ``spark-submit``:
it names its query, sets its own ``checkpointLocation`` (kept there by flinkish too, as by
Spark: a script that names its checkpoint owns it) and ``trigger(availableNow=True)`` (kept
by flinkish), so it processes the files present at start and ends.

Arguments:
    --input DIR                JSON-lines files with ``key`` (string) and ``value`` (long)
    --output DIR               batch N's updated counts go to ``OUTPUT/batch=N/`` (JSON)
    --checkpoint DIR           the query's checkpoint (a path or a URI: s3://, hdfs://)
    --max-files-per-trigger N  files per micro-batch (default: all in one batch)

Output: ``batch=N/`` JSON lines ``{"key": ..., "count": ...}``; a key's final count is the one
in its highest batch (update mode, each batch written in overwrite mode: idempotent).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

QUERY_NAME = "counts"
SCHEMA = StructType([StructField("key", StringType()), StructField("value", LongType())])


def writer(output: str) -> Callable[[DataFrame, int], None]:
    """``foreachBatch``: batch N's rows to ``output/batch=N`` in overwrite mode."""

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.write.mode("overwrite").json(f"{output.rstrip('/')}/batch={batch_id}")

    return write


def main(argv: Sequence[str] | None = None) -> None:
    """Count rows per key over the files available now, then finish."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--max-files-per-trigger", type=int, default=None)
    args = parser.parse_args(argv)

    spark = SparkSession.builder.appName("bench-counts").getOrCreate()
    reader = spark.readStream.schema(SCHEMA)
    if args.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", args.max_files_per_trigger)
    counts = reader.json(args.input).groupBy("key").count()
    query = (
        counts.writeStream.queryName(QUERY_NAME)
        .outputMode("update")
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .foreachBatch(writer(args.output))
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
