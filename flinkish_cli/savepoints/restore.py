"""Restoring a job from a savepoint or from a retained checkpoint.

Before anything runs, the CLI validates what ``-s`` names (:func:`plan_restore`):

- nothing in it is a symbolic link or another special file (:mod:`.integrity`);
- a savepoint: its manifest is present and is a flinkish manifest (query names are safe
  query identities, every file lies inside its query's directory), every file is present
  with the right size and checksum;
- a retained checkpoint ``<execution.checkpointing.dir>/<JobID>``: every query directory
  is named like a query, its log entries parse and its files match the Hadoop checksums
  Spark wrote with them; the job resumes at each query's latest committed batch;
- a rescale (another parallelism than the savepoint's) of a stateful query needs the RocksDB
  state backend, whose state Spark can repartition offline;
- ``--claimMode claim`` (the job deletes the source once it has checkpointed) is refused for
  a source that belongs to a job that is still alive (:func:`check_claim`).

A savepoint on ``hdfs://`` is checked the same way by the job's driver (which reaches HDFS
through Hadoop's FileSystem), before any query starts; the CLI has no JVM to read it.

The job's driver then restores each query before it starts (:func:`restore_query`): it
copies (or hard-links) the query's files into the job's own checkpoint directory, so the
savepoint itself is never modified (``no_claim``), and repartitions the state when the
parallelism changed. Every query of the savepoint must be matched by a query of the job
unless ``--allowNonRestoredState`` is given; with it, the state of the operators the state
check found gone from the end of a query is left out (``RestorePlan.leave_out``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import FlinkishError, JobError, SavepointError
from flinkish_cli.savepoints import layout
from flinkish_cli.savepoints.integrity import (
    DamagedFileError,
    digest_files,
    refuse_special_entries,
)
from flinkish_cli.savepoints.manifest import METADATA_FILE, Manifest, load_manifest

if TYPE_CHECKING:
    from flinkish_cli.plan.job import RestorePlan
    from flinkish_cli.storage import Storage

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


RESTORE_DAMAGED_HINT = (
    "Nothing was started. Resume from a savepoint of the job instead ('flinkish savepoint "
    "info <path>' shows what one holds)."
)


def read_checkpoint(storage: Storage, path: str, verify: bool = True) -> Manifest:
    """A manifest describing a job's retained checkpoints at their latest committed batches.

    With ``verify``, every file a query would resume from is read and checked against the
    Hadoop checksum Spark wrote with it.
    """
    from flinkish_cli.registry.names import check_query_name
    from flinkish_cli.savepoints.create import DamagedCheckpointError, snapshot_query

    refuse_special_entries(storage, path, f"The checkpoint {path}", "Nothing was started")
    queries = []
    for info in storage.list(path) if storage.exists(path) else []:
        if not info.is_dir or info.name.startswith(("_", ".")):
            continue
        try:
            check_query_name(info.name, f"The retained checkpoint {path}")
        except JobError as error:
            raise SavepointError(error.message, error.hint) from None
        try:
            snapshot = snapshot_query(storage, info.path, info.name)
            if verify:
                digest_files(storage, info.path, snapshot.files)
        except DamagedFileError as damaged:
            raise DamagedCheckpointError(
                info.name, info.path, f"{damaged.relative} {damaged.detail}", RESTORE_DAMAGED_HINT
            ) from None
        except DamagedCheckpointError as damaged:
            raise DamagedCheckpointError(
                info.name, info.path, damaged.detail, RESTORE_DAMAGED_HINT
            ) from None
        queries.append(snapshot.manifest)
    if not queries:
        raise SavepointError(
            f"{path} holds no query checkpoints to resume from.",
            "Give a savepoint or <execution.checkpointing.dir>/<JobID> of a job that ran.",
        )
    return Manifest(
        job_id=path.rstrip("/").rsplit("/", 1)[-1].lower(),
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
    """Check what ``run -s`` names before anything starts (run by the CLI).

    A plain local path is made absolute here, against the caller's working directory (the
    job's driver may run elsewhere), so the plan and the job's status name it unambiguously.
    """
    return open_restore(request, config)[0]


def open_restore(
    request: Any, config: Any
) -> tuple[RestorePlan, RestoreSource | None, Storage | None]:
    """:func:`plan_restore`, with the source it read and checked and its storage (None for
    one on HDFS, which the driver checks)."""
    from flinkish_cli.plan.job import RestorePlan
    from flinkish_cli.storage import open_for_config
    from flinkish_cli.storage.uri import LOCAL, local_path, scheme_of

    path = str(request.from_savepoint).rstrip("/") or str(request.from_savepoint)
    if scheme_of(path) == LOCAL and "://" not in path and not path.startswith("file:"):
        path = local_path(path)
    claim = str(request.claim_mode or "no_claim").lower() == "claim"
    source = storage = None
    if not path.startswith("hdfs://"):  # HDFS needs a JVM: the driver checks it, see below
        storage = open_for_config(path, config)
        source = open_source(storage, path)
        parallelism = int(config.get("parallelism.default"))
        check_rescale(source.manifest, parallelism, str(config.get("state.backend.type")))
        if claim:
            check_claim(source, storage, config)
    plan = RestorePlan(
        source=path,
        allow_non_restored_state=bool(request.allow_non_restored_state),
        claim_mode=request.claim_mode,
    )
    return plan, source, storage


def same_location(a: str | None, b: str | None) -> bool:
    """Whether two spellings name the same savepoint or checkpoint directory (local paths
    are resolved, ``s3a://`` is ``s3://``)."""
    if not a or not b:
        return False
    return _canonical(a) == _canonical(b)


def _canonical(path: str) -> str:
    import os

    from flinkish_cli.errors import StorageError
    from flinkish_cli.storage.uri import LOCAL, local_path, scheme_of

    path = path.rstrip("/") or path
    try:
        if scheme_of(path) == LOCAL:
            return os.path.realpath(local_path(path))
    except StorageError:
        return path
    if path.startswith("s3a://"):
        return "s3://" + path[len("s3a://") :]
    return path


def check_claim(source: RestoreSource, storage: Storage, config: Any) -> None:
    """``--claimMode claim``: refuse a source that belongs to a job that is still alive.

    In claim mode the new job deletes its source once it has checkpointed, so the source
    must not be in use:

    - a retained checkpoint ``<dir>/<JobID>`` belongs to job <JobID> (its status is right
      there, ``<dir>/<JobID>/_flinkish/status.json``): refused while that job is not in a
      terminal state (RUNNING, RESTARTING, CREATED, CANCELLING, FAILING; a job whose driver
      stopped sending heartbeats counts as FAILED), or when its status cannot be read;
    - a savepoint (or a retained checkpoint) belongs to every live job of this registry that
      was restored from it: such a job reads it again when its driver is restarted in the
      middle of a restore. The job that *took* a savepoint does not own it: a savepoint is a
      copy (its hard links are files of their own), and deleting it changes nothing for that
      job.
    """
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.registry.store import JobRegistry, registry_for

    owners = []
    if source.kind == "checkpoint":
        root, _, name = source.path.rstrip("/").rpartition("/")
        job_id = parse_job_id(name)
        try:
            owner = JobRegistry(root or "/", storage).find(job_id)
        except FlinkishError as error:
            raise SavepointError(
                f"Cannot claim the checkpoint {source.path}: the state of its job {job_id} "
                f"is unknown ({error.message})",
                "Restore with --claimMode no_claim (the default), which leaves the checkpoint "
                "as it is.",
            ) from None
        if owner is not None and not owner.effective_state().is_terminal:
            owners.append((owner, "its own job"))
    try:
        jobs = registry_for(config).list()
    except FlinkishError as error:
        raise SavepointError(
            f"Cannot claim {source.path}: the jobs that may use it cannot be listed "
            f"({error.message})",
            "Restore with --claimMode no_claim (the default), which leaves the source as it is.",
        ) from None
    for job in jobs:
        if job.effective_state().is_terminal or any(job.job_id == o.job_id for o, _ in owners):
            continue
        if same_location(job.restored_from, source.path):
            owners.append((job, "a job restored from it"))
    if not owners:
        return
    job, relation = owners[0]
    name = f" ({job.name})" if job.name else ""
    raise SavepointError(
        f"Cannot claim {source.path}: it belongs to job {job.job_id}{name}, {relation}, "
        f"which is {job.effective_state().value}.",
        "In claim mode the new job deletes its source once it has checkpointed. Stop or cancel "
        f"job {job.job_id} first, or restore with --claimMode no_claim (the default), which "
        "never modifies the source.",
    )


def restore_query(
    source_storage: Storage,
    source: RestoreSource,
    name: str,
    target: Storage,
    target_dir: str,
    leave_out: Collection[int] = (),
) -> bool:
    """Copy one query's state into the job's checkpoint directory; False if it has none.
    The state of the operators ``leave_out`` names is not copied (``-n``: the new program
    no longer has them)."""
    query = source.manifest.query(name)
    if query is None:
        return False
    if source.kind == "savepoint":
        prefix = f"{name}/"
        files = [f.path[len(prefix) :] for f in source.manifest.files_of(name)]
    else:
        from flinkish_cli.savepoints.create import snapshot_query

        directory = source.query_dir(name)
        files = snapshot_query(source_storage, directory, name).files
    if leave_out:
        left = tuple(f"state/{operator}/" for operator in leave_out)
        files = [f for f in files if not f.startswith(left)]
        log.info("Leaving out the state of operators %s of query '%s' (-n).", leave_out, name)
    stats = source_storage.copy_tree(source.query_dir(name), target, target_dir, files=files)
    log.info("Restored query '%s' at batch %s: %s", name, query.last_committed_batch, stats)
    return True


def set_stateless_partitions(storage: Storage, checkpoint: str, partitions: int) -> bool:
    """Give a stopped *stateless* query ``partitions`` shuffle partitions: Spark plans a
    restarted query's exchanges with the partitions its offset log recorded, so its latest
    entry's setting is rewritten (a new file, never the one a savepoint may share through a
    hard link; its ``.crc`` beside it goes, as Hadoop then reads it unchecked). A batch
    planned and never committed is rewritten with the last committed one before it: Spark
    takes a latest uncommitted entry whose partitions differ from the one before it for an
    unfinished state repartition and refuses to start (STREAMING_UNFINISHED_REPARTITION_
    DETECTED); the batch reruns at the new partitions. True when it changed; nothing to do
    for a query without an offset log."""
    from flinkish_cli.storage import join

    def batches_in(directory: str) -> list[int]:
        path = join(checkpoint, directory)
        return layout.numbered([i.name for i in storage.list(path)]) if storage.exists(path) else []

    offsets = batches_in("offsets")
    if not offsets:
        return False
    committed = [b for b in batches_in("commits") if b <= offsets[-1]]
    first = committed[-1] if committed else offsets[-1]
    changed = False
    for batch in (b for b in offsets if b >= first):
        path = join(checkpoint, "offsets", str(batch))
        text = storage.read_text(path)
        if layout.parse_offsets(batch, text).shuffle_partitions != partitions:
            storage.write_text(path, layout.with_shuffle_partitions(text, partitions))
            storage.delete(join(checkpoint, "offsets", f".{batch}.crc"))
            changed = True
    return changed


def repartition(spark: Any, checkpoint: str, partitions: int) -> None:
    """Repartition a stopped query's state offline (Spark 4.2+, RocksDB state store)."""
    try:
        spark._streamingCheckpointManager.repartition(checkpoint, partitions)
    except Exception as error:
        from flinkish_cli.spark.failures import spark_cause

        raise SavepointError(
            f"Spark could not repartition the state in {checkpoint} to {partitions} "
            f"partitions: {spark_cause(error)}"
        ) from error
