"""Running count of transactions per account, plus a copy of every input row.

The Spark counterpart of Flink's keyed running count (``keyBy(account).sum(...)`` on a
stream, with its state in checkpoints and savepoints). Small and deterministic: it is the job
flinkish's savepoint and exactly-once tests use. Two queries read the same transactions:

* ``counts``: ``groupBy(account_id).count()`` in update mode. Every micro-batch writes the
  accounts whose count changed, with their new count, to ``OUTPUT/counts/batch=<id>/``
  (``foreachBatch``, overwrite mode: a replayed batch rewrites its own directory, so the
  output is exactly-once). An account's current count is the one in its highest batch.
* ``raw``: every input row, unchanged, through the JSON file sink (exactly-once by Spark's
  sink log) to ``OUTPUT/raw/``: each input row appears there exactly once.

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                transactions JSON files (default DATA/transactions)
    --output DIR               output base (default DATA/out/counts_per_key)
    --max-files-per-trigger N  files per micro-batch (default all)

Input (JSON lines, ``scripts/generate_events.py --kind transactions``):
    transaction_id string, account_id string, customer_id string, amount double,
    event_time timestamp, type string

Output: ``counts/batch=N/`` JSON (account_id, count); ``raw/`` JSON (the input's columns).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.schemas import TRANSACTION_SCHEMA
from common.streams import batch_writer, json_stream
from pyspark.sql import DataFrame, SparkSession

COUNTS = "counts"
RAW = "raw"


def build_counts(transactions: DataFrame) -> DataFrame:
    """The number of transactions per account."""
    return transactions.groupBy("account_id").count()


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``counts`` and ``raw`` queries and wait for them."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="transactions directory (default DATA/transactions)")
    parser.add_argument("--output", help="output base (default DATA/out/counts_per_key)")
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "transactions")
    output = resolve(args.output, args.data, "out", "counts_per_key")

    spark = SparkSession.builder.appName("counts-per-key").getOrCreate()
    transactions = json_stream(spark, TRANSACTION_SCHEMA, source, args.max_files_per_trigger)
    (
        build_counts(transactions)
        .writeStream.queryName(COUNTS)
        .outputMode("update")
        .foreachBatch(batch_writer(os.path.join(output, COUNTS)))
        .start()
    )
    (
        transactions.writeStream.queryName(RAW)
        .format("json")
        .outputMode("append")
        .start(os.path.join(output, RAW))
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
