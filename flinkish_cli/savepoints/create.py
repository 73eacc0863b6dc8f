"""Taking a savepoint of a job's queries at their last committed batches.

Runs in the job's driver (which can reach every storage the job uses, HDFS included),
while the queries keep running, or after a graceful stop. The steps, for each query:

1. find its last committed batch C (the newest ``commits/<C>``);
2. choose the files that resume at C (see :mod:`.layout`);
3. copy them into ``<savepoint>/<query>/``: hard links on one local file system, server-side
   copies within S3, parallel multipart transfers between local disk and S3;
4. checksum what landed;

and finally write ``_metadata``. Should the driver die before that, the directory has no
manifest and no restore, info or dispose treats it as a savepoint.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flinkish_cli import __version__
from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints import layout
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


def new_savepoint_name(job_id: str) -> str:
    """``savepoint-<first 6 of JobID>-<12 hex>``."""
    return f"savepoint-{job_id[:6]}-{uuid.uuid4().hex[:12]}"


def _relative(root: str, path: str) -> str:
    return path[len(root.rstrip("/")) + 1 :]


def snapshot_query(
    storage: Storage, directory: str, name: str, require_commit: bool = True
) -> QuerySnapshot:
    """Choose the files of ``directory`` (a query's checkpoint) at its last committed batch.

    A savepoint needs a committed batch (``require_commit``); resuming a job's retained
    checkpoint does not: a query killed before its first commit resumes with its planned
    first batch, as Spark would restart it in place.
    """
    from flinkish_cli.storage import join

    commits = layout.numbered([i.name for i in _list(storage, join(directory, "commits"))])
    if not commits and require_commit:
        raise SavepointError(
            f"Query '{name}' has not completed a micro-batch yet, so it has no state to save.",
            "If the job is running, wait for its first batch ('flinkish checkpoint <JobID>').",
        )
    last = commits[-1] if commits else -1
    planned = layout.numbered([i.name for i in _list(storage, join(directory, "offsets"))])
    described = last if last >= 0 else (planned[0] if planned else None)
    offsets = (
        layout.parse_offsets(
            described, storage.read_text(join(directory, "offsets", str(described)))
        )
        if described is not None
        else layout.OffsetLogEntry(-1, 0, {}, [])
    )
    files: list[str] = []
    operators: dict[int, set[str]] = {}
    partitions: dict[int, set[str]] = {}
    for info in storage.walk(directory):
        relative = _relative(directory, info.path)
        parts = relative.split("/")
        hidden = parts[-1].startswith(".") and not parts[-1].endswith(".crc")
        if relative.endswith(".tmp") or hidden:
            continue
        top = parts[0]
        if top == "offsets":
            # the planned batch C + 1 too: a resumed query replays exactly that batch, which
            # the sink may already hold, instead of planning a new one the sink would skip
            if layout.batch_files([parts[-1]], last + 1):
                files.append(relative)
        elif top == "sources":
            # a source numbers its own log, which can run ahead of the batches after a crash:
            # keep all of it, as Spark sees it when it restarts in place
            files.append(relative)
        elif top == "commits":
            if layout.batch_files([parts[-1]], last):
                files.append(relative)
        elif top == "state":
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
    metadata_id = None
    if "metadata" in files:
        try:
            import json

            metadata_id = json.loads(storage.read_text(join(directory, "metadata"))).get("id")
        except ValueError:
            metadata_id = None
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


def take_savepoint(
    source: Storage,
    queries: dict[str, str],
    target: Storage,
    target_dir: str,
    job_id: str,
    job_name: str,
    spark_version: str,
    before_copy: Callable[[], None] | None = None,
) -> str:
    """Save ``queries`` (name → checkpoint directory on ``source``) under ``target_dir``.

    Returns the savepoint's path. On failure the partial savepoint is deleted.
    """
    from flinkish_cli.storage import join

    if not queries:
        raise SavepointError("The job has no streaming query, so there is nothing to save.")
    path = join(target_dir, new_savepoint_name(job_id))
    snapshots = [snapshot_query(source, directory, name) for name, directory in queries.items()]
    if before_copy is not None:
        before_copy()
    try:
        entries: list[FileEntry] = []
        for snapshot in snapshots:
            stats = source.copy_tree(
                snapshot.directory, target, join(path, snapshot.name), files=snapshot.files
            )
            log.info("Savepoint %s: query '%s': %s", path, snapshot.name, stats)
            entries += checksum_files(
                target, path, [f"{snapshot.name}/{f}" for f in snapshot.files]
            )
        manifest = Manifest(
            job_id=job_id,
            job_name=job_name,
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            flinkish_version=__version__,
            spark_version=spark_version,
            queries=[s.manifest for s in snapshots],
            files=entries,
        )
        target.write_text(join(path, METADATA_FILE), manifest.to_json())
    except BaseException:
        try:
            target.delete_tree(path)
        except Exception as cleanup:  # the original error matters more
            log.warning("Could not remove the partial savepoint %s: %s", path, cleanup)
        raise
    return path


def checksum_files(storage: Storage, root: str, relative: list[str]) -> list[FileEntry]:
    """Size and SHA-256 of each file, computed in parallel, streaming."""
    from flinkish_cli.storage import join

    def one(name: str) -> FileEntry:
        full = join(root, name)
        return FileEntry(path=name, size=storage.size(full), sha256=storage.checksum(full))

    if not relative:
        return []
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, relative))
