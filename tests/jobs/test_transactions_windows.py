"""Tumbling and sliding event-time windows per account, with a watermark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import transactions_windows as job
from common.schemas import TRANSACTION_SCHEMA
from generate_events import write_batch
from pyspark.sql import functions as F

from tests.jobs import model
from tests.jobs.conftest import read_json_dir
from tests.jobs.streams import flush_files, transaction_files

pytestmark = pytest.mark.spark

MINUTE = 60_000


def collect(frame: Any) -> dict[tuple[str, int], tuple[int, Any]]:
    rows = frame.select(
        "account_id",
        F.unix_millis("window_start").alias("start"),
        F.unix_millis("window_end").alias("end"),
        "tx_count",
        "total_amount",
    ).collect()
    return {(r.account_id, r.start): (r.tx_count, r.total_amount) for r in rows}


def test_tumbling_and_sliding_in_batch(spark: Any, tmp_path: Path) -> None:
    events = [e for batch in transaction_files(6, seed=1, late_from=2) for e in batch]
    write_batch(tmp_path / "tx", events)
    frame = spark.read.schema(TRANSACTION_SCHEMA).json(str(tmp_path / "tx"))

    tumbling = job.build_tumbling(frame)
    sliding = job.build_sliding(frame)

    assert tumbling.columns == [
        "account_id",
        "window_start",
        "window_end",
        "tx_count",
        "total_amount",
    ]
    assert collect(tumbling) == model.all_windows(events, MINUTE, MINUTE)
    assert collect(sliding) == model.all_windows(events, 2 * MINUTE, MINUTE)
    ends = tumbling.select(
        (F.unix_millis("window_end") - F.unix_millis("window_start")).alias("size")
    ).distinct()
    assert [r.size for r in ends.collect()] == [MINUTE]


def test_streaming_windows_drop_late_events(spark: Any, run_job: Any, tmp_path: Path) -> None:
    batches = transaction_files(7, seed=2, late_from=4)
    batches += flush_files(batches)
    delay = 30_000
    expected = {}
    for name, size in ((job.TUMBLING, MINUTE), (job.SLIDING, 2 * MINUTE)):
        truth = model.windows(batches, size, MINUTE, delay, lag=0)
        assert truth == model.windows(batches, size, MINUTE, delay, lag=1), "ambiguous data"
        everything = model.all_windows([e for b in batches for e in b], size, MINUTE)
        kept = sum(count for count, _ in truth.values())
        real = sum(
            count for (account, _), (count, _) in everything.items() if account != "acct-flush"
        )
        assert kept < real, "no late row was dropped"
        expected[name] = truth

    source, output = tmp_path / "in", tmp_path / "out"
    argv = ["--input", str(source), "--output", str(output), "--watermark", "30 seconds"]
    with run_job(job.main, argv, {job.TUMBLING, job.SLIDING}) as run:
        for seq, batch in enumerate(batches):
            write_batch(source, batch)
            run.process(seq + 1)

    for name, truth in expected.items():
        rows = read_json_dir(output / name)
        got = {
            (r["account_id"], model.ms(r["window_start"])): (r["tx_count"], r["total_amount"])
            for r in rows
        }
        assert len(got) == len(rows), f"{name}: a window was written twice"
        assert got == truth, name
