"""The exactly-once Kafka sink's partitions of a batch, on a real local Spark: a batch's
records keep their partition (and so their transactional id and marker) in every run of the
batch, whatever order Spark plans the batch's input in. Spark's Kafka source numbers a batch's
input partitions in the iteration order of its offsets, which a first run takes from the broker
and a replay from the offset log: the replay of a batch may read the source's topic-partitions
in the other order (the seam a kill test under load found: a partition skipped by its marker
dropped records, another one wrote committed records again)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from flinkish_cli.runtime.connectors.kafka_sink import by_content
from flinkish_cli.spark.local import local_session

pytestmark = pytest.mark.spark

LOOPBACK = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with local_session("local[2]", {**LOOPBACK, "spark.sql.shuffle.partitions": "2"}) as session:
        yield session


def partitions(df: Any) -> list[list[tuple[Any, ...]]]:
    return [sorted(tuple(row) for row in part) for part in df.rdd.glom().collect()]


def test_a_replayed_batch_puts_each_record_into_its_first_runs_partition(spark: Any) -> None:
    # the source's two topic-partitions' records, planned in one order, then in the other
    first = [(f"k{i % 7}", f"ORDER-{i}", "out") for i in range(0, 12)]
    second = [(f"k{i % 7}", f"ORDER-{i}", "out") for i in range(12, 24)]

    def batch(rows: list[tuple[str, str, str]]) -> Any:
        return spark.createDataFrame(
            spark.sparkContext.parallelize(rows, 2), "key string, value string, topic string"
        )

    run, replay = batch(first + second), batch(second + first)
    assert partitions(run) == partitions(replay)[::-1]  # Spark's own partitions: swapped
    hashed = partitions(by_content(run))
    assert hashed == partitions(by_content(replay))  # by content: the same partitions
    assert len(hashed) == 2 and all(hashed), hashed  # as many as the batch has, none empty
    assert sorted(row for part in hashed for row in part) == sorted(first + second)
    homes = {
        key: {i for i, part in enumerate(hashed) for k, *_ in part if k == key} for key, *_ in first
    }
    assert all(len(home) == 1 for home in homes.values()), homes  # a key's records: together


def test_a_batch_of_one_partition_is_written_as_it_is(spark: Any) -> None:
    one = spark.createDataFrame([("k", "V", "out")], "key string, value string, topic string")
    assert by_content(one.coalesce(1)).rdd.getNumPartitions() == 1


def test_records_without_a_key_are_partitioned_by_their_value(spark: Any) -> None:
    rows = [(None, f"ORDER-{i}") for i in range(24)]

    def batch(ordered: list[tuple[None, str]]) -> Any:
        return spark.createDataFrame(
            spark.sparkContext.parallelize(ordered, 2), "key binary, value string"
        )

    hashed = partitions(by_content(batch(rows)))
    assert hashed == partitions(by_content(batch(rows[12:] + rows[:12])))
    assert len(hashed) == 2 and all(hashed), hashed
