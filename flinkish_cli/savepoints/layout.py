"""What Spark keeps in a streaming query's checkpoint, and which files resume a given batch.

A query's checkpoint directory holds::

    metadata                 the query id
    offsets/<N>              source offsets of batch N (written when the batch starts)
    commits/<N>              written when batch N has completed
    sources/<i>/<N>          per-source logs (e.g. the files a file source has read)
    state/<op>/<partition>/  state store files: <V>.delta / <V>.snapshot (hashmap) or
                             <V>.zip, <V>.changelog and SSTs/ (RocksDB); version V = batch + 1
    state/<op>/_metadata/    operator metadata and schemas

Hadoop's local file system keeps a checksum ``.<name>.crc`` next to each file; those travel
with their file. Files of batch N or state version N + 1 never change once commits/N exists,
which is what makes a savepoint of a running query consistent: it takes exactly the files of
the last committed batch C (commits up to C, state versions up to C + 1), and ignores the state
a running batch C + 1 is writing. It keeps the offsets of the planned batch C + 1 when they
exist: Spark then replays exactly that batch on resume, as it does after a crash, so a sink
that already committed it (Spark's file sink) skips the same rows it holds. A query that has
committed no batch yet is taken at C = -1: no state, the offsets of its planned batch 0 if it
has planned one, its sources' logs. Of a source's
log it keeps the newest compaction (``<N>.compact``: a file source's list of every file it
has read, up to batch N) and every entry after it, whatever their numbers: a source numbers
its log itself, and after a crash it can run ahead of the batch ids, so a batch's offsets may
point at an entry numbered higher than the batch. Spark reads an older batch's entries from
the newest compaction, so older compactions (kept by Spark for its cleanup delay) are left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.errors import SavepointError

#: State files carry their version first: "12.delta", "12.zip", "12_<uuid>.zip", ...
_VERSIONED_STATE = re.compile(r"^(\d+)(?:_[0-9A-Za-z-]+)?\.(delta|snapshot|zip|changelog)$")
_BATCH_FILE = re.compile(r"^(\d+)(?:\.compact)?$")
_COMPACTION = re.compile(r"^(\d+)\.compact$")
_VERSION = re.compile(r"^v\d+$")

HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def base_name(name: str) -> str:
    """``.12.delta.crc`` → ``12.delta``: the data file a checksum file belongs to."""
    if name.startswith(".") and name.endswith(".crc"):
        return name[1:-4]
    return name


def is_temporary(name: str) -> bool:
    """A file Spark or Hadoop is still writing (``x.tmp``), or the checksum of one
    (``..5.delta.<uuid>.TID5.tmp.crc``): it vanishes or is renamed at any moment and never
    belongs to a savepoint."""
    base = base_name(name)
    return base.endswith(".tmp") or base.startswith(".")


def batch_files(listing: list[str], last: int) -> list[str]:
    """Names of batch log files (offsets/, commits/, sources/) for batches up to ``last``."""
    kept = []
    for name in listing:
        match = _BATCH_FILE.match(base_name(name))
        if match and int(match.group(1)) <= last:
            kept.append(name)
    return kept


def source_log_needed(names: list[str]) -> set[str]:
    """Of the names in one source's log directory (``sources/<i>/``), those a resumed query
    needs: the newest compaction and every file numbered after it, checksums with their
    files. A log without compactions (a Kafka or rate source's, a young file source's) is
    kept whole, and so is any name that is not a log entry."""
    compactions = [
        int(match.group(1))
        for match in (_COMPACTION.match(base_name(name)) for name in names)
        if match
    ]
    if not compactions:
        return set(names)
    newest = max(compactions)
    kept = set()
    for name in names:
        match = _BATCH_FILE.match(base_name(name))
        if match is None or int(match.group(1)) > newest or base_name(name) == f"{newest}.compact":
            kept.add(name)
    return kept


def purgeable(relative: str, last_batch: int) -> bool:
    """Whether ``relative`` is an offset or commit log entry (or its checksum) that a resume
    at ``last_batch`` does not read, and that Spark deletes as the query runs on (it keeps
    ``spark.sql.streaming.minBatchesToRetain`` batches): a savepoint of a running query copies
    it when it can and goes on without it when Spark got there first. A resume reads the
    entries of the batches from ``last_batch - 1`` on: those are never purgeable."""
    top, _, name = relative.partition("/")
    if top not in ("offsets", "commits") or "/" in name:
        return False
    match = _BATCH_FILE.match(base_name(name))
    return match is not None and int(match.group(1)) < last_batch - 1


def companion(relative: str) -> str:
    """``commits/.5.crc`` ↔ ``commits/5``: the checksum of a file, or the file of a checksum."""
    head, _, name = relative.rpartition("/")
    other = base_name(name) if name != base_name(name) else f".{name}.crc"
    return f"{head}/{other}" if head else other


def state_file_needed(relative: str, last_batch: int) -> bool:
    """Whether a file under ``state/`` belongs to state versions up to ``last_batch + 1``."""
    match = _VERSIONED_STATE.match(base_name(relative.rsplit("/", 1)[-1]))
    return match is None or int(match.group(1)) <= last_batch + 1


@dataclass
class OffsetLogEntry:
    """``offsets/<N>``: the batch's watermark, the SQL settings it ran with, source offsets."""

    batch_id: int
    watermark_ms: int
    conf: dict[str, str]
    sources: list[Any]

    @property
    def shuffle_partitions(self) -> int | None:
        value = self.conf.get("spark.sql.shuffle.partitions")
        return int(value) if value else None

    @property
    def state_store_provider(self) -> str | None:
        return self.conf.get("spark.sql.streaming.stateStore.providerClass")


def parse_offsets(batch_id: int, text: str, where: str | None = None) -> OffsetLogEntry:
    """Parse an offset log file (``v1`` header, metadata line, one line per source).

    :class:`SavepointError` naming ``where`` (default ``offsets/<batch_id>``) when the file is
    not one (damaged, truncated, or not Spark's).
    """
    name = where or f"offsets/{batch_id}"
    lines = text.splitlines()
    if not lines or not _VERSION.match(lines[0].strip()):
        raise SavepointError(f"{name} is not a Spark offset log entry (no version line).")
    try:
        metadata = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
        if not isinstance(metadata, dict):
            raise ValueError("its metadata line is not a JSON object")
        watermark = int(metadata.get("batchWatermarkMs", 0))
        conf = metadata.get("conf") or {}
        if not isinstance(conf, dict):
            raise ValueError("its 'conf' is not a JSON object")
    except (ValueError, TypeError) as error:
        raise SavepointError(
            f"{name} is not a Spark offset log entry (its metadata line: {error})."
        ) from None
    sources: list[Any] = []
    for line in lines[2:]:
        line = line.strip()
        if not line or line == "-":
            sources.append(None)
            continue
        try:
            sources.append(json.loads(line))
        except ValueError:
            sources.append(line)
    return OffsetLogEntry(
        batch_id=batch_id,
        watermark_ms=watermark,
        conf={str(k): str(v) for k, v in conf.items()},
        sources=sources,
    )


def with_shuffle_partitions(text: str, partitions: int) -> str:
    """An offset log file's ``text`` with its SQL settings' shuffle partitions set to
    ``partitions`` (what a restarted query plans its exchanges with); the rest unchanged.
    :class:`SavepointError` when it is not an offset log file."""
    parse_offsets(0, text)
    lines = text.split("\n")
    metadata = json.loads(lines[1])
    metadata.setdefault("conf", {})["spark.sql.shuffle.partitions"] = str(partitions)
    lines[1] = json.dumps(metadata, separators=(",", ":"))
    return "\n".join(lines)


def planned_input(text: str) -> str:
    """What of an offset log file's ``text`` decides its batch's records: the sources'
    offsets, the watermark and the batch's timestamp, without the SQL settings it ran with
    (which :func:`with_shuffle_partitions` rewrites for a rescale). The same text for every
    run of a batch, rewritten or not. :class:`SavepointError` when it is not an offset log
    file."""
    parse_offsets(0, text)
    lines = text.split("\n")
    metadata = {k: v for k, v in json.loads(lines[1]).items() if k != "conf"}
    lines[1] = json.dumps(metadata, sort_keys=True, separators=(",", ":"))
    return "\n".join(line.rstrip() for line in lines).rstrip()


def check_commit(text: str, where: str) -> None:
    """A commit log file (``commits/<N>``): a version line and a JSON object."""
    lines = text.splitlines()
    if not lines or not _VERSION.match(lines[0].strip()):
        raise SavepointError(f"{where} is not a Spark commit log entry (no version line).")
    try:
        if len(lines) < 2 or not isinstance(json.loads(lines[1]), dict):
            raise ValueError("no JSON object")
    except ValueError as error:
        raise SavepointError(f"{where} is not a Spark commit log entry ({error}).") from None


def query_id_of(text: str, where: str) -> str | None:
    """The query id in a checkpoint's ``metadata`` file (``{"id": "..."}``)."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError as error:
        raise SavepointError(
            f"{where} is not a Spark checkpoint metadata file ({error})."
        ) from None
    query_id = data.get("id")
    return str(query_id) if query_id is not None else None


@dataclass
class StateOperator:
    """A stateful operator of a query: its id, partitions and store names."""

    operator_id: int
    partitions: int
    stores: list[str] = field(default_factory=list)


def numbered(names: list[str]) -> list[int]:
    """The batch numbers among ``names`` (ignoring checksums, temp and compact files)."""
    return sorted(int(n) for n in names if n.isdigit())
