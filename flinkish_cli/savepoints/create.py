"""Taking a savepoint of a job's queries at their last committed batches.

Runs in the job's driver (which can reach every storage the job uses, HDFS included),
while the queries keep running, or after a graceful stop. The steps, for each query:

1. find its last committed batch C (the newest ``commits/<C>``), and refuse a checkpoint
   that holds a symbolic link or another special file (nothing is ever copied through a
   link) or whose log entries for C are damaged;
2. choose the files that resume at C (see :mod:`.layout`); a query that has committed no
   batch yet (C is -1: the job has just started, or its sources have had no input) is saved
   too, as Flink saves a job that has not completed a checkpoint: its identity
   (``metadata``), the first batch it planned, if any, and its sources' logs (where they
   start), and no state;
3. copy them into ``<savepoint>/<query>/``: hard links on one local file system, server-side
   copies within S3, parallel multipart transfers between local disk and S3;
4. checksum what landed (SHA-256), checking each file against the Hadoop checksum Spark
   wrote with it, so a damaged checkpoint file is refused rather than saved;

then make it durable (``fsync`` of every file and directory on local disk) and only then
write ``_metadata``, atomically and synced. Should the driver die or the storage fail
before that, the directory has no manifest and no restore, info or dispose treats it as a
savepoint; a failed savepoint is deleted when the storage still allows it.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flinkish_cli import __version__
from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints import layout
from flinkish_cli.savepoints.integrity import (
    DamagedFileError,
    digest_files,
    refuse_special_entries,
)
from flinkish_cli.savepoints.manifest import METADATA_FILE, FileEntry, Manifest, QueryManifest

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage

log = logging.getLogger("flinkish.savepoints")


@dataclass
class QuerySnapshot:
    """The files of one query's checkpoint that resume at its last committed batch."""

    name: str
    directory: str
    files: list[str]
    manifest: QueryManifest

    @property
    def purgeable(self) -> list[str]:
        """The files Spark may delete while the query runs on (:func:`layout.purgeable`)."""
        last = self.manifest.last_committed_batch
        return [name for name in self.files if layout.purgeable(name, last)]

    def without(self, vanished: list[str]) -> tuple[QuerySnapshot, list[str]]:
        """This snapshot less the ``vanished`` files and their checksum companions; and the
        companions to remove from the copy (a checksum without its file, or the reverse)."""
        gone = set(vanished) | {layout.companion(name) for name in vanished}
        kept = [name for name in self.files if name not in gone]
        orphans = sorted(gone.difference(vanished).intersection(self.files))
        return QuerySnapshot(self.name, self.directory, kept, self.manifest), orphans


def new_savepoint_name(job_id: str) -> str:
    """``savepoint-<first 6 of JobID>-<12 hex>``."""
    return f"savepoint-{job_id[:6]}-{uuid.uuid4().hex[:12]}"


def _relative(root: str, path: str) -> str:
    return path[len(root.rstrip("/")) + 1 :]


class DamagedCheckpointError(SavepointError):
    """A query's checkpoint with a damaged file (a log entry that does not parse, or a file
    that does not match the Hadoop checksum Spark wrote with it)."""

    def __init__(self, name: str, directory: str, detail: str, hint: str | None = None) -> None:
        super().__init__(
            f"The checkpoint of query '{name}' ({directory}) is damaged: {detail}.", hint
        )
        self.query = name
        self.directory = directory
        self.detail = detail


SAVEPOINT_DAMAGED_HINT = (
    "No savepoint was written, and the checkpoint was left as it is. Spark could not resume "
    "the query from it either: if the job stops, resume it from an earlier savepoint."
)


def last_committed_batch(storage: Storage, directory: str) -> int | None:
    """The newest batch in the commit log (``commits/<N>``) of ``directory``, a query's
    checkpoint; None when it has committed none."""
    from flinkish_cli.storage import join

    commits = layout.numbered([i.name for i in _list(storage, join(directory, "commits"))])
    return commits[-1] if commits else None


def snapshot_query(storage: Storage, directory: str, name: str) -> QuerySnapshot:
    """Choose the files of ``directory`` (a query's checkpoint) at its last committed batch.

    A query that has committed no batch yet is chosen at batch -1: its ``metadata`` (the
    query's id), the offsets of the first batch it planned (replayed exactly on resume, as
    Spark restarts it in place) and its sources' logs, never a state file (a batch that has
    not committed has no state to resume from). Resumed, such a query starts where it would
    have started: a file source reads the files its log has not listed as read, every one
    of them when it had read none. A checkpoint holding a symbolic link (or another special
    file) is refused, and so is one whose log entries for that batch do not parse
    (:class:`DamagedCheckpointError`).
    """
    from flinkish_cli.storage import join

    refuse_special_entries(
        storage, directory, f"The checkpoint of query '{name}' ({directory})", "Nothing was copied"
    )
    committed = last_committed_batch(storage, directory)
    last = committed if committed is not None else -1
    planned = layout.numbered([i.name for i in _list(storage, join(directory, "offsets"))])
    described = last if last >= 0 else (planned[0] if planned else None)
    try:
        if last >= 0:
            layout.check_commit(
                _read(storage, join(directory, "commits", str(last))), f"commits/{last}"
            )
        offsets = (
            layout.parse_offsets(
                described, _read(storage, join(directory, "offsets", str(described)))
            )
            if described is not None
            else layout.OffsetLogEntry(-1, 0, {}, [])
        )
    except DamagedCheckpointError:
        raise
    except SavepointError as error:
        raise DamagedCheckpointError(name, directory, error.message.rstrip(".")) from None
    files: list[str] = []
    operators: dict[int, set[str]] = {}
    partitions: dict[int, set[str]] = {}
    source_logs: dict[str, list[str]] = {}
    for info in storage.walk(directory):
        relative = _relative(directory, info.path)
        parts = relative.split("/")
        hidden = parts[-1].startswith(".") and not parts[-1].endswith(".crc")
        if relative.endswith(".tmp") or hidden or layout.is_temporary(parts[-1]):
            continue
        top = parts[0]
        if top == "offsets":
            # the planned batch C + 1 too: a resumed query replays exactly that batch, which
            # the sink may already hold, instead of planning a new one the sink would skip
            if layout.batch_files([parts[-1]], last + 1):
                files.append(relative)
        elif top == "sources":
            # chosen per source below: its newest compaction and all after it (layout)
            source_logs.setdefault("/".join(parts[:-1]), []).append(parts[-1])
        elif top == "commits":
            if layout.batch_files([parts[-1]], last):
                files.append(relative)
        elif top == "state":
            if last < 0:
                continue  # no committed batch: no state (what a batch under way wrote is not)
            if layout.state_file_needed(relative, last):
                files.append(relative)
            if len(parts) >= 4 and parts[1].isdigit() and parts[2].isdigit():
                operators.setdefault(int(parts[1]), set())
                partitions.setdefault(int(parts[1]), set()).add(parts[2])
                store = parts[3] if len(parts) >= 5 else ""
                if store and not store.startswith((".", "_")) and store != "SSTs":
                    operators[int(parts[1])].add(store)
        else:
            files.append(relative)
    for log_dir, names in source_logs.items():
        files.extend(f"{log_dir}/{name}" for name in layout.source_log_needed(names))
    metadata_id = None
    if "metadata" in files:
        try:
            metadata_id = layout.query_id_of(
                _read(storage, join(directory, "metadata")), "metadata"
            )
        except SavepointError as error:
            raise DamagedCheckpointError(name, directory, error.message.rstrip(".")) from None
    manifest = QueryManifest(
        name=name,
        last_committed_batch=last,
        query_id=metadata_id,
        watermark_ms=offsets.watermark_ms,
        source_offsets=offsets.sources,
        shuffle_partitions=offsets.shuffle_partitions,
        state_store_provider=offsets.state_store_provider,
        operators=[
            layout.StateOperator(op, len(partitions.get(op, ())), sorted(stores))
            for op, stores in sorted(operators.items())
        ],
        conf=offsets.conf,
    )
    return QuerySnapshot(name=name, directory=directory, files=sorted(files), manifest=manifest)


def _list(storage: Storage, directory: str) -> list:
    return storage.list(directory) if storage.exists(directory) else []


def _read(storage: Storage, path: str) -> str:
    """A small log file as text (undecodable bytes replaced: they fail parsing clearly)."""
    return storage.read_bytes(path).decode("utf-8", errors="replace")


def take_savepoint(
    source: Storage,
    queries: dict[str, str],
    target: Storage,
    target_dir: str,
    job_id: str,
    job_name: str,
    spark_version: str,
    before_copy: Callable[[], None] | None = None,
    shapes: dict[str, str] | None = None,
) -> str:
    """Save ``queries`` (name → checkpoint directory on ``source``) under ``target_dir``.

    ``shapes`` records the kind of each query whose identity was generated. Returns the
    savepoint's path. On failure the partial savepoint is deleted.
    """
    from flinkish_cli.storage import join

    if not queries:
        raise SavepointError("The job has no streaming query, so there is nothing to save.")
    path = join(target_dir, new_savepoint_name(job_id))
    try:
        snapshots = [snapshot_query(source, directory, name) for name, directory in queries.items()]
    except DamagedCheckpointError as damaged:
        raise DamagedCheckpointError(
            damaged.query, damaged.directory, damaged.detail, SAVEPOINT_DAMAGED_HINT
        ) from None
    for snapshot in snapshots:
        if snapshot.manifest.last_committed_batch < 0 and "metadata" not in snapshot.files:
            # Spark writes a query's metadata as the query starts: without it, and without a
            # committed batch, what was its checkpoint is gone (deleted, or never there)
            raise DamagedCheckpointError(
                snapshot.name,
                snapshot.directory,
                "it has neither the query's metadata nor a committed batch",
                SAVEPOINT_DAMAGED_HINT,
            )
        snapshot.manifest.shape = (shapes or {}).get(snapshot.name)
    if before_copy is not None:
        before_copy()
    try:
        entries: list[FileEntry] = []
        for index, snapshot in enumerate(snapshots):
            snapshot = snapshots[index] = copy_snapshot(
                source,
                _chooser(source, snapshot),
                target,
                join(path, snapshot.name),
                snapshot,
                what=f"Savepoint {path}",
            )
            try:
                entries += checksum_files(
                    target, path, [f"{snapshot.name}/{f}" for f in snapshot.files]
                )
            except DamagedFileError as damaged:
                raise DamagedCheckpointError(
                    snapshot.name,
                    snapshot.directory,
                    f"{damaged.relative.partition('/')[2]} {damaged.detail}",
                    SAVEPOINT_DAMAGED_HINT,
                ) from None
        manifest = Manifest(
            job_id=job_id,
            job_name=job_name,
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            flinkish_version=__version__,
            spark_version=spark_version,
            queries=[s.manifest for s in snapshots],
            files=entries,
        )
        target.sync_tree(path)  # the data is durable before the manifest vouches for it
        target.write_text(join(path, METADATA_FILE), manifest.to_json())  # atomic, fsynced
    except BaseException:
        try:
            target.delete_tree(path)
        except Exception as cleanup:  # the original error matters more
            log.warning("Could not remove the partial savepoint %s: %s", path, cleanup)
        raise
    return path


#: How often a running query's files are chosen anew when Spark deleted one a resume needs
#: before the copy reached it: the query ran past ``minBatchesToRetain`` batches meanwhile.
COPY_ATTEMPTS = 3


def copy_snapshot(
    source: Storage,
    choose: Callable[[], QuerySnapshot],
    target: Storage,
    dest: str,
    snapshot: QuerySnapshot | None = None,
    what: str = "Copy",
) -> QuerySnapshot:
    """Copy the files of a running query's ``snapshot`` (else ``choose()``'s) into ``dest``;
    the snapshot as copied. The copy's figures are logged as ``<what>: query '<name>':
    <CopyStats>`` (a savepoint's ``what`` is ``Savepoint <its path>``: scripts and the
    benchmark read that line).

    The query runs on meanwhile, and Spark deletes its old log entries and state versions:
    an old log entry gone before its copy is left out, with its checksum file; any other file
    gone means the query has moved on, so ``choose()`` chooses its files again at its new
    last committed batch, up to :data:`COPY_ATTEMPTS` times (then :class:`SavepointError`).
    """
    from flinkish_cli.storage import StorageNotFoundError, join

    snapshot = snapshot or choose()
    attempt = 1
    while True:
        if not snapshot.files:
            return snapshot
        try:
            stats = source.copy_tree(
                snapshot.directory, target, dest, snapshot.files, may_vanish=snapshot.purgeable
            )
        except StorageNotFoundError as missing:
            if not missing.path.startswith(snapshot.directory.rstrip("/") + "/"):
                raise
            if attempt == COPY_ATTEMPTS:
                raise SavepointError(
                    f"Query '{snapshot.name}' ran on faster than its checkpoint could be "
                    f"copied: Spark deleted {missing.path} before its copy, {COPY_ATTEMPTS} "
                    "times.",
                    "Keep more batches in the checkpoint (execution.checkpointing.num-retained)"
                    " or give the query a longer trigger interval, then try again.",
                ) from None
            log.info(
                "Query '%s' moved on during the copy of its checkpoint (%s is gone): choosing "
                "its files again",
                snapshot.name,
                missing.path,
            )
            target.delete_tree(dest)
            snapshot = choose()
            attempt += 1
            continue
        log.info("%s: query '%s': %s", what, snapshot.name, stats)
        snapshot, orphans = snapshot.without(stats.vanished)
        for name in orphans:
            target.delete(join(dest, name))
        return snapshot


def _chooser(source: Storage, snapshot: QuerySnapshot) -> Callable[[], QuerySnapshot]:
    """Choose ``snapshot``'s query's files again, its recorded shape kept."""

    def choose() -> QuerySnapshot:
        fresh = snapshot_query(source, snapshot.directory, snapshot.name)
        fresh.manifest.shape = snapshot.manifest.shape
        return fresh

    return choose


def checksum_files(storage: Storage, root: str, relative: list[str]) -> list[FileEntry]:
    """Size and SHA-256 of each file, computed in parallel, streaming; a file whose Hadoop
    checksum file is among ``relative`` is checked against it (:class:`DamagedFileError`)."""
    digests = digest_files(storage, root, relative)
    return [
        FileEntry(path=name, size=digests[name].size, sha256=digests[name].sha256)
        for name in relative
    ]
