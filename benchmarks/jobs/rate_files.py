"""Benchmark job: a rate source to a Parquet file sink, one-second batches (section 13, YARN).

Arguments: ``--output DIR`` (the sink's files; a URI, ``file:///...`` in a YARN container,
whose default file system is the cluster's). Five rows a second. Its checkpoint is the job's
own under flinkish, ``spark.sql.streaming.checkpointLocation`` under plain ``spark-submit``.
"""

import argparse

from pyspark.sql import SparkSession

parser = argparse.ArgumentParser()
parser.add_argument("--output", required=True)
args = parser.parse_args()

spark = SparkSession.builder.appName("rate-files").getOrCreate()
(
    spark.readStream.format("rate")
    .option("rowsPerSecond", 5)
    .load()
    .writeStream.format("parquet")
    .option("path", args.output)
    .trigger(processingTime="1 second")
    .queryName("rate")
    .start()
)
spark.streams.awaitAnyTermination()
