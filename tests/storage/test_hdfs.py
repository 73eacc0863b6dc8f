"""HdfsStorage through a real JVM: Hadoop's FileSystem API on ``file:///`` paths.

A real HDFS namenode cannot run in the test environment, so this exercises every operation
through Hadoop's LocalFileSystem instead: the same py4j calls (FileSystem, FileContext,
FileUtil) that reach HDFS in a job's driver. One local Spark session, one core, no UI.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from flinkish_cli.storage import (
    LocalStorage,
    StorageNotFoundError,
    StorageSettings,
    join,
    relative_to,
)
from flinkish_cli.storage.hdfs import HdfsStorage
from tests.fixtures.local_spark import stop_spark


@pytest.mark.spark
def test_hdfs_storage_through_hadoop_filesystem(tmp_path: Path) -> None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    owned = SparkContext._active_spark_context is None
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("flinkish-storage-test")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    try:
        sc = spark.sparkContext
        explicit = HdfsStorage(
            f"file://{tmp_path}", jvm=sc._jvm, hadoop_conf=sc._jsc.hadoopConfiguration()
        )
        found = HdfsStorage(f"file://{tmp_path}")  # finds the active SparkContext itself
        tuned = HdfsStorage(
            f"file://{tmp_path}",
            StorageSettings.from_flink({"flink.hadoop.flinkish.test.key": "on"}),
        )
        assert tuned._conf.get("flinkish.test.key") == "on"
        assert sc._jsc.hadoopConfiguration().get("flinkish.test.key") is None  # copied, not set
        assert found.describe() == f"file://{tmp_path} (through Hadoop)"
        for storage in (explicit, found):
            _exercise(storage, f"file://{tmp_path}/{id(storage)}", tmp_path)
    finally:
        if owned:
            stop_spark(spark)


def _exercise(s: HdfsStorage, root: str, tmp_path: Path) -> None:
    status = join(root, "job", "_flinkish", "status.json")
    s.write_text(status, '{"state": "RUNNING"}')
    s.write_text(status, '{"state": "FINISHED"}')
    assert s.read_text(status) == '{"state": "FINISHED"}'
    assert s.exists(status) and not s.is_dir(status) and s.is_dir(join(root, "job"))
    assert s.size(status) == len('{"state": "FINISHED"}')

    assert s.create_exclusive(join(root, "lock"), b"one") is True
    assert s.create_exclusive(join(root, "lock"), b"two") is False
    assert s.read_bytes(join(root, "lock")) == b"one"

    data = os.urandom(3 * 1024 * 1024 + 11)
    s.write_bytes(join(root, "job", "q", "state", "1.delta"), data)
    assert (
        s.checksum(join(root, "job", "q", "state", "1.delta")) == hashlib.sha256(data).hexdigest()
    )
    with s.open_read(join(root, "job", "q", "state", "1.delta")) as stream:
        assert stream.read(5) + stream.read() == data

    assert [(i.name, i.is_dir) for i in s.list(root)] == [("job", True), ("lock", False)]
    walked = sorted(relative_to(root, i.path) for i in s.walk(root))
    assert walked == ["job/_flinkish/status.json", "job/q/state/1.delta", "lock"]
    assert s.list(join(root, "missing")) == [] and list(s.walk(join(root, "missing"))) == []
    with pytest.raises(StorageNotFoundError):
        s.read_bytes(join(root, "missing"))

    # local <-> Hadoop, and Hadoop -> Hadoop inside the JVM
    local = tmp_path / f"local-{id(s)}"
    local.mkdir()
    (local / "up.bin").write_bytes(b"uploaded")
    s.upload_file(str(local / "up.bin"), join(root, "up.bin"))
    s.download_file(join(root, "up.bin"), str(local / "down.bin"))
    assert (local / "down.bin").read_bytes() == b"uploaded"

    stats = s.copy_tree(join(root, "job"), s, join(root, "savepoint"))
    assert (stats.files, stats.transferred) == (2, 2)
    assert s.read_bytes(join(root, "savepoint", "q", "state", "1.delta")) == data
    stats = s.copy_tree(join(root, "job"), LocalStorage(str(local)), str(local / "restored"))
    assert (local / "restored" / "q" / "state" / "1.delta").read_bytes() == data
    stats = LocalStorage(str(local)).copy_tree(str(local / "restored"), s, join(root, "back"))
    assert stats.files == 2 and s.read_bytes(join(root, "back", "q", "state", "1.delta")) == data

    s.delete(join(root, "lock"))
    assert not s.exists(join(root, "lock"))
    s.delete_tree(join(root, "job"))
    assert not s.exists(join(root, "job"))
    leftovers = [n for _, _, names in os.walk(root.removeprefix("file://")) for n in names]
    assert not [n for n in leftovers if "flinkish-tmp" in n]
