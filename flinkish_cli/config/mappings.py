"""How Flink option values become Spark settings: the functions the registry refers to.

Each function takes the option's typed value and a :class:`Lookup` of the whole
configuration, and returns the Spark settings that value produces. Settings derived from
several Flink keys (RocksDB memory, network buffers, JVM options, local directories) are
computed by one shared function, so every contributing key yields the same Spark values.
Pure functions: no I/O, no pyspark.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = [
    "HDFS_PROVIDER",
    "MIN_BATCHES_FLOOR",
    "PROMETHEUS_SETTINGS",
    "ROCKSDB_PROVIDER",
    "Lookup",
    "SparkMap",
]

MiB = 1 << 20
KiB = 1 << 10

HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_PROVIDERS = {"hashmap": HDFS_PROVIDER, "rocksdb": ROCKSDB_PROVIDER}
ROCKSDB = "spark.sql.streaming.stateStore.rocksdb."

#: spark.sql.streaming.minBatchesToRetain never goes below this (see num_retained).
MIN_BATCHES_FLOOR = 10

#: Flink's shipped config.yaml sizes a TaskManager at 1728m; used when none is configured.
FLINK_TM_PROCESS_SIZE = 1728 * MiB
FLINK_METASPACE = 256 * MiB

PROMETHEUS_SETTINGS = {
    "spark.ui.prometheus.enabled": "true",
    "spark.metrics.conf.*.sink.prometheusServlet.class": (
        "org.apache.spark.metrics.sink.PrometheusServlet"
    ),
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
}


class Lookup(Protocol):
    """The configuration as the mapping functions see it."""

    def get(self, key: str) -> Any: ...

    def is_set(self, key: str) -> bool: ...


SparkMap = Callable[[Any, Lookup], dict[str, str]]


# -- value formats ---------------------------------------------------------------------------


def spark_bool(value: Any) -> str:
    return "true" if value else "false"


def spark_millis(value: Any) -> str:
    """A duration (``timedelta``) in Spark's time syntax, exact to the millisecond: ``60000ms``."""
    return f"{round(value.total_seconds() * 1000)}ms"


def ceil_mib(size: int) -> str:
    """Whole MiB, rounded up (Spark's ...MB options are integers)."""
    return str(max(1, math.ceil(size / MiB)))


def ceil_kib(size: int) -> str:
    return str(max(1, math.ceil(size / KiB)))


def spark_size(size: int) -> str:
    """A byte count in Spark's size syntax, exact: ``48m``, ``32k``, ``100b``."""
    if size and size % MiB == 0:
        return f"{size // MiB}m"
    if size and size % KiB == 0:
        return f"{size // KiB}k"
    return f"{size}b"


def to(spark_key: str, fmt: Callable[[Any], str] = str) -> SparkMap:
    """A one-to-one mapping: ``spark_key`` = ``fmt(value)``."""

    def mapping(value: Any, config: Lookup) -> dict[str, str]:
        return {spark_key: fmt(value)}

    return mapping


def joined(spark_key: str, separator: str = ",") -> SparkMap:
    """A list value joined with ``separator`` (Spark's lists are comma-separated)."""
    return to(spark_key, lambda items: separator.join(items))


# -- checkpoints -----------------------------------------------------------------------------

#: Spark's checkpoint writer that renames through Hadoop's ``FileSystem`` API.
FILE_SYSTEM_CHECKPOINTS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def checkpoint_files(value: Any, config: Lookup) -> dict[str, str]:
    """Checkpoints on local disk are written through Hadoop's ``FileSystem`` API.

    Spark's default writer renames each checkpoint file through Hadoop's ``FileContext``,
    which on the local file system first reads the link status of the file and of its
    destination; without Hadoop's native library (pyspark ships none) each read runs a
    ``readlink`` process: four processes per offset, commit or state file (with its
    ``.crc``). A streaming driver's CPU went down about a fifth with the ``FileSystem``
    writer (20 one-file batches: 15 to 12 CPU-s, 11.5 to 8.7 s). On local disk both writers
    check the destination and then rename, so neither is more atomic than the other; HDFS
    and object stores keep Spark's default (HDFS's ``FileContext`` rename is atomic).
    """
    if str(value).startswith(("/", "file:")):  # a local path is absolute (Uri)
        return {"spark.sql.streaming.checkpointFileManagerClass": FILE_SYSTEM_CHECKPOINTS}
    return {}


# -- state -----------------------------------------------------------------------------------


def state_backend(value: Any, config: Lookup) -> dict[str, str]:
    return {"spark.sql.streaming.stateStore.providerClass": STATE_PROVIDERS[value]}


def rocksdb_memory(value: Any, config: Lookup) -> dict[str, str]:
    """Flink's precedence: fixed-per-slot, then fixed-per-tm, then managed (bounded or not).

    Spark bounds the memory of all RocksDB instances of one executor (a TaskManager).
    """
    per_slot = config.get("state.backend.rocksdb.memory.fixed-per-slot")
    per_tm = config.get("state.backend.rocksdb.memory.fixed-per-tm")
    if per_slot is not None:
        slots = int(config.get("taskmanager.numberOfTaskSlots"))
        return {
            ROCKSDB + "boundedMemoryUsage": "true",
            ROCKSDB + "maxMemoryUsageMB": ceil_mib(per_slot * slots),
        }
    if per_tm is not None:
        return {
            ROCKSDB + "boundedMemoryUsage": "true",
            ROCKSDB + "maxMemoryUsageMB": ceil_mib(per_tm),
        }
    managed = bool(config.get("state.backend.rocksdb.memory.managed"))
    return {ROCKSDB + "boundedMemoryUsage": spark_bool(managed)}


def local_dirs(value: Any, config: Lookup) -> dict[str, str]:
    """``io.tmp.dirs`` wins; else RocksDB's local directory (Spark keeps it in spark.local.dir)."""
    dirs = config.get("io.tmp.dirs") if config.is_set("io.tmp.dirs") else None
    if not dirs:
        localdir = config.get("state.backend.rocksdb.localdir")
        dirs = [localdir] if localdir else []
    return {"spark.local.dir": ",".join(dirs)} if dirs else {}


def num_retained(value: Any, config: Lookup) -> dict[str, str]:
    return {"spark.sql.streaming.minBatchesToRetain": str(max(int(value), MIN_BATCHES_FLOOR))}


# -- resources -------------------------------------------------------------------------------


#: Spark's adaptive execution merges small shuffle partitions, also in a streaming query's
#: micro-batches (Spark 4.1): a job's parallelism would then be a ceiling, never a count, and a
#: per-row lookup after a shuffle ran one row at a time at any parallelism (the autoscaler's
#: benchmark found it). Flink's parallelism is the number of parallel subtasks: kept so.
COALESCE = "spark.sql.adaptive.coalescePartitions.enabled"


def parallelism(value: Any, config: Lookup) -> dict[str, str]:
    return {
        "spark.sql.shuffle.partitions": str(value),
        "spark.default.parallelism": str(value),
        COALESCE: "false",
    }


def local_master(config: Lookup) -> str:
    """``local[N]``, N = max(task slots, parallelism): enough threads for every subtask."""
    slots = int(config.get("taskmanager.numberOfTaskSlots"))
    return f"local[{max(slots, int(config.get('parallelism.default')))}]"


#: The cores a job holds on a standalone cluster (Spark's setting).
CORES_MAX = "spark.cores.max"


def standalone_cores(parallelism: int, spark_conf: Mapping[str, str], own: str | None) -> str:
    """``spark.cores.max`` of a job on a standalone cluster at ``parallelism``, the one rule
    of ``run -p`` and of an in-place rescale: the job's own (``own``, a ``-D
    spark.cores.max``) when it sets one; else as many cores as subtasks, and at least one
    executor's slots (``spark.executor.cores`` in the job's ``spark_conf``, 1 when unset).
    Spark standalone otherwise gives a job every free core, so a job's parallelism would not
    be what it holds."""
    if own:
        return own
    return str(max(parallelism, int(spark_conf.get("spark.executor.cores", "1"))))


def heap_of_process(process: int) -> int:
    """The JVM heap flinkish gives a process of ``process`` bytes (Flink's process size).

    Spark adds ``memoryOverhead`` (default max(384 MiB, 10 %)) on top of the heap, while
    Flink's process size includes its overhead and metaspace; so the heap is the process size
    less max(384 MiB, 10 %), but never less than half of it, rounded down to whole MiB.
    """
    heap = max(process - max(384 * MiB, process // 10), process // 2)
    return heap // MiB * MiB


def process_memory(role: str) -> SparkMap:
    """``spark.<role>.memory`` (heap) and ``spark.<role>.memoryOverhead`` (the rest)."""

    def mapping(value: Any, config: Lookup) -> dict[str, str]:
        process = value // MiB * MiB
        heap = heap_of_process(process)
        return {
            f"spark.{role}.memory": spark_size(heap),
            f"spark.{role}.memoryOverhead": spark_size(process - heap),
        }

    return mapping


def network_memory(value: Any, config: Lookup) -> dict[str, str]:
    """Flink's network memory of a TaskManager, half of a slot's share as Spark's fetch buffer.

    Network memory = fraction x total Flink memory (the process size less 256 MiB metaspace and
    a JVM overhead of 10 % within 192 MiB..1 GiB), clamped to [min, max]. Flink splits a slot's
    buffers between its inputs and outputs; the input half bounds what a reduce task fetches
    at once, which is Spark's ``spark.reducer.maxSizeInFlight``.
    """
    process = config.get("taskmanager.memory.process.size") or FLINK_TM_PROCESS_SIZE
    overhead = min(max(process // 10, 192 * MiB), 1 << 30)
    flink_total = max(process - FLINK_METASPACE - overhead, 0)
    fraction = float(config.get("taskmanager.memory.network.fraction"))
    low = int(config.get("taskmanager.memory.network.min"))
    high = int(config.get("taskmanager.memory.network.max"))
    network = min(max(int(flink_total * fraction), low), high)
    slots = int(config.get("taskmanager.numberOfTaskSlots"))
    in_flight = max(network // slots // 2 // MiB, 1) * MiB
    return {"spark.reducer.maxSizeInFlight": spark_size(in_flight)}


# -- JVM, metrics ----------------------------------------------------------------------------


def _java_opts(config: Lookup, specific: str) -> str:
    parts = [config.get("env.java.opts.all"), config.get(specific)]
    return " ".join(p.strip() for p in parts if p and p.strip())


def java_opts(roles: tuple[str, ...]) -> SparkMap:
    """``env.java.opts.all`` then the role's own options, for the driver and/or executors."""
    specific = {"driver": "env.java.opts.jobmanager", "executor": "env.java.opts.taskmanager"}

    def mapping(value: Any, config: Lookup) -> dict[str, str]:
        result = {}
        for role in roles:
            opts = _java_opts(config, specific[role])
            if opts:
                result[f"spark.{role}.extraJavaOptions"] = opts
        return result

    return mapping


def yarn_jars(value: Any, config: Lookup) -> dict[str, str]:
    """``yarn.provided.lib.dirs``: every jar of each directory, as ``spark.yarn.jars``."""
    return {"spark.yarn.jars": ",".join(f"{str(d).rstrip('/')}/*" for d in value)}


def s3_session_token(value: Any, config: Lookup) -> dict[str, str]:
    """Temporary credentials (an STS session token with its access and secret key): S3A needs
    its temporary-credentials provider to use the token."""
    return {
        "spark.hadoop.fs.s3a.session.token": str(value),
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        ),
    }


def prometheus(value: Any, config: Lookup) -> dict[str, str]:
    return dict(PROMETHEUS_SETTINGS)


def prometheus_port(value: Any, config: Lookup) -> dict[str, str]:
    """Spark serves its Prometheus endpoint on the UI port: the reporter's (first) port."""
    return {**PROMETHEUS_SETTINGS, "spark.ui.port": str(value).split("-")[0].strip()}
