"""Orders pipeline: keep the large orders, normalise their status and add the price with tax.

The main example of flinkish, the Spark counterpart of Flink's classic orders pipeline
(a ``DataStream`` of orders with ``filter`` and ``map``, written to a file sink). For each
order with ``total_price > --min-total`` (default 100) it writes the order with its status
in upper case (a Python UDF calling ``common.pricing.normalize_status``, so executors import
the job's helper package) and ``price_with_tax = round(total_price * --tax-rate, 2)``
(default rate 1.2).

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                orders JSON files (default DATA/orders)
    --output DIR               JSON output (default DATA/out/orders)
    --min-total X              keep orders with total_price > X (default 100)
    --tax-rate R               price_with_tax = total_price * R (default 1.2)
    --max-files-per-trigger N  files per micro-batch (default all)

Input (JSON lines, ``scripts/generate_events.py --kind orders``):
    order_id string, customer_id string, order_status string, total_price double,
    order_time timestamp

Output (JSON file sink, append): one query named ``orders`` writing
    order_id, customer_id, order_status (upper case), total_price, price_with_tax, order_time
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.pricing import MIN_TOTAL, TAX_RATE, normalize_status
from common.schemas import ORDER_SCHEMA
from common.streams import json_stream
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

QUERY_NAME = "orders"


def build(orders: DataFrame, min_total: float = MIN_TOTAL, tax_rate: float = TAX_RATE) -> DataFrame:
    """The large orders, with a normalised status and their price with tax."""
    status = F.udf(normalize_status, StringType(), useArrow=False)
    return orders.where(F.col("total_price") > F.lit(min_total)).select(
        "order_id",
        "customer_id",
        status("order_status").alias("order_status"),
        "total_price",
        F.round(F.col("total_price") * F.lit(tax_rate), 2).alias("price_with_tax"),
        "order_time",
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``orders`` query and wait for it."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="orders directory (default DATA/orders)")
    parser.add_argument("--output", help="output directory (default DATA/out/orders)")
    parser.add_argument("--min-total", type=float, default=MIN_TOTAL)
    parser.add_argument("--tax-rate", type=float, default=TAX_RATE)
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "orders")
    output = resolve(args.output, args.data, "out", "orders")

    spark = SparkSession.builder.appName("orders").getOrCreate()
    orders = json_stream(spark, ORDER_SCHEMA, source, args.max_files_per_trigger)
    (
        build(orders, args.min_total, args.tax_rate)
        .writeStream.queryName(QUERY_NAME)
        .format("json")
        .outputMode("append")
        .start(output)
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
