"""What a query's checkpoint takes on storage, part by part, and which parts grow with age.

A query's checkpoint (``<execution.checkpointing.dir>/<JobID>/<identity>/``) holds Spark's
logs and state (the user's view: docs/guides/bounded-checkpoints.md):

``offsets``, ``commits``
    one small file per micro-batch, purged by Spark to ``spark.sql.streaming.minBatchesToRetain``
    batches (``execution.checkpointing.num-retained``): bounded.
``state``
    the operators' state (RocksDB's SST files and changelogs, or HDFS-backed deltas and
    snapshots, and ``_metadata``): grows with the state, versions beyond the retained
    batches are removed by Spark's maintenance.
``sources``
    each source's own log. A file source's (``FileStreamSourceLog``) lists **every input file
    the query has ever read**, rewritten whole at every compaction: it grows with every input
    file for as long as the query runs, and nothing in Spark shrinks it (``maxFileAge`` only
    forgets old files in memory, the compacted log keeps them: SPARK-29995).
``metadata``
    the query's id (and anything else at the top): a few bytes.
``sink_metadata``
    not in the checkpoint but beside the output: Spark's file sink logs every file it ever
    wrote in ``<output>/_spark_metadata``, which grows the same way (its ``retention`` option
    bounds it, at the price of readers no longer seeing older files).

:func:`measure` sizes them with one listing each (names and sizes, never a file's content, so
it is cheap on S3); the driver records a :class:`Footprint` per query in the job's status
(:class:`~flinkish_cli.registry.status.QueryStatus`), which ``flinkish info <JobID>``, the
dashboard and ``/metrics`` read. :data:`PARTS` owns what each part is and what to do about it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flinkish_cli.storage.base import Storage

#: How each part grows: with age (every input or output file ever seen), with the state, or
#: bounded by Spark's retention of batches.
AGE, STATE, BOUNDED = "age", "state", "bounded"
SINK_METADATA = "sink_metadata"
SINK_LOG_DIR = "_spark_metadata"


@dataclass(frozen=True)
class Part:
    """One part of a query's checkpoint: how it grows, why, and what bounds it."""

    name: str
    grows: str
    what: str
    advice: str = ""


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part("offsets", BOUNDED, "the offsets of each micro-batch, the last num-retained kept"),
        Part("commits", BOUNDED, "one commit marker per micro-batch, the last num-retained kept"),
        Part(
            "sources",
            AGE,
            "the sources' logs: a file source lists every input file the query has ever read, "
            "rewritten whole at each compaction (every fileSource.log.compactInterval batches), "
            "and keeps every compaction younger than its cleanup delay; maxFileAge does not "
            "shrink it (SPARK-29995)",
            "a lower flinkish.file-source.log.cleanup-delay (1 min unless set) keeps fewer "
            "compactions, and a larger flinkish.file-source.log.compact-interval so that "
            "they are rewritten less often; the newest compaction still grows with every input "
            "file: to start it afresh, drain the input and start the job again without -s "
            "(a new checkpoint), or read from a source that keeps offsets (Kafka)",
        ),
        Part("state", STATE, "the operators' state (RocksDB files, changelogs, _metadata)"),
        Part("metadata", BOUNDED, "the query's id"),
        Part(
            SINK_METADATA,
            AGE,
            "the file sink's log in <output>/_spark_metadata: every file the sink ever wrote, "
            "rewritten whole at each compaction",
            "the sink's own option('retention', '7d') drops older files from the log (Spark "
            "readers of the output then no longer see them: a choice for the script); "
            "a lower flinkish.file-sink.log.cleanup-delay (1 min unless set) keeps fewer old "
            "compactions",
        ),
    )
}
#: Where a file under the checkpoint goes when its top directory is no part of the above.
OTHER = "metadata"


@dataclass
class PartSize:
    """Files and bytes of one part."""

    files: int = 0
    bytes: int = 0


@dataclass
class Footprint:
    """A query's checkpoint as measured at ``measured`` (epoch seconds), by part."""

    measured: float
    parts: dict[str, PartSize] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Bytes in the checkpoint itself (the sink's log is beside the output, not in it)."""
        return sum(size.bytes for name, size in self.parts.items() if name != SINK_METADATA)

    def growing(self) -> list[tuple[Part, PartSize]]:
        """The parts that grow with age and hold something, each with its size."""
        return [
            (PARTS[name], size)
            for name, size in self.parts.items()
            if name in PARTS and PARTS[name].grows == AGE and size.bytes
        ]

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly view: sizes by part, and why and what to do for growing parts."""
        return {
            "measured": int(self.measured * 1000),
            "bytes": self.total,
            "parts": {
                name: {"bytes": size.bytes, "files": size.files, "grows": grows(name)}
                for name, size in self.parts.items()
            },
            "growing": [
                {"part": part.name, "bytes": size.bytes, "why": part.what, "advice": part.advice}
                for part, size in self.growing()
            ],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Footprint | None:
        """A footprint as the status file holds it; None when it is not one (damaged)."""
        if not isinstance(data, dict) or not isinstance(data.get("parts"), dict):
            return None
        try:
            parts = {
                str(name): PartSize(int(size["files"]), int(size["bytes"]))
                for name, size in data["parts"].items()
            }
            return cls(float(data["measured"]), parts)
        except (KeyError, TypeError, ValueError):
            return None


def grows(name: str) -> str:
    """How the part ``name`` grows: :data:`AGE`, :data:`STATE` or :data:`BOUNDED`."""
    return PARTS[name].grows if name in PARTS else BOUNDED


def part_of(relative: str) -> str:
    """The part a file of the checkpoint (its path relative to the checkpoint) belongs to."""
    top = relative.split("/", 1)[0]
    return top if top in PARTS and top != SINK_METADATA else OTHER


def measure(
    storage: Storage,
    checkpoint: str,
    sink: tuple[Storage, str] | None = None,
    now: float | None = None,
) -> Footprint:
    """Size the query's checkpoint at ``checkpoint`` by part, with one listing (and the file
    sink's log under ``sink``'s output directory, when it has one). Raises what the storage
    raises."""
    from flinkish_cli.storage import join

    footprint = Footprint(time.time() if now is None else now)
    prefix = checkpoint.rstrip("/") + "/"
    if storage.exists(checkpoint):
        for info in storage.walk(checkpoint):
            _add(footprint, part_of(info.path.removeprefix(prefix)), info.size)
    if sink is not None:
        sink_storage, output = sink
        log_dir = join(output.rstrip("/"), SINK_LOG_DIR)
        if sink_storage.exists(log_dir):
            footprint.parts[SINK_METADATA] = PartSize()
            for info in sink_storage.walk(log_dir):
                _add(footprint, SINK_METADATA, info.size)
    return footprint


def _add(footprint: Footprint, part: str, size: int) -> None:
    entry = footprint.parts.setdefault(part, PartSize())
    entry.files += 1
    entry.bytes += size
