"""A tiny batch application for the cluster test: the orders pipeline's transformation.

Submitted with plain ``spark-submit --py-files jobs.zip``: ``orders`` and its helper package
``common`` come from the shipped zip, and the status UDF (``common.pricing.normalize_status``)
runs on the cluster's executors, which can import it only from that zip.

Usage: orders_batch.py INPUT_DIR OUTPUT_DIR
"""

from __future__ import annotations

import sys

import orders
from common.schemas import ORDER_SCHEMA
from pyspark.sql import SparkSession


def main(argv: list[str]) -> None:
    source, output = argv
    spark = SparkSession.builder.appName("flinkish-cluster-test").getOrCreate()
    frame = orders.build(spark.read.schema(ORDER_SCHEMA).json(source))
    frame.coalesce(1).write.mode("overwrite").json(output)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
