"""A Kafka source's lag from its offsets (:func:`flinkish_cli.registry.batch_figures.kafka_lag`):
Flink's ``pendingRecords`` over all its partitions and ``records-lag-max``, and the query's
lag in its progress (what the autoscaler reads as its backlog)."""

from __future__ import annotations

import json

from flinkish_cli.registry.batch_figures import BatchFigures, kafka_lag
from flinkish_cli.registry.status import Progress

END = {"orders": {"0": 10, "1": 12}, "refunds": {"0": 4}}
LATEST = {"orders": {"0": 15, "1": 12}, "refunds": {"0": 7}}


def test_pending_records_are_summed_over_partitions_and_the_most_of_one_kept() -> None:
    lag = kafka_lag(json.dumps(END), LATEST)
    assert lag is not None and (lag.pending, lag.most, lag.partitions) == (8, 5, 3)
    assert kafka_lag({"logOffset": 3}, {"logOffset": 4}) is None
    assert kafka_lag(END, None) is None


def test_a_progress_reports_its_kafka_sources_pending_records_as_its_lag() -> None:
    source = {
        "description": "KafkaV2[Subscribe[orders, refunds]]",
        "endOffset": json.dumps(END),
        "latestOffset": json.dumps(LATEST),
        "metrics": {"maxOffsetsBehindLatest": "5", "avgOffsetsBehindLatest": "2.7"},
    }
    progress = {"batchId": 3, "timestamp": "2026-01-01T00:00:00.000Z", "sources": [source]}
    assert Progress.from_spark(progress).lag == 8.0
    (figures,) = BatchFigures.from_spark(progress).sources
    lag = figures.kafka_lag()
    assert lag is not None and lag.pending == 8 and figures.kafka_partitions() == 3
    file_source = {"description": "FileStreamSource[/in]", "metrics": {}}
    assert Progress.from_spark({**progress, "sources": [file_source]}).lag is None
