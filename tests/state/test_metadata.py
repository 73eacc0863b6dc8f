"""Spark's operator metadata, read without Spark (files as Spark 4.3 writes them), and the
stores it means: a join's two sides, a transformWithState operator's variables, else one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.state.metadata import parse_metadata, pick_store, read_metadata, stores_of

AGGREGATION = (
    'v1\n{"operatorInfo":{"operatorId":0,"operatorName":"stateStoreSave"},"stateStoreInfo":'
    '[{"storeName":"default","numColsPrefixKey":0,"numPartitions":2}]}'
)
_JOIN_STORES = [
    {"storeName": f"{side}-{kind}", "numColsPrefixKey": 0, "numPartitions": 4}
    for side in ("left", "right")
    for kind in ("keyToNumValues", "keyWithIndexToValue")
]
JOIN = "v1\n" + json.dumps(
    {
        "operatorInfo": {"operatorId": 0, "operatorName": "symmetricHashJoin"},
        "stateStoreInfo": _JOIN_STORES,
    }
)


def _tws(variables: list[tuple[str, str]]) -> str:
    properties = {
        "timeMode": "NoTime",
        "outputMode": "Update",
        "stateVariables": [
            {"stateName": n, "stateVariableType": t, "ttlEnabled": False} for n, t in variables
        ],
    }
    return "v2\n" + json.dumps(
        {
            "operatorInfo": {"operatorId": 1, "operatorName": "transformWithStateInPandasExec"},
            "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": 2}],
            "operatorPropertiesJson": json.dumps(properties),
        }
    )


def test_each_kind_of_operator_has_its_stores() -> None:
    aggregation = parse_metadata(AGGREGATION)
    assert aggregation is not None
    assert (aggregation.name, aggregation.stores, aggregation.partitions) == (
        "stateStoreSave",
        ["default"],
        2,
    )
    assert [(s.name, s.option) for s in stores_of(aggregation, [])] == [("default", None)]
    join = parse_metadata(JOIN)
    assert join is not None and join.partitions == 4
    assert [(s.name, s.option) for s in stores_of(join, [])] == [
        ("left", ("joinSide", "left")),
        ("right", ("joinSide", "right")),
    ]
    tws = parse_metadata(_tws([("count", "ValueState"), ("seen", "ListState")]))
    assert [(s.name, s.option, s.variable_type) for s in stores_of(tws, [])] == [
        ("count", ("stateVarName", "count"), "ValueState"),
        ("seen", ("stateVarName", "seen"), "ListState"),
    ]
    # without metadata, a join is known by its store directories
    assert [s.name for s in stores_of(None, ["left-keyToNumValues"])] == ["left", "right"]
    assert [s.name for s in stores_of(None, [])] == ["default"]


@pytest.mark.parametrize(
    "text", ["", "v3\n{}", "v1\nnot json", 'v1\n{"operatorInfo": {}}', "v1\n[]", "\x00\x01"]
)
def test_what_is_not_spark_metadata_is_none(text: str) -> None:
    assert parse_metadata(text) is None


def test_the_version_2_file_of_the_batch_read_is_used(tmp_path: Path) -> None:
    v2 = tmp_path / "state" / "1" / "_metadata" / "v2"
    v2.mkdir(parents=True)
    (v2 / "0").write_text(_tws([("count", "ValueState")]))
    (v2 / "5").write_text(_tws([("count", "ValueState"), ("added", "MapState")]))
    (v2 / ".5.crc").write_text("crc")
    assert [v["stateName"] for v in read_metadata(str(tmp_path), 1, 4).state_variables] == ["count"]
    assert len(read_metadata(str(tmp_path), 1, 5).state_variables) == 2
    assert read_metadata(str(tmp_path), 0, 5) is None  # no such operator


def test_a_store_is_picked_by_name_or_refused_naming_the_others() -> None:
    stores = stores_of(parse_metadata(JOIN), [])
    assert pick_store("joined", 0, "stream-stream join", stores, "right").name == "right"
    with pytest.raises(StateNotFoundError) as missing:
        pick_store("joined", 0, "stream-stream join", stores, "default")
    assert missing.value.message == (
        "Operator 0 of query 'joined' (stream-stream join) has no store 'default' "
        "(its stores: left, right)."
    )
    with pytest.raises(StateError, match="has several stores: left, right"):
        pick_store("joined", 0, "stream-stream join", stores, None)
