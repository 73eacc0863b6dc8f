"""Spark's operator metadata in a query's checkpoint, read without Spark, and the stores it
means for ``flinkish state``.

Spark writes, for each stateful operator, ``state/<id>/_metadata/metadata`` (version 1) or,
for ``transformWithState``, ``state/<id>/_metadata/v2/<batch>`` (version 2, one file per
batch whose metadata changed)::

    v1
    {"operatorInfo": {"operatorId": 0, "operatorName": "stateStoreSave"},
     "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": 2}]}

and version 2 adds ``"operatorPropertiesJson"`` (a JSON string: the state variables of a
``transformWithState`` operator, its time mode). This is what Spark's ``state-metadata``
source reads; reading it here saves a Spark job per query, and lets ``state`` check a
``--store`` before Spark starts. :func:`stores_of` turns it into the stores ``state`` names
(see :mod:`.model`). A file that is missing or does not parse is None: Spark's
``state-metadata`` is asked instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.state.model import DEFAULT_STORE, JOIN_SIDES, StoreState

#: The metadata is small; anything bigger is not Spark's.
MAX_BYTES = 1024 * 1024


@dataclass
class OperatorMetadata:
    """An operator as Spark's metadata describes it."""

    operator_id: int
    name: str
    #: Spark's store names
    stores: list[str]
    partitions: int
    #: ``operatorPropertiesJson``, parsed (empty for version 1)
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def state_variables(self) -> list[dict[str, Any]]:
        """A transformWithState operator's state variables (``stateName``,
        ``stateVariableType``, ``ttlEnabled``)."""
        variables = self.properties.get("stateVariables")
        if not isinstance(variables, list):
            return []
        return [v for v in variables if isinstance(v, dict) and v.get("stateName")]

    @classmethod
    def from_spark(cls, rows: list[dict[str, Any]]) -> OperatorMetadata | None:
        """From Spark's ``state-metadata`` rows of one operator (one row per store)."""
        if not rows:
            return None
        try:
            properties = json.loads(rows[0].get("operatorProperties") or "{}")
        except ValueError:
            properties = {}
        return cls(
            operator_id=int(rows[0]["operatorId"]),
            name=str(rows[0]["operatorName"]),
            stores=sorted({str(r["stateStoreName"]) for r in rows}),
            partitions=max(int(r.get("numPartitions") or 0) for r in rows),
            properties=properties if isinstance(properties, dict) else {},
        )


def read_metadata(query_dir: str, operator_id: int, batch: int) -> OperatorMetadata | None:
    """The metadata of operator ``operator_id`` in a local query checkpoint, as of ``batch``
    (a version-2 file of a later batch is not this batch's); None when there is none that
    parses."""
    base = os.path.join(query_dir, "state", str(operator_id), "_metadata")
    v2 = os.path.join(base, "v2")
    path = os.path.join(base, "metadata")
    if os.path.isdir(v2):
        batches = sorted(int(n) for n in os.listdir(v2) if n.isdigit() and int(n) <= batch)
        if batches:
            path = os.path.join(v2, str(batches[-1]))
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    return parse_metadata(text)


def parse_metadata(text: str) -> OperatorMetadata | None:
    """A metadata file's content (``v1`` or ``v2``, then one JSON object); None when it is
    not one."""
    version, _, body = text.partition("\n")
    if version.strip() not in ("v1", "v2"):
        return None
    try:
        data = json.loads(body)
        info = data["operatorInfo"]
        stores = data["stateStoreInfo"]
        properties = json.loads(data.get("operatorPropertiesJson") or "{}")
        return OperatorMetadata(
            operator_id=int(info["operatorId"]),
            name=str(info["operatorName"]),
            stores=sorted(str(s["storeName"]) for s in stores),
            partitions=max([int(s.get("numPartitions") or 0) for s in stores] or [0]),
            properties=properties if isinstance(properties, dict) else {},
        )
    except (ValueError, KeyError, TypeError):
        return None


def stores_of(metadata: OperatorMetadata | None, layout_stores: list[str]) -> list[StoreState]:
    """The stores ``state`` reads for an operator (schemas and rows not filled in): a join's
    two sides, a transformWithState operator's variables, else Spark's default store.
    Without metadata, the store directories of the layout say whether it is a join."""
    spark_stores = metadata.stores if metadata else layout_stores
    if any(s.startswith(f"{side}-") for s in spark_stores for side in JOIN_SIDES):
        return [StoreState(side, ("joinSide", side)) for side in JOIN_SIDES]
    if metadata is not None and metadata.name.startswith("transformWithState"):
        return [
            StoreState(
                v["stateName"],
                ("stateVarName", v["stateName"]),
                variable_type=v.get("stateVariableType"),
            )
            for v in metadata.state_variables
        ]
    return [StoreState(DEFAULT_STORE, None)]


def pick_store(
    query: str, operator_id: int, kind: str, stores: list[StoreState], name: str | None
) -> StoreState:
    """The store ``--store`` names among an operator's (the only one when None); a
    :class:`StateError` naming the stores there are otherwise."""
    names = ", ".join(s.name for s in stores)
    if name is None:
        if len(stores) == 1:
            return stores[0]
        raise StateError(
            f"Operator {operator_id} of query '{query}' ({kind}) has several stores: {names}.",
            "Nothing was read. Name one with --store.",
        )
    found = next((s for s in stores if s.name == name), None)
    if found is None:
        raise StateNotFoundError(
            f"Operator {operator_id} of query '{query}' ({kind}) has no store '{name}' "
            f"(its stores: {names}).",
            "Nothing was read. 'flinkish state ls' lists them.",
        )
    return found
