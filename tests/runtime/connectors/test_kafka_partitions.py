"""Which partitions of a Kafka source a batch read that its start offsets did not hold
(:func:`flinkish_cli.runtime.connectors.kafka_offsets.added_partitions`): what the job's log
reports."""

from __future__ import annotations

import json

from flinkish_cli.runtime.connectors.kafka_offsets import added_partitions, added_partitions_line


def kafka(start: object, end: object) -> dict:
    return {"description": "KafkaV2[Subscribe[orders]]", "startOffset": start, "endOffset": end}


def test_partitions_in_the_end_offsets_only_are_added() -> None:
    progress = {
        "sources": [
            kafka(
                json.dumps({"orders": {"0": 5}}), json.dumps({"orders": {"0": 9, "2": 3, "1": 0}})
            ),
            {"description": "FileStreamSource[/in]", "startOffset": {"logOffset": 1}},
        ]
    }
    assert added_partitions(progress) == {"orders": [1, 2]}
    line = added_partitions_line("q", added_partitions(progress))
    assert line.startswith("Query 'q': Kafka topic 'orders' partitions 1, 2 are new")


def test_a_new_query_and_an_unchanged_topic_add_none() -> None:
    assert added_partitions({"sources": [kafka(None, {"orders": {"0": 3}})]}) == {}
    same = {"orders": {"0": 3, "1": 4}}
    assert added_partitions({"sources": [kafka(same, same)]}) == {}
