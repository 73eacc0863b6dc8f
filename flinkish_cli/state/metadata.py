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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.state.model import DEFAULT_STORE, JOIN_SIDES, StoreState

if TYPE_CHECKING:
    from flinkish_cli.storage.base import Storage

#: The metadata is small; anything bigger is not Spark's.
MAX_BYTES = 1024 * 1024
#: where Spark keeps an operator's metadata, under ``state/<id>/``
METADATA_DIR = "_metadata"
#: the first line of a metadata file
VERSIONS = ("v1", "v2")


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

    @property
    def variable_labels(self) -> tuple[str, ...]:
        """Each state variable as ``name (type)``, as the job graph shows them."""
        return tuple(
            f"{v['stateName']} ({v.get('stateVariableType') or '?'})" for v in self.state_variables
        )

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


def read_operator(
    storage: Storage, query_dir: str, operator_id: int, batch: int | None = None
) -> OperatorMetadata | None:
    """The metadata of operator ``operator_id`` in the query checkpoint ``query_dir`` on
    ``storage``, as of ``batch`` (None: the newest; a version-2 file of a later batch is not
    this batch's): the newest version-2 file that parses, else version 1's; None when none
    parses. The one reader of Spark's operator metadata: ``state``, the job graph and the
    state check all read it here."""
    from flinkish_cli.errors import StorageError
    from flinkish_cli.storage.uri import join

    base = join(query_dir, "state", str(operator_id), METADATA_DIR)
    try:
        numbered = [e.name for e in storage.list(join(base, "v2")) if e.name.isdigit()]
    except StorageError:
        numbered = []
    batches = sorted(int(n) for n in numbered if batch is None or int(n) <= batch)
    candidates = [join(base, "v2", str(b)) for b in reversed(batches)] + [join(base, "metadata")]
    for path in candidates:
        try:
            if storage.size(path) > MAX_BYTES:
                continue
            found = parse_metadata(storage.read_text(path))
        except (OSError, StorageError, UnicodeDecodeError):
            continue
        if found is not None:
            return found
    return None


def stateful_operators(storage: Storage, query_dir: str) -> list[int]:
    """The ids of the stateful operators with state in the query checkpoint ``query_dir``."""
    from flinkish_cli.storage.uri import join

    state = join(query_dir, "state")
    return sorted(int(e.name) for e in storage.list(state) if e.is_dir and e.name.isdigit())


def read_metadata(
    query_dir: str, operator_id: int, batch: int | None = None
) -> OperatorMetadata | None:
    """:func:`read_operator` of a query checkpoint on local disk (a copy ``state`` reads)."""
    from flinkish_cli.storage.local import LocalStorage

    return read_operator(LocalStorage(), query_dir, operator_id, batch)


def parse_metadata(text: str) -> OperatorMetadata | None:
    """A metadata file's content (``v1`` or ``v2``, then one JSON object); None when it is
    not one."""
    version, _, body = text.partition("\n")
    if version.strip() not in VERSIONS:
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
