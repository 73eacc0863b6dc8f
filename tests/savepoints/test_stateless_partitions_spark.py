"""A stateless query given new shuffle partitions (what an in-place rescale does to it) starts
again on real Spark, also when it was stopped in the middle of a batch: Spark takes a latest
uncommitted offset log entry whose partitions differ from the one before it for an unfinished
state repartition and refuses to start (found by the autoscaler benchmark: a scale-up stopped
a stateless query mid-batch, and its restarts all failed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.savepoints.layout import parse_offsets
from flinkish_cli.savepoints.restore import set_stateless_partitions
from flinkish_cli.storage import open_storage
from tests.fixtures.local_spark import stop_spark
from tests.fixtures.sink_log import committed_rows

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("stateless-partitions")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    stop_spark(session)


def _add(inputs: Path, n: int, rows: list[dict[str, Any]]) -> None:
    batch = [{"k": f"k{i % 7}", "seq": len(rows) + i} for i in range(n)]
    rows.extend(batch)
    (inputs / f"part-{len(rows):06d}.json").write_text(
        "".join(json.dumps(row) + "\n" for row in batch)
    )


def _run(spark: Any, inputs: Path, output: Path, checkpoint: Path) -> None:
    """One run of the query until it has read every file there, then stopped."""
    query = (
        spark.readStream.schema("k STRING, seq LONG")
        .option("maxFilesPerTrigger", 1)
        .json(str(inputs))
        .repartition("k")  # an exchange planned with the offset log's partitions
        .writeStream.format("json")
        .option("checkpointLocation", str(checkpoint))
        .start(str(output))
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None


def test_a_query_stopped_mid_batch_restarts_at_its_new_partitions_exactly_once(
    spark: Any, tmp_path: Path
) -> None:
    inputs, output, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "cp"
    inputs.mkdir()
    rows: list[dict[str, Any]] = []
    for _ in range(3):
        _add(inputs, 20, rows)
    _run(spark, inputs, output, checkpoint)
    # stopped in the middle of batch 2: planned (its offsets written), never committed
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)

    assert set_stateless_partitions(open_storage(str(tmp_path), None), str(checkpoint), 5)
    offsets = checkpoint / "offsets"
    assert [
        parse_offsets(b, (offsets / str(b)).read_text()).shuffle_partitions for b in (0, 1, 2)
    ] == [
        2,
        5,
        5,
    ]

    _add(inputs, 20, rows)
    _run(spark, inputs, output, checkpoint)
    written = committed_rows(output)
    assert sorted(row["seq"] for row in written) == [row["seq"] for row in rows]
    latest = max(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
    assert parse_offsets(latest, (offsets / str(latest)).read_text()).shuffle_partitions == 5
