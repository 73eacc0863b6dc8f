"""The savepoint manifest, ``_metadata``: written last, so its presence means "complete".

It records the format version, the job (JobID, name), when and by which flinkish and Spark
versions it was taken, and for each query: its name, last committed batch, source offsets,
stateful operators and their partition counts, the state store provider, the SQL settings
Spark stored with the batch (those must match on restore), and every file with its size and
SHA-256 checksum.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints.layout import StateOperator

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage

FORMAT_VERSION = 1
METADATA_FILE = "_metadata"
_NAME = re.compile(r"^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$")


def is_savepoint_name(name: str) -> bool:
    """True for ``savepoint-<6 hex>-<12 hex>``, the names flinkish gives savepoints."""
    return bool(_NAME.match(name))


@dataclass
class FileEntry:
    """One file of the savepoint, relative to its root."""

    path: str
    size: int
    sha256: str


@dataclass
class QueryManifest:
    """One query's part of a savepoint."""

    name: str
    last_committed_batch: int
    query_id: str | None
    watermark_ms: int
    source_offsets: list[Any]
    shuffle_partitions: int | None
    state_store_provider: str | None
    operators: list[StateOperator] = field(default_factory=list)
    conf: dict[str, str] = field(default_factory=dict)

    @property
    def stateful(self) -> bool:
        return bool(self.operators)


@dataclass
class Manifest:
    """The whole ``_metadata`` document."""

    job_id: str
    job_name: str
    created: str
    flinkish_version: str
    spark_version: str
    queries: list[QueryManifest]
    files: list[FileEntry]
    format_version: int = FORMAT_VERSION
    kind: str = "savepoint"

    def query(self, name: str) -> QueryManifest | None:
        return next((q for q in self.queries if q.name == name), None)

    def files_of(self, query: str) -> list[FileEntry]:
        prefix = f"{query}/"
        return [f for f in self.files if f.path.startswith(prefix)]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> Manifest:
        """Parse a manifest; :class:`SavepointError` naming ``where`` if it is not one."""
        try:
            data = json.loads(text)
            version = data.get("format_version")
            if version != FORMAT_VERSION:
                raise SavepointError(
                    f"{where} has savepoint format version {version}; this flinkish reads "
                    f"version {FORMAT_VERSION}.",
                    "Restore it with the flinkish version that took it.",
                )
            queries = [
                QueryManifest(
                    **{
                        **q,
                        "operators": [StateOperator(**o) for o in q.get("operators", [])],
                    }
                )
                for q in data["queries"]
            ]
            files = [FileEntry(**f) for f in data["files"]]
            rest = {k: v for k, v in data.items() if k not in ("queries", "files")}
            return cls(queries=queries, files=files, **rest)
        except SavepointError:
            raise
        except (ValueError, KeyError, TypeError) as error:
            raise SavepointError(
                f"{where} is not a valid savepoint manifest ({type(error).__name__}: {error}).",
                "The savepoint is corrupted; restore from another savepoint.",
            ) from None


def load_manifest(storage: Storage, path: str, nothing_done: str) -> Manifest:
    """The manifest of the savepoint at ``path``; a clear error when there is none.

    ``nothing_done`` starts the hint (what the caller did not do, e.g. "Nothing was deleted").
    """
    from flinkish_cli.storage import join

    metadata = join(path, METADATA_FILE)
    if not storage.exists(metadata):
        if not storage.exists(path):
            raise SavepointError(f"{path} does not exist.", f"{nothing_done}. Check the path.")
        raise SavepointError(
            f"{path} is not a complete savepoint: it has no {METADATA_FILE}.",
            f"{nothing_done}. Its writing was probably interrupted; use another savepoint.",
        )
    return Manifest.from_json(storage.read_text(metadata), metadata)
