"""Storage faults while a savepoint is taken, on a real Spark checkpoint (the fault-injection
matrix at the storage level): the S3 server stopped, slowed and stalled during the upload, a
full disk, a damaged checkpoint file.

One small stateful query (counts per key, RocksDB state, two runs of ``availableNow``) makes
the checkpoint once per module; each test takes a savepoint of its own copy through
:func:`~flinkish_cli.savepoints.create.take_savepoint`, with the fault injected, and checks:

- the failure is one clear :class:`~flinkish_cli.errors.FlinkishError` naming the problem;
- nothing half-written validates as a savepoint (restore and dispose refuse it);
- a retry succeeds, and the query resumes from that savepoint in Spark with every count
  equal to the ground truth of its input (state restored exactly, nothing counted twice).

A damaged checkpoint file is worth finding before Spark reads it: in place, from a copy of
this checkpoint whose ``offsets/2`` had one flipped byte, Spark 4.3 resumed without an error.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.errors import SavepointError, StorageError
from flinkish_cli.savepoints.create import DamagedCheckpointError, take_savepoint
from flinkish_cli.savepoints.dispose import dispose
from flinkish_cli.savepoints.manifest import is_savepoint_name
from flinkish_cli.savepoints.restore import open_source, restore_query
from flinkish_cli.storage import LocalStorage, Storage, join, open_storage
from tests.fixtures.local_spark import stop_spark
from tests.fixtures.long_form import GATE_SKIPS, LONG_FORM
from tests.fixtures.s3server import S3Server, after_uploads, start_s3_server
from tests.storage.tcp_proxy import TcpProxy
from tests.storage.tmpfs import fill, small_tmpfs

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

JOB = "5a7e" + "1" * 28
QUERY = "counts"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


# -- the shared checkpoint -------------------------------------------------------------------
@dataclass
class CountsQuery:
    """A Spark session, the query's input directory and the checkpoint it left."""

    spark: Any
    inputs: Path
    checkpoint: Path
    spark_version: str

    def add_input(self, rows: int = 40, keys: int = 500) -> None:
        """One more JSON file (written atomically, as a producer would)."""
        name = f"part-{uuid.uuid4().hex}.json"
        start = sum(1 for _ in self.inputs.iterdir()) * 1000
        lines = "".join(
            json.dumps({"key": f"k{(start + i) * 7919 % keys}", "seq": start + i}) + "\n"
            for i in range(rows)
        )
        temp = self.inputs / f".{name}.tmp"
        temp.write_text(lines)
        os.rename(temp, self.inputs / name)

    def truth(self) -> dict[str, int]:
        counts: collections.Counter[str] = collections.Counter()
        for path in self.inputs.glob("part-*.json"):
            counts.update(json.loads(line)["key"] for line in path.read_text().splitlines())
        return dict(counts)

    def run(self, checkpoint: Path) -> dict[str, int]:
        """Run the query over the input available now, from ``checkpoint``; its counts."""
        stream = (
            self.spark.readStream.schema("key string, seq long")
            .option("maxFilesPerTrigger", 1)
            .json(str(self.inputs))
        )
        query = (
            stream.groupBy("key")
            .count()
            .writeStream.outputMode("complete")
            .format("memory")
            .queryName(QUERY)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return {
            row["key"]: row["count"] for row in self.spark.sql(f"SELECT * FROM {QUERY}").collect()
        }

    def copy(self, tmp_path: Path) -> Path:
        """A private copy of the checkpoint: ``<tmp>/checkpoints/<JOB>/counts``."""
        target = tmp_path / "checkpoints" / JOB / QUERY
        shutil.copytree(self.checkpoint, target)
        return target

    def savepoint(self, checkpoint: Path, target: Storage, target_dir: str) -> str:
        return take_savepoint(
            LocalStorage(str(checkpoint)),
            {QUERY: str(checkpoint)},
            target,
            target_dir,
            JOB,
            "counts",
            self.spark_version,
        )

    def resume_from(self, storage: Storage, path: str, tmp_path: Path) -> None:
        """Restore the savepoint at ``path`` into a fresh checkpoint, add input, run: every
        count equals the ground truth (restored state plus the new input, nothing twice)."""
        source = open_source(storage, path)
        assert source.kind == "savepoint"
        resumed = tmp_path / f"resumed-{uuid.uuid4().hex[:6]}" / QUERY
        assert restore_query(storage, source, QUERY, LocalStorage(str(resumed)), str(resumed))
        self.add_input()
        assert self.run(resumed) == self.truth()


@pytest.fixture(scope="module")
def counts_query(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CountsQuery]:
    from pyspark.sql import SparkSession

    base = tmp_path_factory.mktemp("counts-query")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("flinkish-storage-faults")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    inputs = base / "in"
    inputs.mkdir()
    query = CountsQuery(spark, inputs, base / "checkpoint" / QUERY, spark.version)
    try:
        for _ in range(2):
            query.add_input()
        query.run(query.checkpoint)  # two batches
        query.add_input()
        assert query.run(query.checkpoint) == query.truth()  # a restart, one more batch
        yield query
    finally:
        stop_spark(spark)


# -- helpers ---------------------------------------------------------------------------------
def _leftovers(storage: Storage, directory: str) -> list[str]:
    """The savepoint directories left under ``directory`` (by a failed attempt)."""
    return [i.path for i in storage.list(directory) if i.is_dir and is_savepoint_name(i.name)]


def _refused_everywhere(storage: Storage, path: str) -> None:
    """Nothing half-written validates: restore and dispose refuse it, and leave it."""
    with pytest.raises(SavepointError, match="is not a complete savepoint"):
        open_source(storage, path)
    with pytest.raises(SavepointError, match="is not a complete savepoint"):
        dispose(storage, path)


def _no_secret(error: BaseException, server: S3Server) -> str:
    text = str(error)
    assert server.secret_key not in text and server.access_key not in text
    return text


# -- (a) the S3 server stopped during the upload ---------------------------------------------
@pytest.mark.skipif(not LONG_FORM, reason=GATE_SKIPS)
def test_s3_endpoint_gone_during_the_upload(
    counts_query: CountsQuery, tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    """The long form's: the gate cuts the endpoint off in the middle of a running job's
    savepoint (``tests/savepoints/test_job_faults.py``: the same message, the half-written
    savepoint refused, a retry resumed exactly once) and during an upload without Spark
    (``tests/storage/test_s3_faults.py``)."""
    checkpoint = counts_query.copy(tmp_path)
    target_dir = join(s3_bucket, "savepoints")
    with TcpProxy(s3_server.address) as proxy:
        settings = s3_server.settings(
            s3_endpoint=proxy.endpoint, max_workers=2, connect_timeout=2, read_timeout=5
        )
        target = open_storage(target_dir, settings)
        stopped = after_uploads(target, 3, proxy.stop)
        with pytest.raises(StorageError) as caught:
            counts_query.savepoint(checkpoint, target, target_dir)
        assert stopped.is_set()
        message = _no_secret(caught.value, s3_server)
        # An upload in flight when the endpoint dies sees its connection closed; one that starts
        # after sees it refused. Either way one message names the endpoint and what to check.
        assert (
            f"Cannot connect to the S3 endpoint {proxy.endpoint}" in message
            or f"the S3 endpoint {proxy.endpoint} stopped answering" in message
        ), message
        proxy.start()  # the endpoint is back; the server kept what was uploaded
        partial = _leftovers(target, target_dir)
        assert len(partial) == 1, partial  # 3 uploads landed; the clean-up could not run
        for path in partial:
            _refused_everywhere(target, path)
        path = counts_query.savepoint(checkpoint, target, target_dir)
        counts_query.resume_from(target, path, tmp_path)


def test_s3_server_process_stopped_during_the_upload(
    counts_query: CountsQuery, tmp_path: Path
) -> None:
    checkpoint = counts_query.copy(tmp_path)
    with start_s3_server() as server:
        target_dir = join(server.bucket(), "savepoints")
        target = open_storage(target_dir, server.settings(max_workers=2, connect_timeout=2))
        assert server.process is not None
        process = server.process

        def kill() -> None:
            process.terminate()
            process.wait(timeout=10)

        after_uploads(target, 3, kill)
        with pytest.raises(StorageError) as caught:
            counts_query.savepoint(checkpoint, target, target_dir)
        assert "Cannot connect to the S3 endpoint" in _no_secret(caught.value, server)
    with start_s3_server() as again:  # the retry, against the server started again
        target_dir = join(again.bucket(), "savepoints")
        target = open_storage(target_dir, again.settings())
        path = counts_query.savepoint(checkpoint, target, target_dir)
        counts_query.resume_from(target, path, tmp_path)


# -- (b) the S3 server slowed ----------------------------------------------------------------
def test_s3_slowed_during_the_upload_still_gives_a_valid_savepoint(
    counts_query: CountsQuery, tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    checkpoint = counts_query.copy(tmp_path)
    target_dir = join(s3_bucket, "savepoints")
    with TcpProxy(s3_server.address) as proxy:
        proxy.delay, proxy.piece = 0.003, 8 * 1024  # every 8 KiB waits 3 ms, both ways
        target = open_storage(target_dir, s3_server.settings(s3_endpoint=proxy.endpoint))
        path = counts_query.savepoint(checkpoint, target, target_dir)
        assert proxy.requests > 0
        counts_query.resume_from(target, path, tmp_path)


def test_s3_stalled_during_the_upload_fails_clearly_and_a_retry_works(
    counts_query: CountsQuery, tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    checkpoint = counts_query.copy(tmp_path)
    target_dir = join(s3_bucket, "savepoints")
    with TcpProxy(s3_server.address) as proxy:
        settings = s3_server.settings(
            s3_endpoint=proxy.endpoint,
            max_workers=2,
            connect_timeout=1,
            read_timeout=2,
            max_attempts=2,
        )
        target = open_storage(target_dir, settings)
        after_uploads(target, 3, proxy.stall)
        with pytest.raises(StorageError) as caught:
            counts_query.savepoint(checkpoint, target, target_dir)
        assert "stopped answering" in _no_secret(caught.value, s3_server)
        proxy.unstall()
        leftovers = _leftovers(target, target_dir)
        assert len(leftovers) == 1, leftovers  # 3 uploads landed before the stall
        for path in leftovers:
            _refused_everywhere(target, path)
        path = counts_query.savepoint(checkpoint, target, target_dir)
        counts_query.resume_from(target, path, tmp_path)


# -- (c) a full disk -------------------------------------------------------------------------
def _pages(checkpoint: Path) -> int:
    """The bytes a savepoint's copied files take on a tmpfs (whole pages)."""
    from flinkish_cli.savepoints.create import snapshot_query

    snapshot = snapshot_query(LocalStorage(str(checkpoint)), str(checkpoint), QUERY)
    page = os.sysconf("SC_PAGE_SIZE")
    sizes = [(checkpoint / name).stat().st_size for name in snapshot.files]
    return sum(-(-size // page) * page for size in sizes)


def test_full_disk_during_the_copy(counts_query: CountsQuery, tmp_path: Path) -> None:
    checkpoint = counts_query.copy(tmp_path)
    with small_tmpfs(tmp_path / "small") as disk:
        needed = _pages(checkpoint)
        filler = fill(disk, needed // 2)
        target = LocalStorage(str(disk))
        with pytest.raises(StorageError, match="No space left on the device to write") as caught:
            counts_query.savepoint(checkpoint, target, str(disk / "sp"))
        assert str(disk / "sp") in str(caught.value), "the message names the full device"
        assert not _leftovers(target, str(disk / "sp")), "the partial savepoint was removed"
        filler.unlink()
        path = counts_query.savepoint(checkpoint, target, str(disk / "sp"))
        counts_query.resume_from(target, path, tmp_path)


def test_full_disk_when_the_manifest_is_written(counts_query: CountsQuery, tmp_path: Path) -> None:
    """Room for every file but not for ``_metadata``: the write of the manifest fails, and
    the copied files, without it, are removed and never validate."""
    checkpoint = counts_query.copy(tmp_path)
    with small_tmpfs(tmp_path / "small") as disk:
        filler = fill(disk, _pages(checkpoint))
        target = LocalStorage(str(disk))
        with pytest.raises(StorageError, match="No space left on the device") as caught:
            counts_query.savepoint(checkpoint, target, str(disk / "sp"))
        assert "_metadata" in str(caught.value), "the files fitted, the manifest did not"
        assert not _leftovers(target, str(disk / "sp")), "the partial savepoint was removed"
        filler.unlink()
        path = counts_query.savepoint(checkpoint, target, str(disk / "sp"))
        counts_query.resume_from(target, path, tmp_path)


# -- (d) a damaged checkpoint file -----------------------------------------------------------
def _state_file(checkpoint: Path, suffix: str) -> Path:
    found = sorted(p for p in (checkpoint / "state").rglob(f"*{suffix}") if p.stat().st_size)
    assert found, f"no {suffix} file in {checkpoint}"
    return found[-1]


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGE = {
    # what is damaged, how, and what the refusal names
    "offsets-truncated": (lambda c: c / "offsets" / "2", _truncate, "offsets/2"),
    "commit-flipped": (lambda c: c / "commits" / "2", _flip, "commits/2"),
    "state-zip-flipped": (lambda c: _state_file(c, ".zip"), _flip, ".zip"),
    "state-sst-truncated": (lambda c: _state_file(c, ".sst"), _truncate, ".sst"),
    "source-log-flipped": (lambda c: c / "sources" / "0" / "2", _flip, "sources/0/2"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_checkpoint_file_at_savepoint_and_restore_time(
    counts_query: CountsQuery, tmp_path: Path, case: str
) -> None:
    checkpoint = counts_query.copy(tmp_path)
    locate, damage, named = DAMAGE[case]
    damaged = locate(checkpoint)
    original = damaged.read_bytes()
    damage(damaged)
    target = LocalStorage(str(tmp_path))
    with pytest.raises(DamagedCheckpointError) as taken:
        counts_query.savepoint(checkpoint, target, str(tmp_path / "sp"))
    message = str(taken.value)
    assert f"The checkpoint of query '{QUERY}' ({checkpoint}) is damaged: " in message
    assert named in message and "No savepoint was written" in message
    assert not (tmp_path / "sp").exists() or not any((tmp_path / "sp").iterdir())
    with pytest.raises(DamagedCheckpointError) as restored:  # run -s <checkpoints>/<JobID>
        open_source(LocalStorage(str(tmp_path)), str(checkpoint.parent))
    assert named in str(restored.value) and "Nothing was started" in str(restored.value)
    damaged.write_bytes(original)  # repaired: the savepoint and the resume work
    path = counts_query.savepoint(checkpoint, target, str(tmp_path / "sp"))
    counts_query.resume_from(target, path, tmp_path)
