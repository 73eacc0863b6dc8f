"""Bank transactions enriched with their customer and account (stream-static join).

The Spark counterpart of enriching a Flink stream from reference tables (a lookup join):
each transaction is joined with the static customers table on ``customer_id`` and with the
static accounts table on ``account_id``. Both joins are left outer joins: a transaction whose
customer or account is unknown is kept, with nulls. The tables are read once when the query
starts (restart the job to pick up changes).

Arguments:
    --data DIR                 base directory of the defaults (default ./data)
    --input DIR                transactions JSON files (default DATA/transactions)
    --customers DIR            customers JSON files (default DATA/static/customers)
    --accounts DIR             accounts JSON files (default DATA/static/accounts)
    --output DIR               JSON output (default DATA/out/transactions_enrich)
    --max-files-per-trigger N  files per micro-batch (default all)

Input: transactions (transaction_id, account_id, customer_id, amount, event_time, type);
customers (customer_id, name, country, segment); accounts (account_id, customer_id,
account_type, currency), all JSON lines written by ``scripts/generate_events.py`` (the tables
with ``--static DATA/static``).

Output (JSON file sink, append): one query named ``enriched`` writing
    transaction_id, account_id, customer_id, amount, event_time, type,
    customer_name, country, segment, account_type, currency
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from common.args import job_parser, resolve
from common.schemas import ACCOUNT_SCHEMA, CUSTOMER_SCHEMA, TRANSACTION_SCHEMA
from common.streams import json_stream
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

QUERY_NAME = "enriched"


def build(transactions: DataFrame, customers: DataFrame, accounts: DataFrame) -> DataFrame:
    """Each transaction with its customer's and its account's attributes."""
    customer = customers.select(
        "customer_id", F.col("name").alias("customer_name"), "country", "segment"
    )
    account = accounts.select("account_id", "account_type", "currency")
    return (
        transactions.join(customer, on="customer_id", how="left")
        .join(account, on="account_id", how="left")
        .select(
            "transaction_id",
            "account_id",
            "customer_id",
            "amount",
            "event_time",
            "type",
            "customer_name",
            "country",
            "segment",
            "account_type",
            "currency",
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Start the ``enriched`` query and wait for it."""
    parser = job_parser(__doc__.splitlines()[0])
    parser.add_argument("--input", help="transactions directory (default DATA/transactions)")
    parser.add_argument("--customers", help="customers table (default DATA/static/customers)")
    parser.add_argument("--accounts", help="accounts table (default DATA/static/accounts)")
    parser.add_argument("--output", help="output directory (default DATA/out/transactions_enrich)")
    args = parser.parse_args(argv)
    source = resolve(args.input, args.data, "transactions")
    customers_path = resolve(args.customers, args.data, "static", "customers")
    accounts_path = resolve(args.accounts, args.data, "static", "accounts")
    output = resolve(args.output, args.data, "out", "transactions_enrich")

    spark = SparkSession.builder.appName("transactions-enrich").getOrCreate()
    transactions = json_stream(spark, TRANSACTION_SCHEMA, source, args.max_files_per_trigger)
    customers = spark.read.schema(CUSTOMER_SCHEMA).json(customers_path)
    accounts = spark.read.schema(ACCOUNT_SCHEMA).json(accounts_path)
    (
        build(transactions, customers, accounts)
        .writeStream.queryName(QUERY_NAME)
        .format("json")
        .outputMode("append")
        .start(output)
    )
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
