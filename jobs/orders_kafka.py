"""Orders pipeline, Kafka to Kafka: the large orders of a topic, normalised, into a topic.

Flink's headline pipeline (a ``KafkaSource`` of orders, ``filter(total_price > 100)``,
``map`` to the status in upper case and ``total_price * 1.2``, a ``KafkaSink``), in Spark's
idiom: Spark's Kafka source and sink (run it with ``-D flinkish.connectors=kafka``). It keeps
``orders.py``'s transformation (``orders.build``): each order with ``total_price >
--min-total`` with its status in upper case and ``price_with_tax = round(total_price *
--tax-rate, 2)``.

Arguments:
    --bootstrap-servers HOSTS  Kafka's bootstrap servers (default 127.0.0.1:9092)
    --source-topic TOPIC       the orders (default orders)
    --sink-topic TOPIC         the large orders (default large-orders)
    --starting-offsets WHERE   where a new job starts reading: earliest or latest (default
                               earliest; a resumed job starts where its savepoint says)
    --min-total X              keep orders with total_price > X (default 100)
    --tax-rate R               price_with_tax = total_price * R (default 1.2)
    --max-offsets-per-trigger N  records per micro-batch (default all)

Input (the source topic's values, JSON, ``scripts/generate_events.py --kind orders``):
    order_id string, customer_id string, order_status string, total_price double,
    order_time timestamp

Output (Kafka, one query named ``orders-kafka``): a record per large order, keyed by its
``order_id``, its value the JSON of
    order_id, customer_id, order_status (upper case), total_price, price_with_tax, order_time
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from common.pricing import MIN_TOTAL, TAX_RATE
from common.schemas import ORDER_SCHEMA
from orders import build
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

QUERY_NAME = "orders-kafka"


def kafka_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of the Kafka orders jobs (``orders_kafka_sql.py`` takes the same)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--source-topic", default="orders")
    parser.add_argument("--sink-topic", default="large-orders")
    parser.add_argument("--starting-offsets", default="earliest", choices=("earliest", "latest"))
    parser.add_argument("--min-total", type=float, default=MIN_TOTAL)
    parser.add_argument("--tax-rate", type=float, default=TAX_RATE)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    return parser


def kafka_orders(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    """The orders of the source topic, parsed from their JSON values."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.source_topic)
        .option("startingOffsets", args.starting_offsets)
    )
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    raw = reader.load()
    return raw.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o")).select(
        "o.*"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``orders-kafka`` query and wait for it."""
    args = kafka_parser(__doc__.splitlines()[0]).parse_args(argv)
    spark = SparkSession.builder.appName("orders-kafka").getOrCreate()
    large = build(kafka_orders(spark, args), args.min_total, args.tax_rate)
    (
        large.select(F.col("order_id").alias("key"), F.to_json(F.struct("*")).alias("value"))
        .writeStream.queryName(QUERY_NAME)
        .format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("topic", args.sink_topic)
        .start()
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
