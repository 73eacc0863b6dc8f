"""Orders pipeline, Kafka to Kafka, in SQL: ``orders_kafka.py``'s pipeline as a query of
``spark.sql`` over a Kafka-backed stream.

Flink's Table API / SQL form of its orders pipeline (a ``kafka`` table, ``INSERT INTO ...
SELECT ... WHERE total_price > 100``), in Spark's idiom: the orders topic is read with Spark's
Kafka source into a temporary view, and one SQL statement keeps the large orders, puts their
status in upper case (SQL's ``upper``) and adds ``price_with_tax``; its result goes to Spark's
Kafka sink. Run it with ``-D flinkish.connectors=kafka``.

Arguments: those of ``orders_kafka.py``:
    --bootstrap-servers HOSTS, --source-topic TOPIC, --sink-topic TOPIC,
    --starting-offsets WHERE, --min-total X, --tax-rate R, --max-offsets-per-trigger N

Input: as ``orders_kafka.py`` (the orders as JSON values).

Output (Kafka, one query named ``orders-kafka-sql``): as ``orders_kafka.py``'s, a record per
large order keyed by its ``order_id``; its status trimmed and in upper case.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from orders_kafka import kafka_orders, kafka_parser
from pyspark.sql import SparkSession

QUERY_NAME = "orders-kafka-sql"
VIEW = "orders"
STATEMENT = """
SELECT order_id AS key,
       to_json(named_struct(
           'order_id', order_id,
           'customer_id', customer_id,
           'order_status', upper(trim(order_status)),
           'total_price', total_price,
           'price_with_tax', round(total_price * {tax_rate}, 2),
           'order_time', order_time)) AS value
FROM {view}
WHERE total_price > {min_total}
"""


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``orders-kafka-sql`` query and wait for it."""
    args = kafka_parser(__doc__.splitlines()[0]).parse_args(argv)
    spark = SparkSession.builder.appName("orders-kafka-sql").getOrCreate()
    kafka_orders(spark, args).createOrReplaceTempView(VIEW)
    statement = STATEMENT.format(
        view=VIEW, tax_rate=float(args.tax_rate), min_total=float(args.min_total)
    )
    (
        spark.sql(statement)
        .writeStream.queryName(QUERY_NAME)
        .format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("topic", args.sink_topic)
        .start()
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
