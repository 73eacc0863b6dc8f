"""WebHdfsStorage against a real NameNode (``hdfs_cluster``): the storage contract of
:mod:`flinkish_cli.storage.base` as the command line meets it, without a Spark driver."""

from __future__ import annotations

import io
import sys
import uuid
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import StorageSettings, join, open_storage
from flinkish_cli.storage.base import Storage, StorageNotFoundError, temp_name
from tests.fixtures.hdfs import Hdfs

pytestmark = pytest.mark.spark  # a NameNode's JVM


@pytest.fixture
def root(hdfs_cluster: Hdfs, monkeypatch: pytest.MonkeyPatch) -> tuple[Storage, str]:
    monkeypatch.delitem(sys.modules, "pyspark", raising=False)  # the command line: no JVM
    path = hdfs_cluster.url(f"webhdfs-{uuid.uuid4().hex[:8]}")
    settings = StorageSettings(
        hadoop_conf={"dfs.namenode.http-address": f"127.0.0.1:{hdfs_cluster.http_port}"}
    )
    storage = open_storage(path, settings)
    assert type(storage).__name__ == "WebHdfsStorage"
    return storage, path


def test_writes_are_atomic_renames_and_listings_skip_temporary_files(
    root: tuple[Storage, str], hdfs_cluster: Hdfs
) -> None:
    storage, base = root
    status = join(base, "job", "_flinkish", "status.json")
    storage.write_text(status, '{"state": "RUNNING"}')
    storage.write_text(status, '{"state": "FINISHED"}')  # replaced, not appended
    assert storage.read_text(status) == '{"state": "FINISHED"}'
    assert storage.create_exclusive(join(base, "job", "lock"), b"a")
    assert not storage.create_exclusive(join(base, "job", "lock"), b"b")
    assert storage.read_bytes(join(base, "job", "lock")) == b"a"
    hdfs_cluster.shell("-touchz", temp_name(join(base, "job", "half")))  # a writer's leftover
    assert [i.name for i in storage.list(join(base, "job"))] == ["_flinkish", "lock"]
    walked = sorted(i.path for i in storage.walk(base))
    assert walked == [join(base, "job", "_flinkish", "status.json"), join(base, "job", "lock")]
    # Hadoop's own shell, a client of its own, sees the same files
    assert hdfs_cluster.shell("-cat", status) == '{"state": "FINISHED"}'


def test_big_files_stream_both_ways_and_versions_tell_changes(
    root: tuple[Storage, str], tmp_path: Path
) -> None:
    storage, base = root
    data = bytes(range(256)) * 12_000  # 3 MB: several HDFS packets, a DataNode redirect each way
    storage.write_stream(join(base, "big"), io.BytesIO(data))  # type: ignore[arg-type]
    assert storage.size(join(base, "big")) == len(data)
    storage.download_file(join(base, "big"), str(tmp_path / "copy"))
    assert (tmp_path / "copy").read_bytes() == data
    version, content = storage.read_if_changed(join(base, "big"), None)
    assert content == data and version is not None
    assert storage.read_if_changed(join(base, "big"), version) == (version, None)
    storage.write_bytes(join(base, "big"), b"small")
    assert storage.read_if_changed(join(base, "big"), version)[1] == b"small"


def test_missing_files_deletes_and_copies(root: tuple[Storage, str], tmp_path: Path) -> None:
    storage, base = root
    with pytest.raises(StorageNotFoundError):
        storage.read_bytes(join(base, "nothing"))
    assert storage.list(join(base, "nothing")) == []
    assert not storage.exists(join(base, "nothing"))
    (tmp_path / "tree" / "a").mkdir(parents=True)
    (tmp_path / "tree" / "a" / "x").write_bytes(b"x" * 1000)
    (tmp_path / "tree" / "y").write_bytes(b"y")
    local = open_storage(str(tmp_path / "tree"))
    stats = local.copy_tree(str(tmp_path / "tree"), storage, join(base, "copy"))
    assert stats.files == 2
    back = tmp_path / "back"
    storage.copy_tree(join(base, "copy"), open_storage(str(back)), str(back))
    assert (back / "a" / "x").read_bytes() == b"x" * 1000 and (back / "y").read_bytes() == b"y"
    with pytest.raises(StorageError, match="is a directory"):
        storage.delete(join(base, "copy", "a"))
    storage.delete(join(base, "copy", "y"))
    storage.delete(join(base, "copy", "y"))  # gone already: nothing happens
    storage.delete_tree(join(base, "copy"))
    assert not storage.exists(join(base, "copy"))
    with pytest.raises(StorageError, match="Refusing to delete the whole file system"):
        storage.delete_tree(base.rsplit("/", 1)[0] + "/")
