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

from flinkish_cli.errors import FlinkishError, SavepointError
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.registry.names import check_query_name
from flinkish_cli.savepoints.layout import StateOperator

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage

FORMAT_VERSION = 1
METADATA_FILE = "_metadata"
_NAME = re.compile(r"^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: The first four bytes of Apache Flink's checkpoint and savepoint ``_metadata`` (its
#: ``Checkpoints.HEADER_MAGIC_NUMBER``, a big-endian int).
FLINK_MAGIC = bytes.fromhex("4960672d")
#: No manifest is bigger (about 200 bytes per file: a million files are 200 MB).
MAX_MANIFEST_BYTES = 256 * 1024 * 1024


class IncompleteSavepointError(SavepointError):
    """A directory with no manifest that is not a query's checkpoint: a savepoint still being
    written, or one whose writing was interrupted (its process killed before the manifest,
    which is written last). Nothing in it is trusted."""


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
    #: the query's kind (sink and sources) when it had no name: its identity was generated
    #: from its order of start, and a resume checks it still names the same kind of query
    shape: str | None = None

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
    def from_json(cls, text: str | bytes, where: str) -> Manifest:
        """Parse and validate a manifest; :class:`SavepointError` naming ``where`` (and what
        was expected) for anything that is not one flinkish wrote."""
        data = _decode(text, where)
        version = data.get("format_version")
        if version is None or data.get("kind", "savepoint") != "savepoint":
            raise _not_a_manifest(where, "a JSON document of another kind")
        if version != FORMAT_VERSION:
            raise SavepointError(
                f"{where} has savepoint format version {_shown(version)}; this flinkish reads "
                f"version {FORMAT_VERSION}.",
                "Restore it with the flinkish version that took it.",
            )
        try:
            return _build(data, where)
        except _Invalid as problem:
            raise SavepointError(
                f"{where} is not a valid flinkish savepoint manifest: {problem}.",
                "The savepoint is damaged or was not written by flinkish; nothing was done "
                "with it. Use another savepoint.",
            ) from None


# -- validation ------------------------------------------------------------------------------
class _Invalid(Exception):
    """A field of the manifest that is missing or has the wrong type."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _not_a_manifest(where: str, found: str, hint: str | None = None) -> SavepointError:
    return SavepointError(
        f"{where} is {found}, not a flinkish savepoint manifest (the JSON document that "
        "'flinkish savepoint' and 'flinkish stop' write).",
        hint
        or "flinkish can only restore, inspect or dispose of savepoints it took; nothing "
        "was done with this one.",
    )


def _decode(text: str | bytes, where: str) -> dict[str, Any]:
    """The manifest's JSON object; a clear refusal for anything else."""
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    if not raw.strip():
        raise _not_a_manifest(where, "empty")
    if raw[:4] == FLINK_MAGIC:
        raise _not_a_manifest(
            where,
            "the metadata of an Apache Flink savepoint or checkpoint",
            "This is a Flink savepoint; flinkish can only restore savepoints it took (with "
            "'flinkish savepoint' or 'flinkish stop'). Nothing was done with it.",
        )
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _not_a_manifest(where, "binary data") from None
    if "\x00" in decoded:
        raise _not_a_manifest(where, "binary data")
    try:
        data = json.loads(decoded)
    except ValueError as error:
        line = getattr(error, "lineno", None)
        at = f" (at line {line})" if line else ""
        raise _not_a_manifest(where, f"text that is not JSON{at}") from None
    except RecursionError:
        raise _not_a_manifest(where, "JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise _not_a_manifest(where, f"a JSON {type(data).__name__}")
    return data


def _get(data: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise _Invalid(f"{where} has no '{key}'")
    value = data[key]
    if isinstance(value, bool) and bool not in types:
        raise _Invalid(f"'{key}' of {where} is {_shown(value)}")
    if not isinstance(value, types):
        raise _Invalid(f"'{key}' of {where} is {_shown(value)}")
    return value


def _optional(data: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    if data.get(key) is None:
        return None
    return _get(data, key, types, where)


def _query(q: object, where: str) -> QueryManifest:
    if not isinstance(q, dict):
        raise _Invalid(f"a query entry is {_shown(q)}")
    name = q.get("name")
    try:
        check_query_name(name, f"The savepoint manifest {where}")
    except FlinkishError as error:
        raise SavepointError(error.message, error.hint) from None
    here = f"query '{name}'"
    operators = []
    for o in _get(q, "operators", (list,), here) if "operators" in q else []:
        if not isinstance(o, dict):
            raise _Invalid(f"an operator of {here} is {_shown(o)}")
        stores = _get(o, "stores", (list,), here) if "stores" in o else []
        if not all(isinstance(store, str) for store in stores):
            raise _Invalid(f"the stores of an operator of {here} are {_shown(stores)}")
        operator_id = _get(o, "operator_id", (int,), here)
        partitions = _get(o, "partitions", (int,), here)
        if operator_id < 0 or partitions < 0:
            raise _Invalid(f"an operator of {here} has a negative id or partition count")
        operators.append(StateOperator(operator_id, partitions, list(stores)))
    conf = q.get("conf") or {}
    if not isinstance(conf, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in conf.items()
    ):
        raise _Invalid(f"'conf' of {here} is not a map of strings")
    batch = _get(q, "last_committed_batch", (int,), here)
    partitions = _optional(q, "shuffle_partitions", (int,), here)
    if batch < -1 or (partitions is not None and partitions < 1):
        raise _Invalid(f"{here} has a negative batch or partition count")
    offsets = _get(q, "source_offsets", (list,), here) if "source_offsets" in q else []
    return QueryManifest(
        name=name,  # type: ignore[arg-type]
        last_committed_batch=batch,
        query_id=_optional(q, "query_id", (str,), here),
        watermark_ms=_get(q, "watermark_ms", (int,), here) if "watermark_ms" in q else 0,
        source_offsets=offsets,
        shuffle_partitions=partitions,
        state_store_provider=_optional(q, "state_store_provider", (str,), here),
        operators=operators,
        conf=dict(conf),
        shape=_optional(q, "shape", (str,), here),
    )


def _file(f: object, queries: set[str]) -> FileEntry:
    if not isinstance(f, dict):
        raise _Invalid(f"a file entry is {_shown(f)}")
    path = _get(f, "path", (str,), "a file entry")
    parts = path.split("/")
    if (
        len(parts) < 2
        or path.startswith("/")
        or "\\" in path
        or any(p in ("", ".", "..") for p in parts)
        or parts[0] not in queries
    ):
        raise SavepointError(
            f"The savepoint manifest lists the file {_shown(path)}, which is not inside the "
            "directory of one of its queries.",
            "The savepoint is damaged or was not written by flinkish; nothing was done with "
            "it. Use another savepoint.",
        )
    size = _get(f, "size", (int,), f"file {path}")
    sha = _get(f, "sha256", (str,), f"file {path}")
    if size < 0 or not _SHA256.match(sha):
        raise _Invalid(f"file {path} has an invalid size or checksum")
    return FileEntry(path, size, sha)


def _build(data: dict[str, Any], where: str) -> Manifest:
    job_id = _get(data, "job_id", (str,), "the manifest")
    if not is_job_id(job_id):
        raise _Invalid(f"its job_id {_shown(job_id)} is not a JobID")
    raw_queries = _get(data, "queries", (list,), "the manifest")
    queries = [_query(q, where) for q in raw_queries]
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise _Invalid("it names a query twice")
    files = [_file(f, set(names)) for f in _get(data, "files", (list,), "the manifest")]
    if len({f.path for f in files}) != len(files):
        raise _Invalid("it lists a file twice")
    return Manifest(
        job_id=job_id.lower(),
        job_name=_get(data, "job_name", (str,), "the manifest"),
        created=_get(data, "created", (str,), "the manifest"),
        flinkish_version=_get(data, "flinkish_version", (str,), "the manifest"),
        spark_version=_get(data, "spark_version", (str,), "the manifest"),
        queries=queries,
        files=files,
    )


def load_manifest(storage: Storage, path: str, nothing_done: str) -> Manifest:
    """The manifest of the savepoint at ``path``; a clear error when there is none.

    Every reader (restore, ``info``, dispose) comes through here, so this is where a tree
    is refused before anything in it is read: one holding a symbolic link or another special
    file, a ``_metadata`` that is a directory, too big, or not a flinkish manifest.
    ``nothing_done`` starts the hint (what the caller did not do, e.g. "Nothing was deleted").
    """
    from flinkish_cli.savepoints.integrity import refuse_special_entries
    from flinkish_cli.storage import join

    metadata = join(path, METADATA_FILE)
    if not storage.exists(path):
        raise SavepointError(f"{path} does not exist.", f"{nothing_done}. Check the path.")
    refuse_special_entries(storage, path, f"Savepoint {path}", nothing_done)
    if not storage.exists(metadata):
        if any(storage.exists(join(path, name)) for name in ("offsets", "commits")):
            raise SavepointError(
                f"{path} is the Spark checkpoint of one query, not a savepoint.",
                f"{nothing_done}. Give a savepoint, or a job's retained checkpoint "
                "<execution.checkpointing.dir>/<JobID> (the directory above).",
            )
        raise IncompleteSavepointError(
            f"{path} is not a complete savepoint: it has no {METADATA_FILE}.",
            f"{nothing_done}. Its writing was probably interrupted; use another savepoint.",
        )
    info = storage.stat(metadata)
    if info.is_dir:
        raise _not_a_manifest(metadata, "a directory")
    if info.size > MAX_MANIFEST_BYTES:
        raise _not_a_manifest(
            metadata,
            f"{info.size} bytes, more than any flinkish manifest "
            f"(at most {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB)",
        )
    return Manifest.from_json(storage.read_bytes(metadata), metadata)
