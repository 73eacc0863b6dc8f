"""``flinkish state export``: a query's state as files a notebook reads.

Each store selected is written by Spark as its own dataset, Parquet or JSON lines (Spark's
``part-*`` files, one JSON object per line), under the target directory::

    <dir>/<query>/<operator id>/<store>/part-*.parquet|json
    <dir>/_state.json        what was exported: source, batch, per store its path, rows and schemas

with the columns ``key`` and ``value`` (structs of the state's own fields, as ``state show``
prints them; no ``value`` for a store without values, such as a deduplication's) and
``partition`` (the state partition). In a notebook:
``spark.read.parquet("<dir>/counts/0/default").select("key.*", "value.*")``, or
``pandas.read_parquet`` on the same directory.

The target is local, on S3 or on HDFS. It is checked before Spark starts
(:func:`check_target`): a directory that is not empty is refused unless ``--overwrite`` is
given, which replaces the directories of the stores written (and ``_state.json``) and leaves
anything else there as it is. Spark writes a local target directly; for S3 and HDFS (Spark
has no S3 file system here, and the command line reaches HDFS through WebHDFS) it writes to a
temporary local directory, which is then uploaded with flinkish's storage layer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import FlinkishError, StateError
from flinkish_cli.state.source import NOTHING_READ

if TYPE_CHECKING:
    from flinkish_cli.state.model import OperatorState, StoreState
    from flinkish_cli.state.reader import StateReader
    from flinkish_cli.state.source import QuerySource
    from flinkish_cli.storage import Storage

FORMATS = ("parquet", "jsonl")
#: The index of an export, beside the stores' directories.
INDEX_FILE = "_state.json"
_SPARK_FORMAT = {"parquet": "parquet", "jsonl": "json"}


@dataclass
class ExportTarget:
    """Where an export goes, checked."""

    path: str
    storage: Storage
    overwrite: bool
    #: the local directory Spark writes: the target itself when local, else a temporary
    #: directory made when the export starts
    local_dir: str | None = None


@dataclass
class ExportedStore:
    query: str
    operator_id: int
    store: str
    path: str
    rows: int
    key_schema: str
    value_schema: str

    def summary(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "operator": self.operator_id,
            "store": self.store,
            "path": self.path,
            "rows": self.rows,
            "key-schema": self.key_schema,
            "value-schema": self.value_schema,
        }


@dataclass
class Export:
    """What ``state export`` wrote."""

    source: str
    target: str
    format: str
    stores: list[ExportedStore] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "format": self.format,
            "stores": [s.summary() for s in self.stores],
        }


def store_path(query: str, operator_id: int, store: str) -> str:
    """A store's directory, relative to the export's."""
    return f"{query}/{operator_id}/{store}"


def check_target(path: str, config: Any, overwrite: bool) -> ExportTarget:
    """Refuse a target the export cannot (or must not) write, before anything is read."""
    from flinkish_cli.storage import open_for_config
    from flinkish_cli.storage.uri import HDFS, LOCAL, S3_SCHEMES, scheme_of

    scheme = scheme_of(path)
    if scheme == LOCAL:
        if path.startswith("file:"):
            from flinkish_cli.storage.uri import local_path

            path = local_path(path)
        path = os.path.abspath(os.path.expanduser(path))
    elif scheme not in (*S3_SCHEMES, HDFS):
        raise StateError(
            f"{path} is not on a storage flinkish writes.",
            "Use a local path, s3:// or hdfs://.",
        )
    try:
        storage = open_for_config(path, config)
        if storage.exists(path):
            if not storage.is_dir(path):
                raise StateError(
                    f"{path} is a file, not a directory.",
                    f"{NOTHING_READ} or written. Name a new or empty directory.",
                )
            if storage.list(path) and not overwrite:
                raise StateError(
                    f"{path} is not empty.",
                    f"{NOTHING_READ} or written. Name a new or empty directory, or add "
                    "--overwrite to replace the stores' directories in it.",
                )
    except StateError:
        raise
    except FlinkishError as error:
        raise StateError(error.message, error.hint) from None
    if scheme == LOCAL:
        _check_writable(path)
        return ExportTarget(path, storage, overwrite, path)
    return ExportTarget(path, storage, overwrite)


def _check_writable(path: str) -> None:
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.access(existing, os.W_OK | os.X_OK) or not os.path.isdir(existing):
        raise StateError(
            f"{path} cannot be written ({existing} is not a writable directory).",
            f"{NOTHING_READ} or written. Name a directory you can write.",
        )


def export_stores(
    reader: StateReader,
    chosen: list[tuple[QuerySource, OperatorState, StoreState]],
    target: ExportTarget,
    fmt: str,
) -> Export:
    """Write each store of ``chosen`` under the target, then the index."""
    result = Export(reader.source.path, target.path, fmt)
    staged = target.local_dir is None
    if staged:
        target.local_dir = tempfile.mkdtemp(prefix="flinkish-export-")
    assert target.local_dir is not None
    try:
        for query, operator, store in chosen:
            relative = store_path(query.name, operator.operator_id, store.name)
            local = os.path.join(target.local_dir, relative)
            frame = reader.frame(query, operator, store)
            writer = frame.write.mode("overwrite" if target.overwrite else "errorifexists")
            try:
                writer.format(_SPARK_FORMAT[fmt]).save(local)
            except Exception as error:
                from flinkish_cli.state.reader import spark_failure

                what = f"the store '{store.name}' of query '{query.name}' to {local}"
                raise spark_failure(what, error, "write") from error
            result.stores.append(
                ExportedStore(
                    query.name,
                    operator.operator_id,
                    store.name,
                    f"{target.path}/{relative}",
                    _rows_written(reader.spark, local, fmt),
                    store.key_schema,
                    store.value_schema,
                )
            )
        index = json.dumps(result.summary(), indent=1)
        with open(os.path.join(target.local_dir, INDEX_FILE), "w") as handle:
            handle.write(index + "\n")
        if staged:
            _upload(target, target.local_dir, result)
    finally:
        if staged:
            shutil.rmtree(target.local_dir, ignore_errors=True)
    return result


def _rows_written(spark: Any, directory: str, fmt: str) -> int:
    """The rows in what Spark wrote (Parquet's footers; JSON lines counted)."""
    if fmt == "parquet":
        return int(spark.read.parquet(directory).count())
    rows = 0
    for name in os.listdir(directory):
        if name.startswith("part-"):
            with open(os.path.join(directory, name), "rb") as handle:
                rows += sum(1 for line in handle if line.strip())
    return rows


def _upload(target: ExportTarget, staged: str, result: Export) -> None:
    """Upload what Spark wrote into ``staged`` to the target (S3 or HDFS)."""
    from flinkish_cli.storage import LocalStorage, join

    local = LocalStorage(staged)
    for store in result.stores:
        relative = store_path(store.query, store.operator_id, store.store)
        destination = join(target.path, relative)
        if target.overwrite and target.storage.exists(destination):
            target.storage.delete_tree(destination)
        local.copy_tree(join(staged, relative), target.storage, destination)
    local.copy_tree(staged, target.storage, target.path, files=[INDEX_FILE])
