"""The registry: every Flink configuration key flinkish understands, in one declarative table.

An :class:`Option` declares a key's type, default, allowed range, deprecated aliases, a
one-line description, its Spark translation and its status:

``mapped``          translated to Spark settings with the same meaning.
``approximate``     translated to the closest Spark settings; ``note`` says how they differ.
``runtime``         no Spark setting: flinkish's CLI or driver runtime enforces it.

Besides the table, :data:`FAMILIES` covers whole key spaces: ``spark.*`` passes through
verbatim; ``s3.*`` / ``fs.s3a.*`` become Hadoop S3A settings and ``flink.hadoop.*`` Hadoop
settings; ``metrics.reporter.prom.*`` turns on Spark's Prometheus endpoint. And
:data:`NOT_APPLICABLE_KEYS` / :data:`NOT_APPLICABLE_PREFIXES` list Flink keys that mean
nothing on Spark: they are accepted with a warning, unless they are a near miss of a
registered key (``state.backend.incremetal``), which is an error. :func:`classify` resolves
any key to one of these, or raises :class:`UnknownKey` with a "did you mean" suggestion.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flinkish_cli.config.mappings as m
from flinkish_cli.config.secrets import is_secret
from flinkish_cli.config.units import MAX_BYTES
from flinkish_cli.config.valuetypes import (
    Bool,
    Check,
    Duration,
    Enum,
    Float,
    Int,
    List,
    Memory,
    PortList,
    Schedule,
    Str,
    Uri,
    ValueType,
    at_least,
    between,
)

MAPPED = "mapped"
APPROXIMATE = "approximate"
RUNTIME = "runtime"
NOT_APPLICABLE = "not-applicable"
PASSTHROUGH = "passthrough"
STATUSES = (MAPPED, APPROXIMATE, RUNTIME, NOT_APPLICABLE, PASSTHROUGH)

__all__ = [
    "APPROXIMATE",
    "FAMILIES",
    "MAPPED",
    "NOT_APPLICABLE",
    "NOT_APPLICABLE_KEYS",
    "NOT_APPLICABLE_PREFIXES",
    "OPTIONS",
    "PASSTHROUGH",
    "RUNTIME",
    "Family",
    "KeyInfo",
    "Option",
    "UnknownKey",
    "classify",
    "option",
]


@dataclass(frozen=True)
class Option:
    """One supported Flink key (see the module docstring for ``status``)."""

    key: str
    type: ValueType
    section: str
    description: str
    status: str
    default: str | None = None  # as Flink writes it; parsed with ``type``
    default_fn: Callable[[m.Lookup], Any] | None = None  # a computed (typed) default
    default_doc: str | None = None  # how the reference shows a computed default
    check: Check | None = None
    aliases: tuple[str, ...] = ()  # deprecated names: accepted with a warning
    synonyms: tuple[str, ...] = ()  # other accepted spellings, no warning
    spark: m.SparkMap | None = None
    spark_doc: str = "—"  # the translation as the reference page describes it
    note: str = ""  # how an approximation differs, or what the runtime does
    emit_default: bool = False  # translate the default too, not only a set value

    @property
    def secret(self) -> bool:
        return is_secret(self.key) or any(is_secret(a) for a in self.aliases + self.synonyms)

    def default_value(self, config: m.Lookup) -> Any:
        """The typed default (None when the key has none)."""
        if self.default_fn is not None:
            return self.default_fn(config)
        return None if self.default is None else self.type.parse(self.default)


@dataclass(frozen=True)
class Family:
    """A whole key space handled alike: ``spark.*``, ``s3.*``, ``metrics.reporter.prom.*``."""

    prefix: str
    status: str
    description: str
    spark: Callable[[str, str], dict[str, str]]
    spark_doc: str


@dataclass(frozen=True)
class KeyInfo:
    """What a key written by the user resolves to."""

    canonical: str
    status: str
    option: Option | None = None
    family: Family | None = None
    deprecated: bool = False  # the key was a deprecated alias of ``canonical``


class UnknownKey(KeyError):
    """A key that is neither supported nor a known Flink key; ``suggestion`` is a near miss.

    ``reason`` says why when it is not simply unknown (a scalar key given nested keys).
    """

    def __init__(self, key: str, suggestion: str | None, reason: str | None = None) -> None:
        super().__init__(key)
        self.key = key
        self.suggestion = suggestion
        self.reason = reason


def _home(*parts: str) -> Callable[[m.Lookup], str]:
    return lambda config: str(Path.home().joinpath(".flinkish", *parts))


def _utilization_bound(config: m.Lookup, sign: int) -> float:
    """Flink's derived utilization.min (sign -1) or .max (+1): the target ∓ the boundary,
    within [0, 1]."""
    target = float(config.get("job.autoscaler.utilization.target"))
    boundary = float(config.get("job.autoscaler.target.utilization.boundary"))
    return min(1.0, max(0.0, target + sign * boundary))


def _default_restart(config: m.Lookup) -> str:
    return "exponential-delay" if config.get("execution.checkpointing.interval") else "disable"


NETWORK_NOTE = (
    "Network memory = fraction x (taskmanager.memory.process.size, default 1728 MiB, − 256 MiB "
    "metaspace − JVM overhead of 10 % within 192 MiB..1 GiB), clamped to [min, max]; half of "
    "one slot's share (a task's input buffers) becomes spark.reducer.maxSizeInFlight, rounded "
    "down to whole MiB."
)
POSITIVE_DURATION = Check(lambda v: v.total_seconds() > 0, "a duration above 0, e.g. 10 s")
PORT = re.compile(r"\d{1,5}(\s*-\s*\d{1,5})?")

S = "State backend"
C = "Checkpointing"
E = "Execution"
R = "Resources"
RS = "Restart strategy"
D = "Dependencies and Python"
ST = "S3 storage"
MO = "Metrics, JVM and logs"
A = "Autoscaler"

OPTIONS: tuple[Option, ...] = (
    # -- state backend ---------------------------------------------------------------------
    Option(
        "state.backend.type",
        Enum(("hashmap", "rocksdb"), deprecated={"filesystem": "hashmap", "jobmanager": "hashmap"}),
        S,
        "Where operator state lives: 'hashmap' (JVM heap) or 'rocksdb' (on local disk; "
        "needed to rescale a savepoint to another parallelism).",
        MAPPED,
        default="hashmap",
        aliases=("state.backend",),
        spark=m.state_backend,
        spark_doc="`spark.sql.streaming.stateStore.providerClass` = HDFSBackedStateStoreProvider "
        "(hashmap) or RocksDBStateStoreProvider (rocksdb)",
        emit_default=True,
    ),
    Option(
        "execution.checkpointing.incremental",
        Bool(),
        S,
        "Write only what changed since the last checkpoint (RocksDB only).",
        APPROXIMATE,
        default="false",
        aliases=("state.backend.incremental",),
        spark=m.to(m.ROCKSDB + "changelogCheckpointing.enabled", m.spark_bool),
        spark_doc=f"`{m.ROCKSDB}changelogCheckpointing.enabled`",
        note="Spark's RocksDB store always uploads only new SST files; changelog "
        "checkpointing additionally writes a per-batch changelog instead of a snapshot, "
        "which is the closest match to Flink's incremental checkpoints.",
    ),
    Option(
        "state.backend.rocksdb.localdir",
        Str(),
        S,
        "Local directory for RocksDB's working files.",
        APPROXIMATE,
        spark=m.local_dirs,
        spark_doc="`spark.local.dir` (unless io.tmp.dirs is set)",
        note="Spark keeps RocksDB working files under spark.local.dir together with its "
        "other scratch files; io.tmp.dirs wins when both are set.",
    ),
    Option(
        "state.backend.rocksdb.memory.managed",
        Bool(),
        S,
        "Bound RocksDB's memory (Flink: by the slot's managed memory).",
        APPROXIMATE,
        default="true",
        spark=m.rocksdb_memory,
        spark_doc=f"`{m.ROCKSDB}boundedMemoryUsage`",
        note="Spark bounds all RocksDB instances of an executor together, by "
        "maxMemoryUsageMB (default 500 MiB), not by a managed-memory fraction.",
    ),
    Option(
        "state.backend.rocksdb.memory.fixed-per-slot",
        Memory(),
        S,
        "Fixed memory shared by the RocksDB instances of one slot; wins over fixed-per-tm.",
        APPROXIMATE,
        check=at_least(1 << 20, "a size", "1 mb"),
        spark=m.rocksdb_memory,
        spark_doc=f"`{m.ROCKSDB}boundedMemoryUsage` = true, `{m.ROCKSDB}maxMemoryUsageMB` = "
        "value x taskmanager.numberOfTaskSlots",
        note="Spark's bound is per executor, so the per-slot size is multiplied by the slots.",
    ),
    Option(
        "state.backend.rocksdb.memory.fixed-per-tm",
        Memory(),
        S,
        "Fixed memory shared by all RocksDB instances of a TaskManager (executor).",
        MAPPED,
        check=at_least(1 << 20, "a size", "1 mb"),
        spark=m.rocksdb_memory,
        spark_doc=f"`{m.ROCKSDB}boundedMemoryUsage` = true, `{m.ROCKSDB}maxMemoryUsageMB`",
    ),
    Option(
        "state.backend.rocksdb.memory.write-buffer-ratio",
        Float(),
        S,
        "Share of the bounded RocksDB memory used by write buffers.",
        MAPPED,
        default="0.5",
        check=Check(lambda v: 0 < v < 1, "a fraction between 0 and 1 (exclusive)"),
        spark=m.to(m.ROCKSDB + "writeBufferCacheRatio"),
        spark_doc=f"`{m.ROCKSDB}writeBufferCacheRatio`",
    ),
    Option(
        "state.backend.rocksdb.memory.high-prio-pool-ratio",
        Float(),
        S,
        "Share of the bounded RocksDB memory kept for index and filter blocks.",
        MAPPED,
        default="0.1",
        check=Check(lambda v: 0 < v < 1, "a fraction between 0 and 1 (exclusive)"),
        spark=m.to(m.ROCKSDB + "highPriorityPoolRatio"),
        spark_doc=f"`{m.ROCKSDB}highPriorityPoolRatio`",
    ),
    Option(
        "state.backend.rocksdb.block.cache-size",
        Memory(),
        S,
        "RocksDB block cache size.",
        MAPPED,
        default="8mb",
        spark=m.to(m.ROCKSDB + "blockCacheSizeMB", m.ceil_mib),
        spark_doc=f"`{m.ROCKSDB}blockCacheSizeMB` (MiB, rounded up)",
    ),
    Option(
        "state.backend.rocksdb.block.blocksize",
        Memory(),
        S,
        "RocksDB data block size.",
        MAPPED,
        default="4kb",
        check=at_least(1, "a size", "1 byte"),
        spark=m.to(m.ROCKSDB + "blockSizeKB", m.ceil_kib),
        spark_doc=f"`{m.ROCKSDB}blockSizeKB` (KiB, rounded up)",
    ),
    Option(
        "state.backend.rocksdb.writebuffer.size",
        Memory(),
        S,
        "Size of one RocksDB memtable (write buffer).",
        MAPPED,
        default="64mb",
        check=at_least(1, "a size", "1 byte"),
        spark=m.to(m.ROCKSDB + "writeBufferSizeMB", m.ceil_mib),
        spark_doc=f"`{m.ROCKSDB}writeBufferSizeMB` (MiB, rounded up)",
    ),
    Option(
        "state.backend.rocksdb.writebuffer.count",
        Int(),
        S,
        "Maximum number of RocksDB memtables held in memory.",
        MAPPED,
        default="2",
        check=at_least(1, "an integer"),
        spark=m.to(m.ROCKSDB + "maxWriteBufferNumber"),
        spark_doc=f"`{m.ROCKSDB}maxWriteBufferNumber`",
    ),
    Option(
        "state.backend.rocksdb.files.open",
        Int(),
        S,
        "Maximum number of files RocksDB keeps open (-1: no limit).",
        MAPPED,
        default="-1",
        check=Check(lambda v: v == -1 or v > 0, "-1 (no limit) or an integer ≥ 1"),
        spark=m.to(m.ROCKSDB + "maxOpenFiles"),
        spark_doc=f"`{m.ROCKSDB}maxOpenFiles`",
    ),
    # -- checkpointing ---------------------------------------------------------------------
    Option(
        "execution.checkpointing.dir",
        Uri(),
        C,
        "Root of the per-job directories holding each query's Spark checkpoint and the job's "
        "status (a local path, file://, s3://, s3a:// or hdfs:// URI).",
        RUNTIME,
        default_fn=_home("checkpoints"),
        default_doc="`~/.flinkish/checkpoints` (expanded to an absolute local path)",
        aliases=("state.checkpoints.dir", "state.backend.fs.checkpointdir"),
        note="A local path has ~ expanded and is made absolute; URIs are kept as written.",
        spark=m.checkpoint_files,
        spark_doc="on local disk: `spark.sql.streaming.checkpointFileManagerClass` = "
        "FileSystemBasedCheckpointFileManager (no `readlink` process per file)",
        emit_default=True,
    ),
    Option(
        "execution.checkpointing.savepoint-dir",
        Uri(),
        C,
        "Default target directory of savepoints (stop -p, savepoint without a directory).",
        RUNTIME,
        default_fn=_home("savepoints"),
        default_doc="`~/.flinkish/savepoints` (expanded to an absolute local path)",
        aliases=("state.savepoints.dir", "savepoints.state.backend.fs.dir"),
    ),
    Option(
        "flinkish.health-check.checkpoint-progress.window",
        Duration(),
        C,
        "Health check: a running query that has input (or a batch under way) but commits no "
        "batch within this window fails the job with the cause 'no checkpoint progress for "
        "<window>', and its restart strategy decides; 0 (the default) turns it off.",
        RUNTIME,
        default="0",
        synonyms=("kubernetes.operator.cluster.health-check.checkpoint-progress.window",),
    ),
    Option(
        "flinkish.savepoint.periodic.interval",
        Schedule(),
        C,
        "Take a savepoint every interval (a duration) or on a cron expression (in the "
        "driver's local time), into execution.checkpointing.savepoint-dir, while the job runs "
        "(never two at once); 0 turns it off. A failed one is recorded FAILED in the job's "
        "savepoint history and never fails the job.",
        RUNTIME,
        default="0",
        synonyms=("kubernetes.operator.periodic.savepoint.interval",),
    ),
    Option(
        "flinkish.savepoint.history.max-count",
        Int(),
        C,
        "Retention: at most this many completed savepoints per job; older ones are disposed "
        "(as savepoint -d does) and marked DISPOSED. The newest is always kept. The history "
        "keeps as many records of disposed or failed savepoints; older ones are deleted.",
        RUNTIME,
        default="10",
        check=at_least(1, "an integer"),
        synonyms=("kubernetes.operator.savepoint.history.max.count",),
    ),
    Option(
        "flinkish.savepoint.history.max-age",
        Duration(),
        C,
        "Retention: completed savepoints older than this are disposed (the newest is kept); "
        "records of disposed or failed savepoints older than this leave the history.",
        RUNTIME,
        default="1 d",
        check=POSITIVE_DURATION,
        synonyms=("kubernetes.operator.savepoint.history.max.age",),
    ),
    Option(
        "flinkish.savepoint.history.dispose-named",
        Bool(),
        C,
        "Retention also disposes of savepoints taken into a directory the user named "
        "(savepoint <JobID> <dir>, stop -p <dir>); by default those are left alone.",
        RUNTIME,
        default="false",
    ),
    Option(
        "flinkish.upgrade.readiness.timeout",
        Duration(),
        E,
        "flinkish upgrade: the new program must become stable within this time (every "
        "query started and committed a batch, no failure), or the upgrade rolls back.",
        RUNTIME,
        default="5 min",
        check=POSITIVE_DURATION,
        synonyms=("kubernetes.operator.deployment.readiness.timeout",),
    ),
    Option(
        "flinkish.upgrade.last-state-fallback.enabled",
        Bool(),
        E,
        "flinkish upgrade --upgrade-mode savepoint: when the job cannot take its savepoint, "
        "upgrade from its latest retained checkpoint instead (and say so). Off by default "
        "(the operator's default is on): a CI script opts in to an older state.",
        RUNTIME,
        default="false",
        synonyms=(
            "kubernetes.operator.job.upgrade.last-state-fallback.enabled",
            "job.upgrade.last-state-fallback.enabled",
        ),
    ),
    Option(
        "flinkish.restore.state-check.enabled",
        Bool(),
        E,
        "Before a program starts from a savepoint or retained checkpoint (run -s, upgrade), "
        "plan it in a local Spark session without running a batch and check it against the "
        "state: the same queries, the same stateful operators in the same order, key and "
        "value schemas Spark accepts. A mismatch is refused before anything is touched.",
        RUNTIME,
        default="true",
    ),
    Option(
        "flinkish.restore.state-check.timeout",
        Duration(),
        E,
        "How long the state check may plan the program (its local Spark session, the "
        "program's run up to its first wait); past it the check says it cannot tell, and "
        "the new job's start checks the state instead.",
        RUNTIME,
        default="2 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "execution.checkpointing.num-retained",
        Int(),
        C,
        "Completed checkpoints to retain.",
        APPROXIMATE,
        default="1",
        check=at_least(1, "an integer"),
        aliases=("state.checkpoints.num-retained",),
        spark=m.num_retained,
        spark_doc=f"`spark.sql.streaming.minBatchesToRetain` = max(value, {m.MIN_BATCHES_FLOOR})",
        note=f"Every Spark micro-batch is a checkpoint; flinkish keeps at least "
        f"{m.MIN_BATCHES_FLOOR} batches (Spark's default is 100) so that a savepoint copying a "
        "running query and a restart after a failed batch always find their files.",
        emit_default=True,
    ),
    Option(
        "flinkish.checkpoint.size.interval",
        Duration(),
        C,
        "How often a running job's driver measures each query's checkpoint on storage, part "
        "by part (offsets, commits, sources, state, and the file sink's _spark_metadata): a "
        "listing of names and sizes, never a read; shown by flinkish info <JobID>, the "
        "dashboard and /metrics (flinkish_query_checkpoint_bytes). 0 turns it off.",
        RUNTIME,
        default="1 min",
        check=Check(
            lambda v: v.total_seconds() == 0 or v.total_seconds() >= 1,
            "0 (off) or a duration of at least 1 s, e.g. 1 min",
        ),
    ),
    Option(
        "flinkish.file-source.log.cleanup-delay",
        Duration(),
        C,
        "How long a file source keeps the compactions of its log (the list of every input "
        "file it has read, in the checkpoint's sources/) after a newer one replaced them. "
        "Each compaction holds every file ever read, so with Spark's 10 min a source keeps "
        "10 min of compactions (30 of them at a batch every 2 s): flinkish keeps 1 min.",
        MAPPED,
        spark=m.to("spark.sql.streaming.fileSource.log.cleanupDelay", m.spark_millis),
        spark_doc="`spark.sql.streaming.fileSource.log.cleanupDelay` (ms)",
        default="1 min",
        emit_default=True,
        note="flinkish's default, not Spark's (10 min). Safe for exactly once: compactions "
        "older than the retained batches (execution.checkpointing.num-retained) are the only "
        "ones deleted, and the newest holds every entry of the older ones. A savepoint of a "
        "running query copies the newest compaction, which must outlive the copy: keep the "
        "delay above the time a savepoint takes.",
    ),
    Option(
        "flinkish.file-source.log.compact-interval",
        Int(),
        C,
        "A file source rewrites its whole log (every input file it has read) every this "
        "many of its batches; larger rewrites less often. Unset: Spark's default (10).",
        MAPPED,
        check=at_least(1, "an integer"),
        spark=m.to("spark.sql.streaming.fileSource.log.compactInterval"),
        spark_doc="`spark.sql.streaming.fileSource.log.compactInterval`",
        note="Changing it for an existing checkpoint is safe: Spark derives an interval "
        "compatible with the compactions already written (SPARK-18187).",
    ),
    Option(
        "flinkish.file-sink.log.cleanup-delay",
        Duration(),
        C,
        "How long a file sink keeps the compactions of its log (<output>/_spark_metadata, "
        "every file it has written) after a newer one replaced them; each holds every file "
        "ever written, so Spark's 10 min keeps many: flinkish keeps 1 min.",
        MAPPED,
        spark=m.to("spark.sql.streaming.fileSink.log.cleanupDelay", m.spark_millis),
        spark_doc="`spark.sql.streaming.fileSink.log.cleanupDelay` (ms)",
        default="1 min",
        emit_default=True,
        note="flinkish's default, not Spark's (10 min). Spark readers of the output directory "
        "read this log; a reader that finds a compaction deleted under it moves to the newer "
        "one, so keep the delay above the time between two compactions.",
    ),
    Option(
        "flinkish.file-sink.log.compact-interval",
        Int(),
        C,
        "A file sink rewrites its whole log every this many batches. Unset: Spark's default (10).",
        MAPPED,
        check=at_least(1, "an integer"),
        spark=m.to("spark.sql.streaming.fileSink.log.compactInterval"),
        spark_doc="`spark.sql.streaming.fileSink.log.compactInterval`",
    ),
    Option(
        "execution.checkpointing.interval",
        Duration(),
        C,
        "Interval of checkpoints: each query's processing-time trigger. Unset or 0: the next "
        "micro-batch starts as soon as the previous one ends (Spark's default trigger).",
        RUNTIME,
        check=Check(
            lambda v: v.total_seconds() == 0 or v.total_seconds() >= 0.01,
            "0 or a duration of at least 10 ms",
        ),
    ),
    Option(
        "execution.checkpointing.timeout",
        Duration(),
        C,
        "A micro-batch (checkpoint) taking longer than this counts as a failed checkpoint.",
        RUNTIME,
        default="10 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "execution.checkpointing.min-pause",
        Duration(),
        C,
        "Minimum pause between the end of one checkpoint and the start of the next.",
        RUNTIME,
        default="0 ms",
    ),
    Option(
        "execution.checkpointing.tolerable-failed-checkpoints",
        Int(),
        C,
        "Consecutive failed checkpoints tolerated before the job fails.",
        RUNTIME,
        default="0",
        check=at_least(0, "an integer"),
    ),
    Option(
        "execution.checkpointing.mode",
        Enum(("EXACTLY_ONCE", "AT_LEAST_ONCE")),
        C,
        "Checkpointing guarantee; Spark's checkpoints give exactly-once state either way.",
        RUNTIME,
        default="EXACTLY_ONCE",
    ),
    Option(
        "execution.checkpointing.externalized-checkpoint-retention",
        Enum(("NO_EXTERNALIZED_CHECKPOINTS", "RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION")),
        C,
        "Whether a job's checkpoints are kept (for -s) when it ends: RETAIN_ON_CANCELLATION "
        "keeps them; DELETE_ON_CANCELLATION deletes them on cancel; NO_EXTERNALIZED_CHECKPOINTS "
        "deletes them on cancel and when the job finishes. Never deleted on failure.",
        RUNTIME,
        default="RETAIN_ON_CANCELLATION",
        note="flinkish's default is RETAIN_ON_CANCELLATION, not Flink 2's "
        "NO_EXTERNALIZED_CHECKPOINTS: Spark keeps every checkpoint on durable storage, a "
        "stopped (Ctrl-C) or cancelled job resumes with -s <dir>/<JobID>, and a BATCH job "
        "run from cron continues where the last run stopped.",
    ),
    # -- execution -------------------------------------------------------------------------
    Option(
        "execution.runtime-mode",
        Enum(("STREAMING", "BATCH", "AUTOMATIC")),
        E,
        "STREAMING runs queries until stopped; BATCH runs each query once over the available "
        "input (Spark's availableNow trigger); AUTOMATIC behaves as STREAMING.",
        RUNTIME,
        default="STREAMING",
    ),
    Option(
        "execution.target",
        Enum(
            (
                "local",
                "remote",
                "yarn-session",
                "yarn-application",
                "kubernetes-session",
                "kubernetes-application",
            )
        ),
        E,
        "Where jobs run (run -t wins): local Spark, a standalone master, YARN or Kubernetes.",
        RUNTIME,
        default="local",
    ),
    Option(
        "rest.address",
        Str(),
        E,
        "Host that clients use to reach the cluster's REST endpoint (flinkish web, as "
        "Flink's JobManager): the job actions (list, cancel, stop, savepoint, checkpoint, "
        "info <JobID>, logs) go through it when a flinkish web of the same registry answers "
        "there, and read the registry in storage otherwise; target 'remote' asks it for its "
        "session cluster (-m host:port wins over both), and flinkish web answers requests "
        "addressed to this name (besides its bind address, localhost and loopback; more in "
        "flinkish.web.allowed-hosts). Started by scripts/start-cluster.sh --session.",
        RUNTIME,
    ),
    Option(
        "rest.port",
        PortList(),
        E,
        "Port of the cluster's REST endpoint (flinkish web) that clients connect to, and "
        "where flinkish web binds when rest.bind-port is not set (as in Flink; a list or a "
        "range is tried in order there, and clients use its first port). It used to name "
        "the Spark Connect server's port: such an address still works, with a notice to "
        "name the server as -m sc://host:port.",
        RUNTIME,
        default="8081",
        check=Check(lambda v: v.first >= 1, "a port from 1 to 65535 first"),
    ),
    Option(
        "execution.attached",
        Bool(),
        E,
        "Whether run waits for the job (run is attached unless -d is given).",
        RUNTIME,
        default="false",
    ),
    Option(
        "pipeline.name",
        Str(),
        E,
        "Name of the job (default: the script's file name).",
        MAPPED,
        spark=m.to("spark.app.name"),
        spark_doc="`spark.app.name`",
    ),
    Option(
        "pipeline.max-parallelism",
        Int(),
        E,
        "Upper bound for rescaling a job's state; -1 lets flinkish choose. Must be at least "
        "parallelism.default.",
        RUNTIME,
        default="-1",
        check=Check(lambda v: v == -1 or 1 <= v <= 32768, "-1 (automatic) or 1 to 32768"),
    ),
    # -- resources -------------------------------------------------------------------------
    Option(
        "parallelism.default",
        Int(),
        R,
        "Parallelism of jobs (run -p wins): the number of shuffle and state partitions, "
        "each a task of its own (Spark's adaptive execution does not merge them).",
        MAPPED,
        default="1",
        check=at_least(1, "an integer"),
        spark=m.parallelism,
        spark_doc="`spark.sql.shuffle.partitions`, `spark.default.parallelism`; "
        "`spark.sql.adaptive.coalescePartitions.enabled` = false (a -D of it wins); on a "
        "standalone cluster `spark.cores.max` = max(parallelism, slots) (a -D of it wins)",
        emit_default=True,
    ),
    Option(
        "taskmanager.numberOfTaskSlots",
        Int(),
        R,
        "Slots (cores) per TaskManager (executor). Without spark.master, the local master is "
        "local[max(slots, parallelism)].",
        MAPPED,
        default="1",
        check=at_least(1, "an integer"),
        spark=m.to("spark.executor.cores"),
        spark_doc="`spark.executor.cores`; the master `local[max(slots, parallelism)]`",
    ),
    Option(
        "jobmanager.memory.process.size",
        Memory(),
        R,
        "Total memory of the JobManager (Spark driver) process.",
        APPROXIMATE,
        check=at_least(1 << 30, "a size", "1 gb"),
        spark=m.process_memory("driver"),
        spark_doc="`spark.driver.memory` (heap), `spark.driver.memoryOverhead` (the rest)",
        note="Flink's process size includes metaspace and JVM overhead; Spark's memory is the "
        "heap. flinkish uses heap = size − max(384 MiB, 10 %) (at least half the size) and "
        "gives the rest to memoryOverhead.",
    ),
    Option(
        "taskmanager.memory.process.size",
        Memory(),
        R,
        "Total memory of a TaskManager (Spark executor) process.",
        APPROXIMATE,
        check=at_least(1 << 30, "a size", "1 gb"),
        spark=m.process_memory("executor"),
        spark_doc="`spark.executor.memory` (heap), `spark.executor.memoryOverhead` (the rest)",
        note="As for the JobManager: heap = size − max(384 MiB, 10 %) (at least half the size), "
        "the rest is memoryOverhead. In local mode executors run inside the driver.",
    ),
    Option(
        "taskmanager.memory.network.fraction",
        Float(),
        R,
        "Share of total Flink memory used for network (shuffle) buffers.",
        APPROXIMATE,
        default="0.1",
        check=between(0, 1, "a fraction", high_open=True),
        aliases=("taskmanager.network.memory.fraction",),
        spark=m.network_memory,
        spark_doc="`spark.reducer.maxSizeInFlight` (see note)",
        note=NETWORK_NOTE,
    ),
    Option(
        "taskmanager.memory.network.min",
        Memory(),
        R,
        "Lower bound of the network memory.",
        APPROXIMATE,
        default="64mb",
        aliases=("taskmanager.network.memory.min",),
        spark=m.network_memory,
        spark_doc="`spark.reducer.maxSizeInFlight` (see fraction)",
        note=NETWORK_NOTE,
    ),
    Option(
        "taskmanager.memory.network.max",
        Memory(),
        R,
        "Upper bound of the network memory.",
        APPROXIMATE,
        default=f"{MAX_BYTES}b",
        aliases=("taskmanager.network.memory.max",),
        spark=m.network_memory,
        spark_doc="`spark.reducer.maxSizeInFlight` (see fraction)",
        note=NETWORK_NOTE,
    ),
    Option(
        "taskmanager.memory.segment-size",
        Memory(),
        R,
        "Size of one network buffer.",
        APPROXIMATE,
        default="32kb",
        check=between(4 << 10, 1 << 30, "a size", shown=("4 kb", "1 gb")),
        spark=m.to("spark.shuffle.file.buffer", m.spark_size),
        spark_doc="`spark.shuffle.file.buffer`",
        note="Flink's buffer unit becomes the buffer of each shuffle output stream; both "
        "default to 32 KiB.",
    ),
    # -- restart strategy ------------------------------------------------------------------
    Option(
        "restart-strategy.type",
        Enum(
            ("disable", "fixed-delay", "failure-rate", "exponential-delay"),
            synonyms={
                "none": "disable",
                "off": "disable",
                "fixeddelay": "fixed-delay",
                "failurerate": "failure-rate",
                "exponentialdelay": "exponential-delay",
            },
        ),
        RS,
        "How the driver restarts a job's failed queries from their last checkpoint.",
        RUNTIME,
        default_fn=_default_restart,
        default_doc="exponential-delay when execution.checkpointing.interval is set, "
        "else disable (Flink's rule)",
        aliases=("restart-strategy",),
    ),
    Option(
        "restart-strategy.fixed-delay.attempts",
        Int(),
        RS,
        "fixed-delay: restarts before the job fails.",
        RUNTIME,
        default="1",
        check=at_least(0, "an integer"),
    ),
    Option(
        "restart-strategy.fixed-delay.delay",
        Duration(),
        RS,
        "fixed-delay: pause before each restart.",
        RUNTIME,
        default="1 s",
    ),
    Option(
        "rest.bind-address",
        Str(),
        MO,
        "Address flinkish web (the REST API, dashboard and /metrics) binds to. Loopback by "
        "default; any other address needs flinkish.web.auth-token.",
        RUNTIME,
        default="127.0.0.1",
    ),
    Option(
        "rest.bind-port",
        PortList(),
        MO,
        "Port flinkish web binds to: a port, a list (50100,50101) or a range (50100-50200), "
        "the first free one taken; 0 is any free port. Not set: rest.port, as in Flink.",
        RUNTIME,
        default_fn=lambda config: config.get("rest.port"),
        default_doc="rest.port",
    ),
    Option(
        "flinkish.web.allowed-hosts",
        List(","),
        MO,
        "Further host names flinkish web answers to (the Host header), besides its bind "
        "address, rest.address, localhost and loopback addresses: the names users reach it "
        "by when it is bound beyond loopback. Others get 421 (a DNS-rebinding page's name).",
        RUNTIME,
        default="",
    ),
    Option(
        "web.access-control-allow-origin",
        Str(),
        MO,
        "Flink's CORS key: the Access-Control-Allow-Origin header flinkish web sends, for "
        "a page of another origin that should read the REST API. Not set: no CORS header "
        "(Flink's default is *). An origin named here (not *) may also cancel, stop and "
        "take savepoints; * only lets other origins read.",
        RUNTIME,
    ),
    Option(
        "flinkish.web.header-timeout",
        Duration(),
        MO,
        "How long flinkish web waits for a request's line and headers before it closes the "
        "connection (slow clients).",
        RUNTIME,
        default="10 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "flinkish.web.body-timeout",
        Duration(),
        MO,
        "How long flinkish web waits for a request's body (408 after).",
        RUNTIME,
        default="30 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "flinkish.web.max-connections",
        Int(),
        MO,
        "Open connections flinkish web keeps at most; past it, one neither reading a request "
        "nor being served (lingering after an early refusal, then idle between requests) is "
        "closed first, then the one waiting longest for its request's headers; when all are "
        "being served, the new one is answered 503.",
        RUNTIME,
        default="512",
        check=at_least(1, "a number of connections"),
    ),
    Option(
        "flinkish.web.max-follows",
        Int(),
        MO,
        "Logs followed at once through flinkish web (flinkish logs -f -m, "
        "/flinkish/registry/jobs/<JobID>/log?follow=true); each runs on a thread of its own, "
        "never one of the threads other requests are served on. Past it: 503.",
        RUNTIME,
        default="64",
        check=at_least(1, "a number of follows"),
    ),
    Option(
        "flinkish.web.shutdown-timeout",
        Duration(),
        MO,
        "How long flinkish web, asked to stop (SIGTERM, Ctrl-C), waits for the requests it is "
        "serving before it ends them; follows end at once. Upgrades under way are waited for "
        "(asked again, it stops at once).",
        RUNTIME,
        default="10 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "flinkish.web.session-cluster",
        Str(),
        MO,
        "The Spark Connect address (sc://host:port) of the session cluster flinkish web "
        "fronts: flinkish run -m <this endpoint> submits there. scripts/start-cluster.sh "
        "--session sets it.",
        RUNTIME,
        check=Check(lambda v: v.startswith("sc://") and ":" in v[5:], "sc://host:port"),
    ),
    Option(
        "flinkish.web.auth-token",
        Str(),
        MO,
        "Bearer token flinkish web requires (Authorization: Bearer <token>), and that "
        "flinkish's CLI sends to the endpoint it goes through (Flink's CLI sends it with "
        "FLINK_REST_CLIENT_HEADERS). Give it as a secret reference (${env:VAR} or "
        "${file:path}), never on a command line. Required off loopback.",
        RUNTIME,
    ),
    Option(
        "web.cancel.enable",
        Bool(),
        MO,
        "Whether flinkish web changes jobs: false refuses (403) every request that does "
        "(cancel, stop, a savepoint that cancels, a rescale), through the REST API and the "
        "dashboard's buttons.",
        RUNTIME,
        default="true",
    ),
    Option(
        "web.rescale.enable",
        Bool(),
        MO,
        "Whether flinkish web rescales jobs (PUT /jobs/<JobID>/resource-requirements); "
        "web.cancel.enable false refuses rescales too. /config reports it as web-rescale.",
        RUNTIME,
        default="true",
    ),
    Option(
        "web.submit.enable",
        Bool(),
        MO,
        "Program uploads through the REST API: with true, flinkish web in front of a session "
        "cluster takes programs from 'flinkish run -m host:port' and starts them there. "
        "Needs flinkish.web.auth-token, on loopback too: a submitted program runs as the "
        "server's user.",
        RUNTIME,
        default="false",
    ),
    Option(
        "flinkish.web.upload-timeout",
        Duration(),
        MO,
        "How long flinkish web keeps an uploaded program that was not run; it is removed "
        "after (and once it is run).",
        RUNTIME,
        default="10 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "flinkish.web.submit.warm-runner",
        Bool(),
        MO,
        "With web.submit.enable, flinkish web keeps one job process started ahead (its "
        "supervisor and a client with pyspark's Connect client imported, in a submitted "
        "job's environment) and starts the next submitted job in it; false starts every "
        "job cold.",
        RUNTIME,
        default="true",
    ),
    Option(
        "web.checkpoints.history",
        Int(),
        MO,
        "How many recent checkpoints (micro-batches) the REST API and dashboard list per job.",
        RUNTIME,
        default="10",
        check=at_least(1, "an integer"),
    ),
    Option(
        "web.refresh-interval",
        Duration(),
        MO,
        "How often the dashboard refreshes itself.",
        RUNTIME,
        default="3 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "rest.server.max-content-length",
        Int(),
        MO,
        "The largest request body flinkish web reads, in bytes (larger: 413). flinkish's "
        "default is 1 MiB, Flink's 100 MiB: no request of this API needs more.",
        RUNTIME,
        default="1048576",
        check=at_least(1024, "a number of bytes"),
    ),
    Option(
        "web.exception-history-size",
        Int(),
        RS,
        "How many of a job's last failures its status keeps (time, attempt, query, cause), "
        "across restarts and driver failovers: `list -a --output json` shows them.",
        RUNTIME,
        default="16",
        check=at_least(1, "an integer"),
    ),
    Option(
        "restart-strategy.exponential-delay.initial-backoff",
        Duration(),
        RS,
        "exponential-delay: pause before the first restart.",
        RUNTIME,
        default="1 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "restart-strategy.exponential-delay.max-backoff",
        Duration(),
        RS,
        "exponential-delay: longest pause between restarts (≥ initial-backoff).",
        RUNTIME,
        default="1 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "restart-strategy.exponential-delay.backoff-multiplier",
        Float(),
        RS,
        "exponential-delay: factor applied to the pause after each failure.",
        RUNTIME,
        default="1.5",
        check=at_least(1, "a number", "1.0"),
    ),
    Option(
        "restart-strategy.exponential-delay.reset-backoff-threshold",
        Duration(),
        RS,
        "exponential-delay: running this long without failure resets the pause.",
        RUNTIME,
        default="1 h",
        check=POSITIVE_DURATION,
    ),
    Option(
        "restart-strategy.exponential-delay.jitter-factor",
        Float(),
        RS,
        "exponential-delay: random share added to or taken from each pause.",
        RUNTIME,
        default="0.1",
        check=between(0, 1, "a fraction"),
    ),
    Option(
        "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        Int(),
        RS,
        "exponential-delay: restarts before the job fails (counted until the pause resets).",
        RUNTIME,
        default="2147483647",
        check=at_least(0, "an integer"),
    ),
    Option(
        "restart-strategy.failure-rate.max-failures-per-interval",
        Int(),
        RS,
        "failure-rate: failures within one interval before the job fails.",
        RUNTIME,
        default="1",
        check=at_least(1, "an integer"),
    ),
    Option(
        "restart-strategy.failure-rate.failure-rate-interval",
        Duration(),
        RS,
        "failure-rate: the interval failures are counted in.",
        RUNTIME,
        default="1 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "restart-strategy.failure-rate.delay",
        Duration(),
        RS,
        "failure-rate: pause before each restart.",
        RUNTIME,
        default="1 s",
    ),
    # -- dependencies and Python -----------------------------------------------------------
    Option(
        "pipeline.jars",
        List(";,"),
        D,
        "Jars added to the classpath of the driver and executors.",
        MAPPED,
        spark=m.joined("spark.jars"),
        spark_doc="`spark.jars` (comma-separated)",
    ),
    Option(
        "python.files",
        List(","),
        D,
        "Python files, zips or directories shipped to the executors (run -pyfs).",
        MAPPED,
        spark=m.joined("spark.submit.pyFiles"),
        spark_doc="`spark.submit.pyFiles`",
    ),
    Option(
        "python.archives",
        List(","),
        D,
        "Archives extracted on the executors; 'archive.zip#dir' names the directory (run -pyarch).",
        MAPPED,
        spark=m.joined("spark.archives"),
        spark_doc="`spark.archives`",
    ),
    # -- YARN (-t yarn-application, yarn-session) ------------------------------------------
    Option(
        "yarn.application.name",
        Str(),
        E,
        "Name of the YARN application (pipeline.name wins; default: the script's file name).",
        MAPPED,
        spark=m.to("spark.app.name"),
        spark_doc="`spark.app.name` (the YARN application's name)",
    ),
    Option(
        "yarn.application.queue",
        Str(),
        E,
        "YARN queue the application is submitted to.",
        MAPPED,
        spark=m.to("spark.yarn.queue"),
        spark_doc="`spark.yarn.queue`",
    ),
    Option(
        "yarn.application-attempts",
        Int(),
        RS,
        "Attempts of a yarn-application job's driver (ApplicationMaster), within the "
        "cluster's yarn.resourcemanager.am.max-attempts; wins over the restart strategy.",
        MAPPED,
        check=at_least(1, "an integer"),
        spark=m.to("spark.yarn.maxAppAttempts"),
        spark_doc="`spark.yarn.maxAppAttempts`",
    ),
    Option(
        "yarn.ship-files",
        List(";,"),
        D,
        "Local files and directories shipped to the YARN containers' working directories.",
        MAPPED,
        spark=m.joined("spark.yarn.dist.files"),
        spark_doc="`spark.yarn.dist.files` (comma-separated)",
    ),
    Option(
        "yarn.provided.lib.dirs",
        List(";,"),
        D,
        "Directories (e.g. on HDFS) that hold Spark's jars for the containers, instead of "
        "the local installation's (default: local:<pyspark>/jars, never uploaded).",
        MAPPED,
        spark=m.yarn_jars,
        spark_doc="`spark.yarn.jars` = `<dir>/*` of each",
    ),
    Option(
        "python.executable",
        Str(),
        D,
        "Python interpreter of the executors (run -pyexec); default: the driver's.",
        MAPPED,
        spark=m.to("spark.pyspark.python"),
        spark_doc="`spark.pyspark.python`",
    ),
    Option(
        "python.client.executable",
        Str(),
        D,
        "Python interpreter of the driver (run -pyclientexec); default: flinkish's own.",
        MAPPED,
        spark=m.to("spark.pyspark.driver.python"),
        spark_doc="`spark.pyspark.driver.python`",
    ),
    Option(
        "python.requirements",
        Str(),
        D,
        "requirements.txt installed by run into a zip shipped with the job "
        "('requirements.txt#cache_dir' installs offline) (run -pyreq).",
        RUNTIME,
    ),
    Option(
        "flinkish.connectors",
        List(",;"),
        D,
        "Connectors flinkish resolves for the installed Spark and ships with the job, as "
        "pipeline.jars: 'kafka' (Spark's Kafka source and sink), 's3a' (Hadoop's S3A file "
        "system, added by itself when execution.checkpointing.dir is on S3). Resolved with "
        "Maven once "
        "(the machine's Maven settings), then from the cache; spark.jars.packages is resolved "
        "the same way.",
        RUNTIME,
    ),
    Option(
        "flinkish.kafka.sink.delivery-guarantee",
        Enum(("exactly-once", "at-least-once", "none")),
        D,
        "Flink's KafkaSink DeliveryGuarantee for the job's Kafka sinks "
        "(writeStream.format('kafka')): at-least-once and none leave Spark's Kafka sink as "
        "it is (a batch written again after a failure is read twice); exactly-once writes "
        "each batch in Kafka transactions, with a marker of the batch, so that a "
        "read_committed reader sees each record once. exactly-once needs "
        "flinkish.kafka.sink.transactional-id-prefix and confluent-kafka "
        "(pip install 'flinkish[kafka]'), and a job of its own cluster (a Spark Connect "
        "session cluster's job is refused).",
        RUNTIME,
        default="at-least-once",
    ),
    Option(
        "flinkish.kafka.sink.transactional-id-prefix",
        Str(),
        D,
        "Flink's KafkaSink transactional id prefix: the exactly-once sink's transactional ids "
        "are <prefix>-<query>-<partition>, its markers go to the topic <prefix>-markers. "
        "Unique per job: a job with another's prefix fences that job's transactions.",
        RUNTIME,
    ),
    # -- S3 --------------------------------------------------------------------------------
    Option(
        "s3.endpoint",
        Str(),
        ST,
        "S3 endpoint URL (e.g. MinIO); used by Spark's S3A and flinkish's own S3 access.",
        MAPPED,
        synonyms=("fs.s3a.endpoint",),
        spark=m.to("spark.hadoop.fs.s3a.endpoint"),
        spark_doc="`spark.hadoop.fs.s3a.endpoint`",
    ),
    Option(
        "s3.access-key",
        Str(),
        ST,
        "S3 access key (secret: never shown).",
        MAPPED,
        synonyms=("s3.access.key", "fs.s3a.access.key"),
        spark=m.to("spark.hadoop.fs.s3a.access.key"),
        spark_doc="`spark.hadoop.fs.s3a.access.key`",
    ),
    Option(
        "s3.secret-key",
        Str(),
        ST,
        "S3 secret key (secret: never shown).",
        MAPPED,
        synonyms=("s3.secret.key", "fs.s3a.secret.key"),
        spark=m.to("spark.hadoop.fs.s3a.secret.key"),
        spark_doc="`spark.hadoop.fs.s3a.secret.key`",
    ),
    Option(
        "s3.session.token",
        Str(),
        ST,
        "S3 session token of temporary credentials, with s3.access-key and s3.secret-key "
        "(secret: never shown).",
        MAPPED,
        synonyms=("s3.session-token", "fs.s3a.session.token"),
        spark=m.s3_session_token,
        spark_doc="`spark.hadoop.fs.s3a.session.token`, with S3A's "
        "`TemporaryAWSCredentialsProvider`",
    ),
    Option(
        "s3.path.style.access",
        Bool(),
        ST,
        "Address buckets as endpoint/bucket instead of bucket.endpoint (MinIO needs true).",
        MAPPED,
        default="false",
        synonyms=("s3.path-style-access", "fs.s3a.path.style.access"),
        spark=m.to("spark.hadoop.fs.s3a.path.style.access", m.spark_bool),
        spark_doc="`spark.hadoop.fs.s3a.path.style.access`",
    ),
    Option(
        "s3.region",
        Str(),
        ST,
        "S3 region.",
        MAPPED,
        synonyms=("s3.endpoint.region", "fs.s3a.endpoint.region"),
        spark=m.to("spark.hadoop.fs.s3a.endpoint.region"),
        spark_doc="`spark.hadoop.fs.s3a.endpoint.region`",
    ),
    # -- metrics, JVM, logs, heartbeat -----------------------------------------------------
    Option(
        "metrics.reporter.prom.factory.class",
        Str(),
        MO,
        "Prometheus reporter; any metrics.reporter.prom.* key turns on Spark's endpoint.",
        APPROXIMATE,
        spark=m.prometheus,
        spark_doc="`spark.ui.prometheus.enabled` = true, "
        "`spark.metrics.conf.*.sink.prometheusServlet.class`/`.path` = PrometheusServlet at "
        "/metrics/prometheus",
        note="Spark serves Prometheus metrics from its UI (driver: /metrics/prometheus, "
        "executors: /metrics/executors/prometheus) instead of a reporter's own HTTP server.",
    ),
    Option(
        "metrics.reporter.prom.port",
        Str(),
        MO,
        "Port (or range a-b) of the Prometheus endpoint.",
        APPROXIMATE,
        check=Check(lambda v: bool(PORT.fullmatch(v)), "a port or a range, e.g. 9249 or 9249-9259"),
        spark=m.prometheus_port,
        spark_doc="the Prometheus settings, and `spark.ui.port` = the (first) port",
        note="Spark's Prometheus endpoint is part of its UI, so the UI moves to this port.",
    ),
    Option(
        "io.tmp.dirs",
        List(",:"),
        MO,
        "Local scratch directories (separated by ',' or ':').",
        MAPPED,
        spark=m.local_dirs,
        spark_doc="`spark.local.dir`",
    ),
    Option(
        "env.java.opts.all",
        Str(),
        MO,
        "JVM options of the driver and the executors.",
        MAPPED,
        aliases=("env.java.opts",),
        spark=m.java_opts(("driver", "executor")),
        spark_doc="`spark.driver.extraJavaOptions`, `spark.executor.extraJavaOptions` "
        "(followed by the role's own options)",
    ),
    Option(
        "env.java.opts.jobmanager",
        Str(),
        MO,
        "JVM options of the driver (after env.java.opts.all).",
        MAPPED,
        spark=m.java_opts(("driver",)),
        spark_doc="`spark.driver.extraJavaOptions`",
    ),
    Option(
        "env.java.opts.taskmanager",
        Str(),
        MO,
        "JVM options of the executors (after env.java.opts.all).",
        MAPPED,
        spark=m.java_opts(("executor",)),
        spark_doc="`spark.executor.extraJavaOptions`",
    ),
    Option(
        "env.java.class-data-sharing",
        Bool(),
        MO,
        "Start each fresh driver's JVM from a class-data sharing archive of Spark's classes "
        "(made once per Spark, Java and flinkish version in the user's cache directory).",
        RUNTIME,
        default="true",
        note="Saves seconds of every driver's start. The archive is made by "
        "scripts/setup.sh, or in the background by the first job that finds none; a stale "
        "or refused archive is one line in the job's log and the driver starts without it. "
        "Client-mode drivers only (local, standalone, YARN and Kubernetes sessions), the "
        "local Spark that 'flinkish state' and 'savepoint info' start to read state, and the "
        "one the state check before a restore (run -s, upgrade) plans the program in.",
    ),
    Option(
        "env.log.max",
        Int(),
        MO,
        "How many old files of each log are kept when it rolls (flinkish-<JobID>.log.1 "
        "...), as in Flink; 0 keeps none (the log is emptied when it reaches its size).",
        RUNTIME,
        default="10",
        check=at_least(0, "a number of files"),
    ),
    Option(
        "flinkish.log.max-file-size",
        Memory(),
        MO,
        "The size at which a job's log (and flinkish web's) rolls: it becomes .1 and a new "
        "file starts (Flink's log4j rolling appender rolls at 100 MB).",
        RUNTIME,
        default="100 mb",
        check=at_least(1024, "a size", "1 kb"),
    ),
    Option(
        "env.log.dir",
        Uri(),
        MO,
        "Directory of the jobs' driver logs (flinkish-<job id>.log).",
        RUNTIME,
        default_fn=_home("log"),
        default_doc="`~/.flinkish/log` (expanded to an absolute local path)",
    ),
    Option(
        "flinkish.metrics.jvm.interval",
        Duration(),
        MO,
        "How often a running job's driver measures the JVMs it runs on (its own: Flink's "
        "JobManager; its executors': the TaskManagers) and their task slots, for /metrics "
        "(flink_jobmanager_Status_JVM_*, flink_taskmanager_Status_JVM_*, taskSlotsTotal...). "
        "0 turns it off.",
        RUNTIME,
        default="10 s",
        check=Check(
            lambda v: v.total_seconds() == 0 or v.total_seconds() >= 1,
            "0 (off) or a duration of at least 1 s, e.g. 10 s",
        ),
        note="Flink reads these gauges in its own JVMs at each scrape and has no option for "
        "them (metrics.system-resource-probing-interval is for the host's figures, which "
        "flinkish does not report); flinkish's web server runs apart from the job, so the "
        "driver records them at this interval and a scrape shows the last record.",
    ),
    Option(
        "heartbeat.interval",
        Duration(),
        MO,
        "How often a running job's driver records its heartbeat.",
        RUNTIME,
        default="10 s",
        check=POSITIVE_DURATION,
    ),
    Option(
        "heartbeat.timeout",
        Duration(),
        MO,
        "A job whose heartbeat is older than this shows as FAILED (> heartbeat.interval).",
        RUNTIME,
        default="50 s",
        check=POSITIVE_DURATION,
    ),
    # -- autoscaler ----------------------------------------------------------------------------
    Option(
        "job.autoscaler.enabled",
        Bool(),
        A,
        "Turn on the autoscaler: the job's driver watches each streaming query's true "
        "processing rate and backlog and picks one job-wide parallelism (local[N] slots, "
        "shuffle partitions, state partitions on a rescale) that keeps up with the input at "
        "job.autoscaler.utilization.target; a new parallelism is applied through a savepoint "
        "and a restart under the same JobID.",
        RUNTIME,
        default="false",
    ),
    Option(
        "job.autoscaler.scaling.enabled",
        Bool(),
        A,
        "false: metrics-only. Decisions are computed and recorded in the job's rescale "
        "history (marked NOT_APPLIED), never applied: the job keeps its parallelism.",
        RUNTIME,
        default="true",
    ),
    Option(
        "job.autoscaler.interval",
        Duration(),
        A,
        "How often the job's driver evaluates the autoscaler (reads the job's series of "
        "micro-batches, decides, records the evaluation).",
        RUNTIME,
        default="10 s",
        check=POSITIVE_DURATION,
        synonyms=("autoscaler.standalone.control-loop.interval",),
    ),
    Option(
        "job.autoscaler.metrics.window",
        Duration(),
        A,
        "The span of completed micro-batches each evaluation reads; a decision needs a full "
        "window of batches since the job's (re)start and since the last rescale.",
        RUNTIME,
        default="15 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "job.autoscaler.stabilization.interval",
        Duration(),
        A,
        "After the job starts or restarts (a rescale is a restart) no decision is taken for "
        "this long: the first batches of a run (a cold JVM, state loading) are not load.",
        RUNTIME,
        default="5 min",
    ),
    Option(
        "job.autoscaler.utilization.target",
        Float(),
        A,
        "The share of wall time each query should spend running micro-batches (its busy "
        "share, the task time's busy per second); the new parallelism is sized for it.",
        RUNTIME,
        default="0.7",
        check=Check(lambda v: 0 < v <= 1, "a fraction above 0 up to 1, e.g. 0.7"),
    ),
    Option(
        "job.autoscaler.target.utilization.boundary",
        Float(),
        A,
        "Deprecated in Flink in favour of utilization.min/max, which default to the target "
        "minus and plus this: no rescale while the busiest query's busy share stays within.",
        RUNTIME,
        default="0.3",
        check=between(0, 1, "a fraction"),
    ),
    Option(
        "job.autoscaler.utilization.min",
        Float(),
        A,
        "Below this busy share of the busiest query the job scales down (towards the target); "
        "within [min, max] it keeps its parallelism.",
        RUNTIME,
        default_fn=lambda config: _utilization_bound(config, -1),
        default_doc="utilization.target − target.utilization.boundary, at least 0",
        check=between(0, 1, "a fraction"),
    ),
    Option(
        "job.autoscaler.utilization.max",
        Float(),
        A,
        "Above this busy share of any query the job scales up (towards the target), and it "
        "never scales down while a query is this busy.",
        RUNTIME,
        default_fn=lambda config: _utilization_bound(config, 1),
        default_doc="utilization.target + target.utilization.boundary, at most 1",
        check=between(0, 1, "a fraction"),
    ),
    Option(
        "job.autoscaler.scale-up.max-factor",
        Float(),
        A,
        "One scale-up multiplies the parallelism by at most 1 + this factor.",
        RUNTIME,
        default="100000.0",
        check=Check(lambda v: v > 0, "a number above 0, e.g. 100000.0"),
    ),
    Option(
        "job.autoscaler.scale-down.max-factor",
        Float(),
        A,
        "One scale-down multiplies the parallelism by at least 1 − this factor (0.6: to no "
        "less than 40 % of it).",
        RUNTIME,
        default="0.6",
        check=between(0, 1, "a fraction", high_open=True),
    ),
    Option(
        "job.autoscaler.scale-down.interval",
        Duration(),
        A,
        "No scale-down within this time of the job's last parallelism change (up or down): "
        "each rescale restarts every query from a savepoint, so load that dips for a while "
        "does not cost a restart.",
        RUNTIME,
        default="1 h",
    ),
    Option(
        "job.autoscaler.vertex.min-parallelism",
        Int(),
        A,
        "The lowest parallelism the autoscaler picks for the job.",
        RUNTIME,
        default="1",
        check=at_least(1, "an integer"),
    ),
    Option(
        "job.autoscaler.vertex.max-parallelism",
        Int(),
        A,
        "The highest parallelism the autoscaler picks for the job (Spark runs that many "
        "tasks per stage; local[N] needs that many cores to gain from them).",
        RUNTIME,
        default="200",
        check=at_least(1, "an integer"),
    ),
    Option(
        "job.autoscaler.catch-up.duration",
        Duration(),
        A,
        "A backlog (the sources' records behind their latest offsets, where they report it, "
        "as Kafka does) is to be worked off within this time: the rate a new parallelism is "
        "sized for adds backlog / catch-up.duration to the input rate.",
        RUNTIME,
        default="30 min",
        check=POSITIVE_DURATION,
    ),
    Option(
        "job.autoscaler.restart.time",
        Duration(),
        A,
        "How long a rescale (savepoint, restart, restore) is expected to stop processing; the "
        "input arriving meanwhile is added to the backlog to work off. With "
        "job.autoscaler.restart.time-tracking.enabled, used only until the job has measured "
        "a rescale of its own.",
        RUNTIME,
        default="5 min",
    ),
    Option(
        "job.autoscaler.restart.time-tracking.enabled",
        Bool(),
        A,
        "Use the restart times the job measured on its own rescales instead of the fixed "
        "job.autoscaler.restart.time: the longest of its recent ones (each from when the job "
        "stopped for a rescale to when every query had processed a batch at the new "
        "parallelism), at most job.autoscaler.restart.time-tracking.limit; restart.time while "
        "none was measured.",
        RUNTIME,
        default="false",
    ),
    Option(
        "job.autoscaler.restart.time-tracking.limit",
        Duration(),
        A,
        "The most a measured restart time counts for when "
        "job.autoscaler.restart.time-tracking.enabled is true.",
        RUNTIME,
        default="15 min",
    ),
    Option(
        "job.autoscaler.backlog-processing.lag-threshold",
        Duration(),
        A,
        "A backlog that takes longer than this to read at the input rate counts as being "
        "worked off: the job never scales down meanwhile.",
        RUNTIME,
        default="5 min",
    ),
)

_BY_NAME: dict[str, tuple[Option, bool]] = {}
for _option in OPTIONS:
    _BY_NAME[_option.key] = (_option, False)
    for _synonym in _option.synonyms:
        _BY_NAME[_synonym] = (_option, False)
    for _alias in _option.aliases:
        _BY_NAME[_alias] = (_option, True)


def option(key: str) -> Option:
    """The option registered as ``key`` (or one of its aliases); KeyError if none is."""
    return _BY_NAME[key][0]


def spellings(key: str) -> tuple[str, ...]:
    """Every name ``key``'s option is accepted under: the key, its synonyms, its aliases."""
    found = option(key)
    return (found.key, *found.synonyms, *found.aliases)


#: The key each of ``run``'s configuration flags sets (Flink's CliFrontend options), as
#: messages name it ("flag -p").
FLAGS: dict[str, str] = {
    "-p": "parallelism.default",
    "-t": "execution.target",
    "-d": "execution.attached",
    "-pyfs": "python.files",
    "-pyarch": "python.archives",
    "-pyexec": "python.executable",
    "-pyclientexec": "python.client.executable",
    "-pyreq": "python.requirements",
    "-pypath": "python.pythonpath",
}
#: The flag that sets a key.
FLAG_OF: dict[str, str] = {key: flag for flag, key in FLAGS.items()}


def _s3a(key: str, value: str) -> dict[str, str]:
    return {"spark.hadoop.fs.s3a." + key.split(".", 1)[1]: value}


FAMILIES: tuple[Family, ...] = (
    Family(
        "spark.",
        PASSTHROUGH,
        "Spark setting, passed to Spark verbatim (wins over translated settings).",
        lambda key, value: {key: value},
        "the same key",
    ),
    Family(
        "flink.hadoop.",
        MAPPED,
        "Hadoop setting: Flink hands flink.hadoop.<key> to Hadoop as <key>.",
        lambda key, value: {"spark.hadoop." + key[len("flink.hadoop.") :]: value},
        "`spark.hadoop.<key>`",
    ),
    Family(
        "fs.s3a.",
        MAPPED,
        "Hadoop S3A setting.",
        lambda key, value: {"spark.hadoop." + key: value},
        "`spark.hadoop.fs.s3a.*`",
    ),
    Family(
        "s3.",
        MAPPED,
        "S3 setting, mirrored to Hadoop S3A as Flink's S3 file system does (s3.x → fs.s3a.x).",
        _s3a,
        "`spark.hadoop.fs.s3a.*`",
    ),
    Family(
        "metrics.reporter.prom.",
        APPROXIMATE,
        "Prometheus reporter setting; turns on Spark's Prometheus endpoint.",
        lambda key, value: dict(m.PROMETHEUS_SETTINGS),
        "the Prometheus settings (see metrics.reporter.prom.factory.class)",
    ),
)

#: Flink keys that mean nothing on Spark (accepted with a warning). Listed exactly when a
#: supported key shares their prefix, so that they are not mistaken for a misspelling.
NOT_APPLICABLE_KEYS: frozenset[str] = frozenset(
    {
        "jobmanager.bind-host",
        "jobmanager.execution.failover-strategy",
        "jobmanager.scheduler",
        "jobmanager.archive.fs.dir",
        "jobmanager.memory.heap.size",
        "jobmanager.memory.off-heap.size",
        "jobmanager.memory.flink.size",
        "jobmanager.memory.jvm-metaspace.size",
        "jobmanager.memory.jvm-overhead.min",
        "jobmanager.memory.jvm-overhead.max",
        "jobmanager.memory.jvm-overhead.fraction",
        "jobmanager.memory.enable-jvm-direct-memory-limit",
        "taskmanager.bind-host",
        "taskmanager.host",
        "taskmanager.memory.flink.size",
        "taskmanager.memory.managed.size",
        "taskmanager.memory.managed.fraction",
        "taskmanager.memory.task.heap.size",
        "taskmanager.memory.task.off-heap.size",
        "taskmanager.memory.framework.heap.size",
        "taskmanager.memory.framework.off-heap.size",
        "taskmanager.memory.jvm-metaspace.size",
        "taskmanager.memory.jvm-overhead.min",
        "taskmanager.memory.jvm-overhead.max",
        "taskmanager.memory.jvm-overhead.fraction",
        "taskmanager.memory.min-segment-size",
        "state.backend.async",
        "state.backend.local-recovery",
        "state.backend.rocksdb.compaction.style",
        "state.backend.rocksdb.log.dir",
        "state.backend.rocksdb.timer-service.factory",
        "state.backend.rocksdb.predefined-options",
        "state.checkpoint-storage",
        "execution.checkpointing.storage",
        "execution.checkpointing.max-concurrent-checkpoints",
        "execution.checkpointing.unaligned",
        "execution.checkpointing.unaligned.enabled",
        "execution.checkpointing.aligned-checkpoint-timeout",
        "execution.checkpointing.create-subdir",
        "execution.checkpointing.local-backup.enabled",
        "execution.buffer-timeout",
        "heartbeat.rpc-failure-threshold",
        "env.java.opts.client",
        "env.java.opts.historyserver",
        "env.pid.dir",
        "env.hadoop.conf.dir",
        "env.yarn.conf.dir",
        "env.java.home",
        "env.log.level",
        "env.ssh.opts",
        "state.backend.rocksdb.block.metadata-blocksize",
    }
)

#: Key spaces with no meaning on Spark as a whole (accepted with a warning).
NOT_APPLICABLE_PREFIXES: tuple[str, ...] = (
    "jobmanager.rpc.",
    "rest.",
    "high-availability",
    "blob.",
    "web.",
    "cluster.",
    "akka.",
    "pekko.",
    "security.",
    "historyserver.",
    "kubernetes.",
    "yarn.",
    "zookeeper.",
    "classloader.",
    "metrics.",
    "table.",
    "sql-gateway.",
    "sql-client.",
    "resourcemanager.",
    "slot.",
    "slotmanager.",
    "queryable-state.",
    "state.changelog.",
    "dstl.",
    "fs.",
    "client.",
    "deployment.",
    "jobstore.",
    "job-status.",
    "jmx.",
    "external-resources",
    "scheduler-mode",
    "process.",
    "compiler.",
)

#: Key spaces that mix supported and unsupported Flink keys: an unknown key here is a warning
#: unless it is a near miss of a supported key (then it is an error, "did you mean").
MIXED_PREFIXES: tuple[str, ...] = (
    "taskmanager.",
    "jobmanager.",
    "env.",
    "state.",
    "execution.",
    "pipeline.",
    "python.",
    "io.",
)

NEAR_MISS = 0.9  # similarity of two keys above which an unknown one is a typo of the other
NEAR_WORD = 0.75  # ... provided each dotted segment they differ in is this similar

#: Families whose keys are checked for near misses of their registered keys (``s3.acess-key``).
_CHECKED_FAMILIES = ("s3.", "fs.s3a.")


def _first(key: str) -> str:
    return key.split(".", 1)[0]


_BY_FIRST: dict[str, list[str]] = {}
for _name in _BY_NAME:
    _BY_FIRST.setdefault(_first(_name), []).append(_name)

#: Every dotted prefix of a registered or not-applicable key: a key below one of these may
#: have nested keys; a registered key that is not among them takes a single value.
_PARENTS: frozenset[str] = frozenset(
    name.rsplit(".", i)[0]
    for name in (*_BY_NAME, *NOT_APPLICABLE_KEYS)
    for i in range(1, name.count(".") + 1)
)


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _near(key: str, name: str, matcher: difflib.SequenceMatcher[str]) -> bool:
    """Whether ``key`` reads as a typo of ``name``: close as a whole, and where both have the
    same dotted segments, close in each segment they differ in (so that
    ``metrics.reporter.otel.factory.class`` is not a typo of ``...prom.factory.class``).
    ``matcher`` has ``key`` as its second sequence (so that it is indexed once)."""
    if 2 * min(len(key), len(name)) < NEAR_MISS * (len(key) + len(name)):
        return False
    matcher.set_seq1(name)
    if matcher.quick_ratio() < NEAR_MISS or matcher.ratio() < NEAR_MISS:
        return False
    mine, theirs = key.split("."), name.split(".")
    if len(mine) != len(theirs):
        return True
    return all(_similar(a, b) >= NEAR_WORD for a, b in zip(mine, theirs, strict=True) if a != b)


def _suggestion(name: str) -> str:
    """How a registered name is suggested: a deprecated alias with its current name."""
    found, deprecated = _BY_NAME[name]
    return f"{name} (now {found.key})" if deprecated else name


def _near_miss(key: str, names: list[str]) -> str | None:
    matcher: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None)
    matcher.set_seq2(key)
    matches = [name for name in names if name != key and _near(key, name, matcher)]
    if not matches:
        return None
    best = max(matches, key=lambda name: (_similar(key, name), not _BY_NAME[name][1]))
    return _suggestion(best)


def _closest(key: str, cutoff: float) -> str | None:
    matches = difflib.get_close_matches(key, list(_BY_NAME), n=1, cutoff=cutoff)
    return _suggestion(matches[0]) if matches else None


def _scalar_parent(key: str) -> str | None:
    """The registered single-value key ``key`` is nested under (``parallelism.default`` for
    ``parallelism.default.x``), if any."""
    parts = key.split(".")
    for end in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in _BY_NAME and prefix not in _PARENTS:
            return prefix
    return None


@functools.lru_cache(maxsize=1 << 16)
def classify(key: str) -> KeyInfo:
    """What ``key`` is: an option (maybe by a deprecated name), a family, or not applicable.

    A near miss of a registered key (or of a deprecated name) is an error even where the key
    space is otherwise not applicable (``state.backend.incremetal``), and so is a key nested
    under a single-value key. Raises :class:`UnknownKey` for those and for anything unknown.
    """
    if key in _BY_NAME:
        found, deprecated = _BY_NAME[key]
        return KeyInfo(found.key, found.status, option=found, deprecated=deprecated)
    for family in FAMILIES:
        if key.startswith(family.prefix) and len(key) > len(family.prefix):
            if family.prefix in _CHECKED_FAMILIES:
                near = _near_miss(key, [n for n in _BY_NAME if n.startswith(family.prefix)])
                if near is not None:
                    raise UnknownKey(key, near)
            return KeyInfo(key, family.status, family=family)
    if key in NOT_APPLICABLE_KEYS:
        return KeyInfo(key, NOT_APPLICABLE)
    parent = _scalar_parent(key)
    if parent is not None:
        raise UnknownKey(key, None, f"{parent} takes a single value, not nested keys")
    near = _near_miss(key, _BY_FIRST.get(_first(key), []))
    if near is not None:
        raise UnknownKey(key, near)
    if key.startswith(NOT_APPLICABLE_PREFIXES) or key.startswith(MIXED_PREFIXES):
        return KeyInfo(key, NOT_APPLICABLE)
    raise UnknownKey(key, _closest(key, 0.6))


def all_names() -> list[str]:
    """Every supported key and alias (for completion and tests)."""
    return sorted(_BY_NAME)


@dataclass(frozen=True)
class CrossCheck:
    """A rule between two keys: ``test(value of a, value of b)`` must hold."""

    a: str
    b: str
    test: Callable[[Any, Any], bool]
    relation: str  # how a relates to b when the test fails
    expected: str
    #: checked only when this key is set (a derived default of it always holds)
    when_set: str | None = None


CROSS_CHECKS: tuple[CrossCheck, ...] = (
    CrossCheck(
        "taskmanager.memory.network.min",
        "taskmanager.memory.network.max",
        lambda low, high: low <= high,
        "is larger than",
        "taskmanager.memory.network.min ≤ taskmanager.memory.network.max",
    ),
    CrossCheck(
        "heartbeat.timeout",
        "heartbeat.interval",
        lambda timeout, interval: timeout > interval,
        "is not larger than",
        "heartbeat.timeout > heartbeat.interval",
    ),
    CrossCheck(
        "pipeline.max-parallelism",
        "parallelism.default",
        lambda most, parallelism: most == -1 or most >= parallelism,
        "is smaller than",
        "pipeline.max-parallelism ≥ parallelism.default (or -1)",
    ),
    CrossCheck(
        "restart-strategy.exponential-delay.initial-backoff",
        "restart-strategy.exponential-delay.max-backoff",
        lambda initial, most: initial <= most,
        "is larger than",
        "initial-backoff ≤ max-backoff",
    ),
    CrossCheck(
        "job.autoscaler.vertex.max-parallelism",
        "job.autoscaler.vertex.min-parallelism",
        lambda most, least: most >= least,
        "is smaller than",
        "job.autoscaler.vertex.max-parallelism ≥ job.autoscaler.vertex.min-parallelism",
    ),
    CrossCheck(
        "job.autoscaler.utilization.min",
        "job.autoscaler.utilization.target",
        lambda low, target: low < target,
        "is not smaller than",
        "job.autoscaler.utilization.min < job.autoscaler.utilization.target",
        when_set="job.autoscaler.utilization.min",
    ),
    CrossCheck(
        "job.autoscaler.utilization.max",
        "job.autoscaler.utilization.target",
        lambda high, target: high > target,
        "is not larger than",
        "job.autoscaler.utilization.max > job.autoscaler.utilization.target",
        when_set="job.autoscaler.utilization.max",
    ),
)
