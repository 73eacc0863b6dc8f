"""De-duplication by transaction_id within the watermark."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import transactions_dedup as job
from common.schemas import TRANSACTION_SCHEMA
from generate_events import file_events, write_batch
from pyspark.sql import functions as F

from tests.jobs import model
from tests.jobs.conftest import read_json_dir
from tests.jobs.streams import transaction_files

pytestmark = pytest.mark.spark


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["transaction_id"],
        row["account_id"],
        row["customer_id"],
        model.cents(row["amount"]),
        row["event_time"] if isinstance(row["event_time"], int) else model.ms(row["event_time"]),
        row["type"],
    )


def test_dedup_in_batch(spark: Any, tmp_path: Path) -> None:
    events = [
        event
        for seq in range(3)
        for event in file_events(
            "transactions", seq, seed=9, events_per_file=40, duplicate_fraction=0.3
        )
    ]
    assert len(events) > len({e["transaction_id"] for e in events}), "no duplicates generated"
    write_batch(tmp_path / "tx", events)
    frame = spark.read.schema(TRANSACTION_SCHEMA).json(str(tmp_path / "tx"))

    result = job.build(frame).withColumn("event_time", F.unix_millis("event_time"))
    rows = [row.asDict() for row in result.collect()]

    got = sorted(key(r) for r in rows)
    assert got == sorted({key(e) for e in events})


def test_streaming_dedup_drops_copies_and_late_events(
    spark: Any, run_job: Any, tmp_path: Path
) -> None:
    batches = transaction_files(6, seed=6, late_from=3, duplicate_fraction=0.25)
    delay = 30_000
    truth = model.dedup(batches, delay, lag=0)
    assert truth == model.dedup(batches, delay, lag=1), "ambiguous data"
    everything = [e for batch in batches for e in batch]
    ids = Counter(e["transaction_id"] for e in everything)
    assert any(n > 1 for n in ids.values()), "no duplicates"
    assert len(truth) < len(ids), "no late event was dropped"

    source, output = tmp_path / "in", tmp_path / "out"
    with run_job(job.main, ["--input", str(source), "--output", str(output)], {"dedup"}) as run:
        for seq, batch in enumerate(batches):
            write_batch(source, batch)
            run.process(seq + 1)

    rows = read_json_dir(output)
    assert sorted(key(r) for r in rows) == sorted(key(e) for e in truth)
