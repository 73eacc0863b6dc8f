"""Session windows per customer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import transactions_sessions as job
from common.schemas import TRANSACTION_SCHEMA
from generate_events import write_batch
from pyspark.sql import functions as F

from tests.jobs import model
from tests.jobs.conftest import read_json_dir
from tests.jobs.streams import flush_files, transaction_files

pytestmark = pytest.mark.spark

GAP = 45_000


def test_sessions_in_batch(spark: Any, tmp_path: Path) -> None:
    events = [e for batch in transaction_files(12, seed=4) for e in batch]
    write_batch(tmp_path / "tx", events)
    frame = spark.read.schema(TRANSACTION_SCHEMA).json(str(tmp_path / "tx"))

    rows = (
        job.build(frame)
        .select(
            "customer_id",
            F.unix_millis("session_start").alias("start"),
            F.unix_millis("session_end").alias("end"),
            "tx_count",
            "total_amount",
        )
        .collect()
    )

    got = {(r.customer_id, r.start): (r.end, r.tx_count, r.total_amount) for r in rows}
    truth = model.sessions(events, GAP)
    assert got == truth
    assert len(truth) > len({e["customer_id"] for e in events}), "no customer had two sessions"


def test_streaming_sessions(spark: Any, run_job: Any, tmp_path: Path) -> None:
    batches = transaction_files(5, seed=5)
    real = [e for batch in batches for e in batch]
    batches += flush_files(batches)

    source, output = tmp_path / "in", tmp_path / "out"
    argv = ["--input", str(source), "--output", str(output)]
    with run_job(job.main, argv, {job.QUERY_NAME}) as run:
        for seq, batch in enumerate(batches):
            write_batch(source, batch)
            run.process(seq + 1)

    rows = read_json_dir(output)
    got = {
        (r["customer_id"], model.ms(r["session_start"])): (
            model.ms(r["session_end"]),
            r["tx_count"],
            r["total_amount"],
        )
        for r in rows
    }
    assert len(got) == len(rows)
    assert got == model.sessions(real, GAP)
