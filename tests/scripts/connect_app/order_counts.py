"""A Structured Streaming program run as a client of a session cluster (Spark Connect).

Unmodified PySpark: with ``SPARK_REMOTE=sc://HOST:PORT`` in the environment,
``SparkSession.builder.getOrCreate()`` returns a Spark Connect session. A stateful count per
order status over the files available now, written by ``foreachBatch``, which the Connect
server runs in a Python worker of its own.

Usage: order_counts.py INPUT_DIR OUTPUT_DIR CHECKPOINT_DIR
Prints ``session=<module of the session's class> master=<the server's master>``.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession

ORDERS = "order_id STRING, customer_id STRING, order_status STRING, total_price DOUBLE"


def main(argv: list[str]) -> None:
    source, output, checkpoint = argv
    spark = SparkSession.builder.appName("order-counts").getOrCreate()
    print(f"session={type(spark).__module__} master={spark.conf.get('spark.master')}")

    counts = spark.readStream.schema(ORDERS).json(source).groupBy("order_status").count()

    def write_counts(batch: DataFrame, batch_id: int) -> None:
        batch.coalesce(1).write.mode("overwrite").json(f"{output}/batch={batch_id}")

    query = (
        counts.writeStream.queryName("order_counts")
        .outputMode("complete")
        .foreachBatch(write_counts)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
