"""Bank transactions per account in event-time windows: tumbling and sliding.

The Spark counterpart of Flink's windowed aggregations over a keyed stream
(``keyBy(account).window(TumblingEventTimeWindows...)`` and ``SlidingEventTimeWindows``) with
a bounded-out-of-orderness watermark. Two queries read the same transactions:

* ``tumbling-per-account``: per account and ``--window`` (default 1 minute) window,
  the number of transactions and the sum of their amounts;
* ``sliding-per-account``: the same over ``--sliding-window`` windows (default 2 minutes)
  starting every ``--slide`` (default 1 minute).

The watermark (``--watermark``, default 30 seconds) trails the highest event time seen. A
window is written once, when the watermark passes its end (append mode); transactions that
arrive after the watermark has passed their window's end are dropped.

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                transactions JSON files (default DATA/transactions)
    --output DIR               output base (default DATA/out/transactions_windows); each query
                               writes to OUTPUT/<query name>
    --window D, --sliding-window D, --slide D, --watermark D   Spark interval strings
    --max-files-per-trigger N  files per micro-batch (default all)

Input (JSON lines, ``scripts/generate_events.py --kind transactions``):
    transaction_id string, account_id string, customer_id string, amount double,
    event_time timestamp, type string

Output (JSON file sinks, append):
    account_id, window_start, window_end, tx_count, total_amount (decimal, exact cents)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.schemas import TRANSACTION_SCHEMA
from common.streams import json_stream
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

TUMBLING = "tumbling-per-account"
SLIDING = "sliding-per-account"
WATERMARK = "30 seconds"


def _per_account(transactions: DataFrame, window: Column, watermark: str) -> DataFrame:
    return (
        transactions.withWatermark("event_time", watermark)
        .groupBy(window.alias("window"), F.col("account_id"))
        .agg(
            F.count(F.lit(1)).alias("tx_count"),
            F.sum(F.col("amount").cast("decimal(18,2)")).alias("total_amount"),
        )
        .select(
            "account_id",
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "tx_count",
            "total_amount",
        )
    )


def build_tumbling(
    transactions: DataFrame, window: str = "1 minute", watermark: str = WATERMARK
) -> DataFrame:
    """Count and sum of the transactions per account and tumbling event-time window."""
    return _per_account(transactions, F.window("event_time", window), watermark)


def build_sliding(
    transactions: DataFrame,
    window: str = "2 minutes",
    slide: str = "1 minute",
    watermark: str = WATERMARK,
) -> DataFrame:
    """Count and sum of the transactions per account and sliding event-time window."""
    return _per_account(transactions, F.window("event_time", window, slide), watermark)


def main(argv: Sequence[str] | None = None) -> None:
    """Start the tumbling and the sliding query and wait for them."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="transactions directory (default DATA/transactions)")
    parser.add_argument("--output", help="output base (default DATA/out/transactions_windows)")
    parser.add_argument("--window", default="1 minute", help="tumbling window size")
    parser.add_argument("--sliding-window", default="2 minutes", help="sliding window size")
    parser.add_argument("--slide", default="1 minute", help="sliding window slide")
    parser.add_argument("--watermark", default=WATERMARK, help="allowed lateness")
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "transactions")
    output = resolve(args.output, args.data, "out", "transactions_windows")

    spark = SparkSession.builder.appName("transactions-windows").getOrCreate()
    transactions = json_stream(spark, TRANSACTION_SCHEMA, source, args.max_files_per_trigger)
    queries = {
        TUMBLING: build_tumbling(transactions, args.window, args.watermark),
        SLIDING: build_sliding(transactions, args.sliding_window, args.slide, args.watermark),
    }
    for name, frame in queries.items():
        (
            frame.writeStream.queryName(name)
            .format("json")
            .outputMode("append")
            .start(os.path.join(output, name))
        )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
