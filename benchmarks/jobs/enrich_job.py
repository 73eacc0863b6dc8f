"""Benchmark job: rows enriched by a call to an external service, counted per key.

A plain PySpark script as a user writes an enrichment job: each row's key is looked up in a
service over HTTP (one request per row, from a Python UDF), so a task's time is the
service's latency and more parallel tasks give more throughput. The rows are repartitioned
by key before the lookup, which puts them into ``spark.sql.shuffle.partitions`` tasks (the
job's parallelism under flinkish): at parallelism N, N lookups run at once.

Arguments:
    --input DIR       JSON-lines files with ``key`` (string) and ``seq`` (long)
    --output DIR      ``OUTPUT/enriched`` (Spark's exactly-once file sink) and
                      ``OUTPUT/counts/batch=N`` (the running count per key of the keys batch
                      N changed, written idempotently through foreachBatch)
    --service URL     the lookup service; a row's lookup is ``GET URL/<key>``
    --max-files N     maxFilesPerTrigger (default 10)
    --trigger S       seconds between micro-batches (processing-time trigger, default 5)

Queries: ``enriched`` (every row with the service's answer, ``region``) and ``counts`` (a
count per key: state that an in-place rescale repartitions).
"""

from __future__ import annotations

import argparse
import http.client
import json
import urllib.parse
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

SCHEMA = StructType([StructField("key", StringType()), StructField("seq", LongType())])


def lookup_function(service: str) -> Callable[[str], str]:
    """``key -> region``: one GET to the service per call (a new connection each time, as a
    plain client makes it; no proxy: the service is on loopback)."""
    address = urllib.parse.urlsplit(service)

    def lookup(key: str) -> str:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
        try:
            connection.request("GET", f"{address.path}/{key}")
            answer = connection.getresponse()
            if answer.status != 200:
                raise RuntimeError(f"the service answered {answer.status} for {key}")
            return str(json.loads(answer.read())["region"])
        finally:
            connection.close()

    return lookup


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--max-files", type=int, default=10)
    parser.add_argument("--trigger", type=float, default=5.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("enrich").getOrCreate()
    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", args.max_files)
        .json(args.input)
    )
    every = f"{args.trigger:g} seconds"
    region = F.udf(lookup_function(args.service), StringType())
    enriched = events.repartition("key").withColumn("region", region("key"))
    (
        enriched.writeStream.format("json")
        .option("path", f"{args.output}/enriched")
        .trigger(processingTime=every)
        .queryName("enriched")
        .start()
    )

    def write_counts(batch, batch_id: int) -> None:
        batch.write.mode("overwrite").json(f"{args.output}/counts/batch={batch_id}")

    (
        events.groupBy("key")
        .agg(F.count("*").alias("count"))
        .writeStream.outputMode("update")
        .foreachBatch(write_counts)
        .trigger(processingTime=every)
        .queryName("counts")
        .start()
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
