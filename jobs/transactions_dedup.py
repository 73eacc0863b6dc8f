"""Bank transactions without duplicates: each transaction_id is kept once.

The Spark counterpart of de-duplicating a Flink stream with keyed state and a state TTL:
``dropDuplicatesWithinWatermark("transaction_id")`` keeps the first copy of each
transaction and remembers its id until the watermark (``--watermark``, default 30 seconds)
has passed the transaction's event time by the same delay. Copies that arrive within that
time are dropped; so are transactions that arrive after the watermark has passed their
event time (late data).

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                transactions JSON files (default DATA/transactions)
    --output DIR               JSON output (default DATA/out/transactions_dedup)
    --watermark D              Spark interval string
    --max-files-per-trigger N  files per micro-batch (default all)

Input (JSON lines, ``scripts/generate_events.py --kind transactions --duplicate-fraction F``):
    transaction_id string, account_id string, customer_id string, amount double,
    event_time timestamp, type string

Output (JSON file sink, append): one query named ``dedup`` writing the input's columns.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.schemas import TRANSACTION_SCHEMA
from common.streams import json_stream
from pyspark.sql import DataFrame, SparkSession

QUERY_NAME = "dedup"


def build(transactions: DataFrame, watermark: str = "30 seconds") -> DataFrame:
    """The transactions, each ``transaction_id`` once.

    On a batch DataFrame (tests, backfills) there is no lateness: it is a plain
    ``dropDuplicates`` on ``transaction_id``.
    """
    if not transactions.isStreaming:
        return transactions.dropDuplicates(["transaction_id"])
    return transactions.withWatermark("event_time", watermark).dropDuplicatesWithinWatermark(
        ["transaction_id"]
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``dedup`` query and wait for it."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="transactions directory (default DATA/transactions)")
    parser.add_argument("--output", help="output directory (default DATA/out/transactions_dedup)")
    parser.add_argument("--watermark", default="30 seconds", help="allowed lateness")
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "transactions")
    output = resolve(args.output, args.data, "out", "transactions_dedup")

    spark = SparkSession.builder.appName("transactions-dedup").getOrCreate()
    transactions = json_stream(spark, TRANSACTION_SCHEMA, source, args.max_files_per_trigger)
    (
        build(transactions, args.watermark)
        .writeStream.queryName(QUERY_NAME)
        .format("json")
        .outputMode("append")
        .start(output)
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
