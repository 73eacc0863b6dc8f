"""Stream-static join of transactions with the customers and accounts tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import transactions_enrich as job
from common.schemas import ACCOUNT_SCHEMA, CUSTOMER_SCHEMA, TRANSACTION_SCHEMA
from generate_events import accounts_table, customers_table, file_events, write_batch, write_static
from pyspark.sql import functions as F

from tests.jobs import model
from tests.jobs.conftest import read_json_dir

pytestmark = pytest.mark.spark

CUSTOMERS, ACCOUNTS = 12, 30
UNKNOWN = {
    "transaction_id": "tx-unknown",
    "account_id": "acct-9999",
    "customer_id": "cust-9999",
    "amount": 1.5,
    "event_time": "2025-01-01T00:10:00.000Z",
    "type": "payment",
}


def expected(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    customers = {c["customer_id"]: c for c in customers_table(CUSTOMERS, seed=1)}
    accounts = {a["account_id"]: a for a in accounts_table(ACCOUNTS, CUSTOMERS, seed=1)}
    rows = []
    for e in events:
        customer = customers.get(e["customer_id"], {})
        account = accounts.get(e["account_id"], {})
        rows.append(
            (
                e["transaction_id"],
                e["account_id"],
                e["customer_id"],
                model.cents(e["amount"]),
                model.ms(e["event_time"]),
                e["type"],
                customer.get("name"),
                customer.get("country"),
                customer.get("segment"),
                account.get("account_type"),
                account.get("currency"),
            )
        )
    return sorted(rows)


def as_tuple(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["transaction_id"],
        row["account_id"],
        row["customer_id"],
        model.cents(row["amount"]),
        row["event_time"] if isinstance(row["event_time"], int) else model.ms(row["event_time"]),
        row["type"],
        row.get("customer_name"),
        row.get("country"),
        row.get("segment"),
        row.get("account_type"),
        row.get("currency"),
    )


def transactions(seq: int) -> list[dict[str, Any]]:
    return file_events(
        "transactions", seq, seed=1, events_per_file=40, customers=CUSTOMERS, accounts=ACCOUNTS
    )


def test_enrich_in_batch(spark: Any, tmp_path: Path) -> None:
    write_static(tmp_path / "static", CUSTOMERS, ACCOUNTS, seed=1)
    events = [*transactions(0), UNKNOWN]
    write_batch(tmp_path / "tx", events)
    read = spark.read
    frame = job.build(
        read.schema(TRANSACTION_SCHEMA).json(str(tmp_path / "tx")),
        read.schema(CUSTOMER_SCHEMA).json(str(tmp_path / "static" / "customers")),
        read.schema(ACCOUNT_SCHEMA).json(str(tmp_path / "static" / "accounts")),
    )
    rows = [
        r.asDict() for r in frame.withColumn("event_time", F.unix_millis("event_time")).collect()
    ]

    assert sorted(as_tuple(r) for r in rows) == expected(events)
    assert len(rows) == len(events)


def test_streaming_enrich(spark: Any, run_job: Any, tmp_path: Path) -> None:
    write_static(tmp_path / "static", CUSTOMERS, ACCOUNTS, seed=1)
    source, output = tmp_path / "transactions", tmp_path / "out"
    argv = ["--data", str(tmp_path), "--output", str(output)]
    written: list[dict[str, Any]] = []
    with run_job(job.main, argv, {"enriched"}) as run:
        for seq, batch in enumerate([transactions(0), [*transactions(1), UNKNOWN]]):
            write_batch(source, batch)
            written += batch
            run.process(seq + 1)

    rows = read_json_dir(output)
    assert sorted(as_tuple(r) for r in rows) == expected(written)
