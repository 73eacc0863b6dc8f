"""Running counts per account through an idempotent foreachBatch, and the raw copy."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import counts_per_key as job
import pytest
from common.schemas import TRANSACTION_SCHEMA
from common.streams import batch_writer
from generate_events import write_batch

from tests.jobs import model
from tests.jobs.conftest import read_json_dir
from tests.jobs.streams import transaction_files

pytestmark = pytest.mark.spark


def test_counts_in_batch(spark: Any, tmp_path: Path) -> None:
    events = [e for batch in transaction_files(3, seed=8, duplicate_fraction=0.2) for e in batch]
    write_batch(tmp_path / "tx", events)
    frame = spark.read.schema(TRANSACTION_SCHEMA).json(str(tmp_path / "tx"))

    got = {r.account_id: r["count"] for r in job.build_counts(frame).collect()}

    assert got == Counter(e["account_id"] for e in events)


def test_batch_writer_replay_overwrites_its_batch(spark: Any, tmp_path: Path) -> None:
    write = batch_writer(str(tmp_path / "out"))
    first = spark.createDataFrame([("acct-1", 1), ("acct-2", 5)], "account_id string, count long")
    write(first, 3)
    write(first, 3)  # the same batch, replayed after a failure
    write(spark.createDataFrame([("acct-1", 2)], "account_id string, count long"), 4)

    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["batch=3", "batch=4"]
    rows = read_json_dir(tmp_path / "out" / "batch=3")
    assert sorted((r["account_id"], r["count"]) for r in rows) == [("acct-1", 1), ("acct-2", 5)]


def final_counts(output: Path) -> dict[str, int]:
    """Each account's count in the highest batch that wrote it."""
    latest: dict[str, tuple[int, int]] = {}
    for directory in sorted((output / "counts").iterdir()):
        batch = int(directory.name.removeprefix("batch="))
        for row in read_json_dir(directory):
            if row["account_id"] not in latest or latest[row["account_id"]][0] < batch:
                latest[row["account_id"]] = (batch, row["count"])
    return {account: count for account, (_, count) in latest.items()}


def test_streaming_counts_survive_a_restart(spark: Any, run_job: Any, tmp_path: Path) -> None:
    batches = transaction_files(3, seed=10, duplicate_fraction=0.2)
    source, output = tmp_path / "in", tmp_path / "out"
    argv = ["--input", str(source), "--output", str(output)]
    names = {job.COUNTS, job.RAW}

    with run_job(job.main, argv, names) as run:
        for seq in range(2):
            write_batch(source, batches[seq])
            run.process(seq + 1)
    first = [e for batch in batches[:2] for e in batch]
    assert final_counts(output) == Counter(e["account_id"] for e in first)

    # The same checkpoints: the counts go on from the state, nothing is read twice.
    with run_job(job.main, argv, names) as run:
        write_batch(source, batches[2])
        run.process(3)

    everything = [e for batch in batches for e in batch]
    assert final_counts(output) == Counter(e["account_id"] for e in everything)

    def raw_key(row: dict[str, Any]) -> tuple[Any, ...]:
        return (row["transaction_id"], model.cents(row["amount"]), model.ms(row["event_time"]))

    raw = read_json_dir(output / "raw")
    assert Counter(raw_key(r) for r in raw) == Counter(raw_key(e) for e in everything)
    batch_dirs = sorted(int(p.name.removeprefix("batch=")) for p in (output / "counts").iterdir())
    assert batch_dirs == list(range(len(batch_dirs)))
