"""What ``flinkish state`` reads, found and checked before Spark starts.

:func:`open_source` takes what the user named and returns a :class:`StateSource`: per query,
a local directory Spark's state reader can read, the batch to read (the query's last
committed batch) and, from the directory listing, its stateful operators and the sizes of
their state files. It accepts:

- a **savepoint** (its ``_metadata``): the manifest is read and every file checked against
  its size and SHA-256 (a damaged state file is refused here, in one line). A savepoint on
  local disk is read in place: nothing writes into a savepoint, and Spark's state reader
  only reads (the tests compare a listing before and after). One on S3 or HDFS is downloaded
  to a temporary directory first (Spark here has no S3 file system, and the command line
  reaches HDFS through the NameNode's WebHDFS, not Hadoop's client).
- a job's **retained checkpoint** ``<execution.checkpointing.dir>/<JobID>``, or one query's
  checkpoint (a directory with ``offsets/`` and ``commits/``, as a script's
  ``checkpointLocation``);
- a **JobID**: the checkpoints of the job's queries, where its status says they are (a
  ``checkpointLocation`` the script chose included), at their latest committed batches.

A checkpoint may belong to a running job, so it is never read in place: the files of its
last committed batch (the same choice a savepoint makes, :mod:`flinkish_cli.savepoints.create`)
are hard-linked, or copied when links cannot be made, into a temporary directory, checked
against the Hadoop checksums Spark wrote with them, and Spark reads that copy. The running
job's checkpoint is only listed and read, never written, and its maintenance can delete old
versions meanwhile without breaking the read. The temporary directory goes when the source
is closed.

Anything else (a path that does not exist, a directory that is neither, a JobID the registry
does not know, a query or operator that is not there) is one :class:`StateError` naming it,
before Spark starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import FlinkishError, SavepointError, StateError, StateNotFoundError
from flinkish_cli.savepoints.layout import StateOperator

if TYPE_CHECKING:
    from flinkish_cli.savepoints.create import QuerySnapshot
    from flinkish_cli.storage import Storage

NOTHING_READ = "Nothing was read"
#: What ``state`` reads, for hints.
WHAT_IT_READS = (
    "Name a savepoint ('flinkish savepoint list' shows a job's), a job's retained checkpoint "
    "<execution.checkpointing.dir>/<JobID>, one query's checkpoint directory, or a JobID."
)


@dataclass
class QuerySource:
    """One query's checkpoint as Spark will read it."""

    name: str
    #: where the query's checkpoint is, as the user knows it
    location: str
    #: the local directory Spark reads (the savepoint's own, or a temporary copy)
    read_path: str
    #: the last committed batch (-1: none yet, so no state to read)
    batch: int
    operators: list[StateOperator] = field(default_factory=list)
    #: size of each file under ``state/`` the batch needs, by its path relative to the query
    state_files: dict[str, int] = field(default_factory=dict)
    #: each source's end offsets of that batch, as Spark's offset log holds them (Kafka's:
    #: ``{"topic": {"partition": offset}}``)
    source_offsets: list[Any] = field(default_factory=list)

    def operator(self, operator_id: int) -> StateOperator | None:
        return next((o for o in self.operators if o.operator_id == operator_id), None)

    def state_bytes(self, operator_id: int, store_prefix: str | None = None) -> int:
        """Bytes of an operator's state files (only those of Spark stores whose name starts
        with ``store_prefix``, when given: ``state/<op>/<partition>/<store>/...``)."""
        total = 0
        for path, size in self.state_files.items():
            parts = path.split("/")
            if len(parts) < 3 or parts[1] != str(operator_id):
                continue
            if store_prefix is not None and not (
                len(parts) >= 5 and parts[3].startswith(store_prefix)
            ):
                continue
            total += size
        return total


@dataclass
class StateSource:
    """What was named, ready for Spark's state reader; close it to drop temporary copies."""

    kind: str  # "savepoint" | "checkpoint" | "job"
    path: str
    job_id: str | None
    queries: list[QuerySource]
    temp_dir: str | None = None

    def close(self) -> None:
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __enter__(self) -> StateSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stateful(self) -> bool:
        return any(q.operators and q.batch >= 0 for q in self.queries)

    def query(self, name: str) -> QuerySource:
        found = next((q for q in self.queries if q.name == name), None)
        if found is None:
            names = ", ".join(f"'{q.name}'" for q in self.queries) or "none"
            raise StateNotFoundError(
                f"{self.path} has no query '{name}' (its queries: {names}).",
                f"{NOTHING_READ}. Name one of its queries with --query.",
            )
        return found

    def select(
        self, query: str | None, operator: int | None
    ) -> list[tuple[QuerySource, StateOperator]]:
        """The stateful operators ``--query`` and ``--operator`` name (all when None), in
        order; refuses a query or operator that is not there."""
        queries = [self.query(query)] if query is not None else self.queries
        chosen = []
        for q in queries:
            if operator is not None:
                found = q.operator(operator)
                if found is None:
                    ids = ", ".join(str(o.operator_id) for o in q.operators) or "none"
                    raise StateNotFoundError(
                        f"Query '{q.name}' of {self.path} has no stateful operator {operator} "
                        f"(its operators: {ids}).",
                        f"{NOTHING_READ}. 'flinkish state ls {self.path}' lists them.",
                    )
                chosen.append((q, found))
            else:
                chosen += [(q, o) for o in q.operators]
        if operator is not None and query is None and len(chosen) > 1:
            raise StateError(
                f"Several queries of {self.path} have an operator {operator}: "
                + ", ".join(f"'{q.name}'" for q, _ in chosen)
                + ".",
                f"{NOTHING_READ}. Name the query with --query.",
            )
        return chosen


def open_source(target: str, config: Any, verify: bool = True) -> StateSource:
    """Find and check what ``target`` names (see the module's description); ``verify``
    false skips checking a savepoint's files against its manifest (for a caller that just
    did)."""
    try:
        return _open(target.strip(), config, verify)
    except StateError:
        raise
    except FlinkishError as error:  # a savepoint's, a storage's refusal: the same one line
        raise StateError(error.message, error.hint) from None


def _open(target: str, config: Any, verify: bool) -> StateSource:
    from flinkish_cli.registry.jobid import is_job_id
    from flinkish_cli.savepoints.manifest import METADATA_FILE, is_savepoint_name
    from flinkish_cli.storage import join

    if not target:
        raise StateError("No savepoint, checkpoint or JobID given.", WHAT_IT_READS)
    if is_job_id(target) and not os.path.exists(target):
        return _open_job(target, config)
    path = _absolute(target)
    storage = _storage(path, config)
    if not storage.exists(path):
        raise StateError(f"{path} does not exist.", f"{NOTHING_READ}. {WHAT_IT_READS}")
    if not storage.is_dir(path):
        raise _neither(path)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if storage.exists(join(path, METADATA_FILE)) or is_savepoint_name(name):
        # a savepoint without its manifest is an interrupted one: refused, never read as
        # the checkpoint its files look like
        return _open_savepoint(storage, path, verify)
    if _is_query_checkpoint(storage, path):
        return _open_checkpoints(storage, path, "checkpoint", None, {_safe(name): path})
    queries = {
        info.name: info.path
        for info in storage.list(path)
        if info.is_dir
        and not info.name.startswith(("_", "."))
        and _is_query_checkpoint(storage, info.path)
    }
    if not queries:
        raise _neither(path)
    job_id = name.lower() if is_job_id(name) else None
    return _open_checkpoints(storage, path, "checkpoint", job_id, queries)


def _neither(path: str) -> StateError:
    return StateError(
        f"{path} is neither a savepoint nor a checkpoint: it has no _metadata (a savepoint's "
        "manifest) and no query checkpoint (offsets/ and commits/).",
        f"{NOTHING_READ}. {WHAT_IT_READS}",
    )


def _absolute(target: str) -> str:
    from flinkish_cli.storage.uri import LOCAL, scheme_of

    if scheme_of(target) == LOCAL:
        if target.startswith("file:") and not target.startswith("file:/"):
            target = target[len("file:") :]
        if "://" not in target and not target.startswith("file:"):
            target = os.path.abspath(os.path.expanduser(target))
    return target.rstrip("/") or target


def _storage(path: str, config: Any) -> Storage:
    """The storage of ``path``: local disk, S3, or HDFS through the NameNode's WebHDFS (the
    command line has no Hadoop client; :func:`flinkish_cli.storage.open_storage` picks)."""
    from flinkish_cli.storage import open_for_config

    return open_for_config(path, config)


def _safe(name: str) -> str:
    """A query checkpoint's directory name as a query name (it is only shown)."""
    return name or "query"


def _is_query_checkpoint(storage: Storage, path: str) -> bool:
    from flinkish_cli.storage import join

    return storage.exists(join(path, "offsets")) or storage.exists(join(path, "commits"))


def _local_root(storage: Storage, path: str) -> str | None:
    """``path`` as a local directory, when it is one."""
    local = storage.local_path(path)
    return local if local and os.path.isdir(local) else None


def _temp_dir() -> str:
    return tempfile.mkdtemp(prefix="flinkish-state-")


def _open_savepoint(storage: Storage, path: str, verify: bool) -> StateSource:
    from flinkish_cli.savepoints.manifest import load_manifest
    from flinkish_cli.savepoints.restore import verify_files

    manifest = load_manifest(storage, path, NOTHING_READ)
    try:
        if verify:
            verify_files(storage, path, manifest)
    except SavepointError as error:
        raise StateError(
            error.message, f"{NOTHING_READ}. Read another savepoint of the job."
        ) from None
    local = _local_root(storage, path)
    temp = None
    if local is None:
        from flinkish_cli.storage import LocalStorage

        temp = _temp_dir()
        try:
            for query in manifest.queries:
                if query.stateful:
                    files = [f.path.split("/", 1)[1] for f in manifest.files_of(query.name)]
                    storage.copy_tree(
                        f"{path}/{query.name}", LocalStorage(temp), f"{temp}/{query.name}", files
                    )
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
    root = local or temp
    assert root is not None
    queries = []
    for query in manifest.queries:
        prefix = f"{query.name}/"
        state_files = {
            f.path[len(prefix) :]: f.size
            for f in manifest.files_of(query.name)
            if f.path.startswith(f"{prefix}state/") and not _is_crc(f.path)
        }
        queries.append(
            QuerySource(
                name=query.name,
                location=f"{path}/{query.name}",
                read_path=os.path.join(root, query.name),
                batch=query.last_committed_batch,
                operators=list(query.operators),
                state_files=state_files,
                source_offsets=list(query.source_offsets),
            )
        )
    return StateSource("savepoint", path, manifest.job_id, queries, temp)


def _is_crc(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith(".") and name.endswith(".crc")


def _open_job(job_id: str, config: Any) -> StateSource:
    from flinkish_cli.registry.jobid import parse_job_id
    from flinkish_cli.registry.store import registry_for

    job_id = parse_job_id(job_id)
    status = registry_for(config).find(job_id)
    if status is None:
        raise StateNotFoundError(
            f"Job {job_id} not found in {config.get('execution.checkpointing.dir')}.",
            f"{NOTHING_READ}. 'flinkish list -a' shows the jobs; a job of another registry "
            "needs its execution.checkpointing.dir (-D).",
        )
    queries = {name: q.checkpoint for name, q in status.queries.items() if q.checkpoint}
    if not queries:
        raise StateError(
            f"Job {job_id} has started no streaming query yet, so it has no state.",
            f"{NOTHING_READ}. Try again once its queries run ('flinkish list').",
        )
    storages = {name: _storage(path, config) for name, path in queries.items()}
    return _open_checkpoints(storages, f"job {job_id}", "job", job_id, queries)


def _open_checkpoints(
    storage: Storage | dict[str, Storage],
    path: str,
    kind: str,
    job_id: str | None,
    queries: dict[str, str],
) -> StateSource:
    """Snapshot each query's checkpoint at its last committed batch into a temporary
    directory (hard links where possible) and check what was copied."""
    temp = _temp_dir()
    found = []
    try:
        for name, directory in sorted(queries.items()):
            store = storage[name] if isinstance(storage, dict) else storage
            found.append(_copy_query(store, directory, name, os.path.join(temp, name)))
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return StateSource(kind, path, job_id, found, temp)


def _copy_query(storage: Storage, directory: str, name: str, copy: str) -> QuerySource:
    from flinkish_cli.savepoints.create import copy_snapshot, snapshot_query
    from flinkish_cli.savepoints.integrity import DamagedFileError, digest_files
    from flinkish_cli.storage import LocalStorage

    def choose() -> QuerySnapshot:  # a stateless query, or one before its first batch: no files
        snapshot = snapshot_query(storage, directory, name)
        query = snapshot.manifest
        if not (query.stateful and query.last_committed_batch >= 0):
            snapshot.files = []
        return snapshot

    local = LocalStorage(os.path.dirname(copy))
    try:
        snapshot = copy_snapshot(storage, choose, local, copy, what=f"State read of {directory}")
    except SavepointError as error:  # a damaged checkpoint, or one that ran past its copy
        shutil.rmtree(copy, ignore_errors=True)
        hint = " ".join(part for part in (error.hint, f"{NOTHING_READ}.") if part)
        raise StateError(error.message, hint) from None
    query, files = snapshot.manifest, snapshot.files
    sizes: dict[str, int] = {}
    if files:
        try:
            digests = digest_files(local, copy, files)
        except DamagedFileError as damaged:
            raise StateError(
                f"The checkpoint of query '{name}' ({directory}) is damaged: "
                f"{damaged.relative} {damaged.detail}.",
                f"{NOTHING_READ}. Read a savepoint of the job instead.",
            ) from None
        sizes = {f: d.size for f, d in digests.items() if f.startswith("state/") and not _is_crc(f)}
    return QuerySource(
        name=name,
        location=directory,
        read_path=copy,
        batch=query.last_committed_batch,
        operators=list(query.operators),
        state_files=sizes,
        source_offsets=list(query.source_offsets),
    )
