"""The orders pipeline: filter, UDF from the job's helper package, price with tax."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orders
import pytest
from common.schemas import ORDER_SCHEMA
from generate_events import file_events, write_batch
from pyspark.sql import functions as F

from tests.jobs.conftest import read_json_dir
from tests.jobs.model import ms

pytestmark = pytest.mark.spark


def expected(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Ground truth: the orders over 100, status upper case, price * 1.2 to the cent."""
    rows = []
    for event in events:
        if event["total_price"] is None or not event["total_price"] > 100:
            continue
        status = event["order_status"]
        rows.append(
            (
                event["order_id"],
                event["customer_id"],
                None if status is None else status.strip().upper(),
                Decimal(str(event["total_price"])),
                (Decimal(str(event["total_price"])) * Decimal("1.2")).quantize(Decimal("0.01")),
                ms(event["order_time"]),
            )
        )
    return sorted(rows)


EDGE_CASES = [
    {
        "order_id": "e1",
        "customer_id": "c",
        "order_status": " shipped ",
        "total_price": 100.01,
        "order_time": "2025-01-01T00:00:00.250Z",
    },
    {
        "order_id": "e2",
        "customer_id": "c",
        "order_status": "Pending",
        "total_price": 100.0,
        "order_time": "2025-01-01T00:00:01.000Z",
    },
    {
        "order_id": "e3",
        "customer_id": "c",
        "order_status": None,
        "total_price": 250.5,
        "order_time": "2025-01-01T00:00:02.000Z",
    },
    {
        "order_id": "e4",
        "customer_id": "c",
        "order_status": "delivered",
        "total_price": None,
        "order_time": "2025-01-01T00:00:03.000Z",
    },
]


def test_build_filters_normalises_and_taxes(spark: Any, tmp_path: Path) -> None:
    events = file_events("orders", 0, seed=7, events_per_file=60) + EDGE_CASES
    write_batch(tmp_path / "orders", events)
    frame = spark.read.schema(ORDER_SCHEMA).json(str(tmp_path / "orders"))

    result = orders.build(frame)

    assert result.columns == [
        "order_id",
        "customer_id",
        "order_status",
        "total_price",
        "price_with_tax",
        "order_time",
    ]
    rows = sorted(
        (
            r.order_id,
            r.customer_id,
            r.order_status,
            Decimal(str(r.total_price)),
            Decimal(str(r.price_with_tax)),
            r.millis,
        )
        for r in result.withColumn("millis", F.unix_millis("order_time")).collect()
    )
    truth = expected(events)
    assert rows == truth
    assert 10 < len(truth) < 60
    assert (
        "e1",
        "c",
        "SHIPPED",
        Decimal("100.01"),
        Decimal("120.01"),
        ms("2025-01-01T00:00:00.250Z"),
    ) in rows
    assert {r[0] for r in rows}.isdisjoint({"e2", "e4"})


def test_build_parameters(spark: Any) -> None:
    frame = spark.createDataFrame(
        [("a", "c", "new", 60.0, None), ("b", "c", "new", 40.0, None)], ORDER_SCHEMA
    )
    rows = orders.build(frame, min_total=50, tax_rate=1.1).collect()
    assert [(r.order_id, r.order_status, r.price_with_tax) for r in rows] == [("a", "NEW", 66.0)]


def test_main_streams_orders_to_json(spark: Any, run_job: Any, tmp_path: Path) -> None:
    source, output = tmp_path / "in", tmp_path / "out"
    argv = ["--input", str(source), "--output", str(output)]
    written: list[dict[str, Any]] = []
    with run_job(orders.main, argv, {"orders"}) as job:
        for seq in range(2):
            events = file_events("orders", seq, seed=3, events_per_file=40)
            write_batch(source, events)
            written += events
            job.process(seq + 1)

    rows = sorted(
        (
            r["order_id"],
            r["customer_id"],
            r["order_status"],
            r["total_price"],
            r["price_with_tax"],
            ms(r["order_time"]),
        )
        for r in read_json_dir(output)
    )
    assert rows == expected(written)
    assert (tmp_path / "checkpoints" / "orders" / "offsets").is_dir()
