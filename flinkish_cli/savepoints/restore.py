"""Restoring a job from a savepoint or from a retained checkpoint.

Before anything runs, the CLI validates what ``-s`` names (:func:`plan_restore`):

- a savepoint: its manifest is present and readable, every file is present with the right
  size and checksum;
- a retained checkpoint ``<execution.checkpointing.dir>/<JobID>``: every query directory
  has a committed batch; the job resumes at each query's latest one;
- a rescale (another parallelism than the savepoint's) of a stateful query needs the RocksDB
  state backend, whose state Spark can repartition offline.

A savepoint on ``hdfs://`` is checked the same way by the job's driver (which reaches HDFS
through Hadoop's FileSystem), before any query starts; the CLI has no JVM to read it.

The job's driver then restores each query before it starts (:func:`restore_query`): it
copies (or hard-links) the query's files into the job's own checkpoint directory, so the
savepoint itself is never modified (``no_claim``), and repartitions the state when the
parallelism changed. Every query of the savepoint must be matched by a query of the job
unless ``--allowNonRestoredState`` is given.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints.manifest import METADATA_FILE, Manifest, load_manifest

if TYPE_CHECKING:
    from flinkish_cli.storage import Storage
    from flinkish_cli.submission.plan import RestorePlan

log = logging.getLogger("flinkish.savepoints")


@dataclass
class RestoreSource:
    """What ``-s`` named, read and checked: a savepoint or a job's retained checkpoints."""

    path: str
    kind: str  # "savepoint" | "checkpoint"
    manifest: Manifest

    def query_dir(self, name: str) -> str:
        from flinkish_cli.storage import join

        return join(self.path, name)


def read_savepoint(storage: Storage, path: str, verify: bool = True) -> Manifest:
    """The manifest of the savepoint at ``path``, after checking every file it lists."""
    manifest = load_manifest(storage, path, "Nothing was started")
    if verify:
        verify_files(storage, path, manifest)
    return manifest


def verify_files(storage: Storage, path: str, manifest: Manifest) -> None:
    """Every file of the manifest present, with its size and checksum."""
    from flinkish_cli.storage import join

    sizes = {info.path[len(path.rstrip("/")) + 1 :]: info.size for info in storage.walk(path)}

    def check(entry: Any) -> str | None:
        size = sizes.get(entry.path)
        if size is None:
            return f"{entry.path} is missing"
        if size != entry.size:
            return f"{entry.path} has {size} bytes, the manifest says {entry.size}"
        if storage.checksum(join(path, entry.path)) != entry.sha256:
            return f"{entry.path} does not match its checksum"
        return None

    with ThreadPoolExecutor(max_workers=8) as pool:
        problems = [p for p in pool.map(check, manifest.files) if p]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SavepointError(
            f"Savepoint {path} is damaged: {problems[0]}{more}.",
            "Restore from another savepoint; this one is left as it is.",
        )


def read_checkpoint(storage: Storage, path: str) -> Manifest:
    """A manifest describing a job's retained checkpoints at their latest committed batches."""
    from flinkish_cli.savepoints.create import snapshot_query

    queries = []
    for info in storage.list(path) if storage.exists(path) else []:
        if not info.is_dir or info.name.startswith(("_", ".")):
            continue
        snapshot = snapshot_query(storage, info.path, info.name, require_commit=False)
        queries.append(snapshot.manifest)
    if not queries:
        raise SavepointError(
            f"{path} holds no query checkpoints to resume from.",
            "Give a savepoint or <execution.checkpointing.dir>/<JobID> of a job that ran.",
        )
    return Manifest(
        job_id=path.rstrip("/").rsplit("/", 1)[-1],
        job_name="",
        created="",
        flinkish_version="",
        spark_version="",
        queries=queries,
        files=[],
        kind="checkpoint",
    )


def open_source(storage: Storage, path: str) -> RestoreSource:
    """Read and validate what ``-s`` names."""
    from flinkish_cli.registry.jobid import is_job_id
    from flinkish_cli.storage import join

    name = path.rstrip("/").rsplit("/", 1)[-1]
    if storage.exists(join(path, METADATA_FILE)) or not is_job_id(name):
        return RestoreSource(path, "savepoint", read_savepoint(storage, path))
    return RestoreSource(path, "checkpoint", read_checkpoint(storage, path))


def check_rescale(manifest: Manifest, parallelism: int, backend: str) -> list[str]:
    """Queries whose state must be repartitioned; refuses a rescale the backend cannot do."""
    changed = [
        q
        for q in manifest.queries
        if q.stateful and q.shuffle_partitions and q.shuffle_partitions != parallelism
    ]
    for query in changed:
        provider = query.state_store_provider or ""
        if "RocksDB" not in provider:
            raise SavepointError(
                f"Query '{query.name}' keeps its state in {query.shuffle_partitions} partitions "
                f"with the hashmap state backend; it cannot be restored with parallelism "
                f"{parallelism}.",
                "Rescaling needs state.backend.type: rocksdb (for the job that took the "
                f"savepoint), or run with -p {query.shuffle_partitions}.",
            )
        if backend != "rocksdb":
            raise SavepointError(
                f"Query '{query.name}' was saved with the RocksDB state backend, but this run "
                f"uses '{backend}'.",
                "Restore with state.backend.type: rocksdb.",
            )
    return [q.name for q in changed]


def plan_restore(request: Any, config: Any) -> RestorePlan:
    """Check what ``run -s`` names before anything starts (run by the CLI)."""
    from flinkish_cli.storage import open_for_config
    from flinkish_cli.submission.plan import RestorePlan

    path = str(request.from_savepoint).rstrip("/")
    if not path.startswith("hdfs://"):  # HDFS needs a JVM: the driver checks it, see below
        source = open_source(open_for_config(path, config), path)
        parallelism = int(config.get("parallelism.default"))
        check_rescale(source.manifest, parallelism, str(config.get("state.backend.type")))
    return RestorePlan(
        source=path,
        allow_non_restored_state=bool(request.allow_non_restored_state),
        claim_mode=request.claim_mode,
    )


def match_queries(manifest: Manifest, job_queries: list[str], allow_non_restored: bool) -> None:
    """Every query of the savepoint must have a query of the job, unless allowed to drop it."""
    missing = [q.name for q in manifest.queries if q.name not in job_queries]
    if missing and not allow_non_restored:
        raise SavepointError(
            f"The savepoint has state for quer{'y' if len(missing) == 1 else 'ies'} "
            f"{', '.join(repr(m) for m in missing)}, which the job no longer has.",
            "Name the job's queries as before, or pass -n/--allowNonRestoredState to skip "
            "that state.",
        )


def restore_query(
    source_storage: Storage,
    source: RestoreSource,
    name: str,
    target: Storage,
    target_dir: str,
) -> bool:
    """Copy one query's state into the job's checkpoint directory; False if it has none."""
    query = source.manifest.query(name)
    if query is None:
        return False
    if source.kind == "savepoint":
        prefix = f"{name}/"
        files = [f.path[len(prefix) :] for f in source.manifest.files_of(name)]
    else:
        from flinkish_cli.savepoints.create import snapshot_query

        directory = source.query_dir(name)
        files = snapshot_query(source_storage, directory, name, require_commit=False).files
    stats = source_storage.copy_tree(source.query_dir(name), target, target_dir, files=files)
    log.info("Restored query '%s' at batch %s: %s", name, query.last_committed_batch, stats)
    return True


def repartition(spark: Any, checkpoint: str, partitions: int) -> None:
    """Repartition a stopped query's state offline (Spark 4.2+, RocksDB state store)."""
    try:
        spark._streamingCheckpointManager.repartition(checkpoint, partitions)
    except Exception as error:
        from flinkish_cli.runtime.failures import short_cause

        raise SavepointError(
            f"Spark could not repartition the state in {checkpoint} to {partitions} "
            f"partitions: {short_cause(error)}"
        ) from error
