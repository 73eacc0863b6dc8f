"""The documents of ``state ls`` and ``state show`` (``--output json``, ``jsonl``, the REST
API, the child process's answers): one owner, read back as they were written."""

from __future__ import annotations

import json

from flinkish_cli.state.model import (
    OperatorState,
    QueryState,
    StateListing,
    StateRow,
    StoreRows,
    StoreState,
    operator_kind,
)


def _listing() -> StateListing:
    join = OperatorState(
        0,
        "symmetricHashJoin",
        2,
        ["left-keyToNumValues", "left-keyWithIndexToValue"],
        [
            StoreState(
                "left",
                ("joinSide", "left"),
                "struct<field0:string>",
                "struct<a:int>",
                rows=3,
                bytes=10,
            ),
            StoreState("right", ("joinSide", "right"), rows=None, bytes=11),
        ],
        bytes=21,
    )
    return StateListing(
        "job",
        "job " + "ab" * 16,
        "ab" * 16,
        [QueryState("joined", "/cp/joined", 7, [join]), QueryState("raw", "/cp/raw", -1)],
    )


def test_a_listing_is_read_back_as_it_was_written() -> None:
    listing = _listing()
    document = json.loads(json.dumps(listing.summary()))
    again = StateListing.from_summary(document)
    assert again.summary() == listing.summary()
    operator = document["queries"][0]["operators"][0]
    assert (operator["kind"], operator["rows"], operator["bytes"]) == (
        "stream-stream join",
        None,
        21,
    )
    assert [s["name"] for s in operator["stores"]] == ["left", "right"]
    assert again.query("joined").operator(0).store("left").rows == 3


def test_show_as_one_document_and_as_json_lines() -> None:
    rows = StoreRows(
        "joined",
        0,
        "left",
        7,
        [
            StateRow({"field0": "k0"}, {"a": 1}, 1, 2, 30),
            StateRow({"field0": "k0"}, None, 1, 2, 30),
        ],
        total=5,
    )
    assert StoreRows.from_summary(json.loads(json.dumps(rows.summary()))) == rows
    assert rows.lines()[1] == {
        "query": "joined",
        "operator": 0,
        "store": "left",
        "key": {"field0": "k0"},
        "value": None,
        "partition": 1,
        "key-rows": 2,
        "key-bytes": 30,
    }


def test_operator_kinds_are_named_as_a_spark_user_names_them() -> None:
    assert operator_kind("stateStoreSave") == "aggregation"
    assert operator_kind("transformWithStateInPySparkExec") == "transformWithState"
    assert operator_kind("somethingNew") == "somethingNew"
    assert operator_kind(None) == "unknown"
