"""Bank transactions per customer in session windows.

The Spark counterpart of Flink's ``EventTimeSessionWindows.withGap(...)`` on a stream keyed
by customer: a customer's session groups transactions separated by less than ``--gap``
(default 45 seconds); it ends ``--gap`` after its last transaction. A session is written
once the watermark (``--watermark``, default 30 seconds) has passed its end (append mode).

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                transactions JSON files (default DATA/transactions)
    --output DIR               JSON output (default DATA/out/transactions_sessions)
    --gap D, --watermark D     Spark interval strings
    --max-files-per-trigger N  files per micro-batch (default all)

Input (JSON lines, ``scripts/generate_events.py --kind transactions``):
    transaction_id string, account_id string, customer_id string, amount double,
    event_time timestamp, type string

Output (JSON file sink, append): one query named ``sessions-per-customer`` writing
    customer_id, session_start, session_end, tx_count, total_amount (decimal, exact cents)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.schemas import TRANSACTION_SCHEMA
from common.streams import json_stream
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

QUERY_NAME = "sessions-per-customer"


def build(
    transactions: DataFrame, gap: str = "45 seconds", watermark: str = "30 seconds"
) -> DataFrame:
    """Count and sum of the transactions per customer session."""
    return (
        transactions.withWatermark("event_time", watermark)
        .groupBy(F.session_window("event_time", gap).alias("session"), F.col("customer_id"))
        .agg(
            F.count(F.lit(1)).alias("tx_count"),
            F.sum(F.col("amount").cast("decimal(18,2)")).alias("total_amount"),
        )
        .select(
            "customer_id",
            F.col("session.start").alias("session_start"),
            F.col("session.end").alias("session_end"),
            "tx_count",
            "total_amount",
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``sessions-per-customer`` query and wait for it."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="transactions directory (default DATA/transactions)")
    parser.add_argument(
        "--output", help="output directory (default DATA/out/transactions_sessions)"
    )
    parser.add_argument("--gap", default="45 seconds", help="session gap")
    parser.add_argument("--watermark", default="30 seconds", help="allowed lateness")
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "transactions")
    output = resolve(args.output, args.data, "out", "transactions_sessions")

    spark = SparkSession.builder.appName("transactions-sessions").getOrCreate()
    transactions = json_stream(spark, TRANSACTION_SCHEMA, source, args.max_files_per_trigger)
    (
        build(transactions, args.gap, args.watermark)
        .writeStream.queryName(QUERY_NAME)
        .format("json")
        .outputMode("append")
        .start(output)
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
