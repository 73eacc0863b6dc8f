"""copy_tree, the primitive savepoints use: every pair of backends and its fast path."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import (
    CopyStats,
    LocalStorage,
    StorageNotFoundError,
    join,
    open_storage,
    relative_to,
)
from flinkish_cli.storage.settings import MiB
from tests.fixtures.s3server import S3Server
from tests.storage.conftest import Root, count_calls

FILES = {
    "metadata": b'{"id": "q1"}',
    "offsets/7": b"v1\n{}\n{}",
    "commits/7": b"v1\n{}",
    "state/0/0/8.delta": b"delta 8" * 100,
    "state/0/1/8.snapshot": b"snapshot" * 1000,
    "sources/0/0": b"",
}


def _tree(storage, root: str) -> dict[str, bytes]:
    return {relative_to(root, i.path): storage.read_bytes(i.path) for i in storage.walk(root)}


def _upload(root: Root, files: dict[str, bytes], under: str) -> str:
    for name, data in files.items():
        root.storage.write_bytes(root.path(under, name), data)
    return root.path(under)


# -- local to local --------------------------------------------------------------------------
def test_local_copy_hard_links_on_one_file_system(make_files, tmp_path: Path) -> None:
    src = make_files(FILES)
    dest = str(tmp_path / "savepoint" / "q1")
    stats = LocalStorage(src).copy_tree(src, LocalStorage(dest), dest)
    assert (stats.files, stats.linked, stats.transferred, stats.server_side) == (6, 6, 0, 0)
    assert stats.bytes == sum(len(d) for d in FILES.values())
    for name in FILES:
        a, b = os.stat(os.path.join(src, name)), os.stat(os.path.join(dest, name))
        assert a.st_ino == b.st_ino and a.st_dev == b.st_dev
        assert b.st_nlink == 2
    assert _tree(LocalStorage(dest), dest) == FILES


def test_local_copy_without_links_copies(make_files, tmp_path: Path) -> None:
    src = make_files(FILES)
    dest = str(tmp_path / "copy")
    stats = LocalStorage(src).copy_tree(src, LocalStorage(dest), dest, link=False)
    assert (stats.linked, stats.transferred) == (0, 6)
    for name in FILES:
        assert os.stat(os.path.join(src, name)).st_ino != os.stat(os.path.join(dest, name)).st_ino
        assert os.stat(os.path.join(dest, name)).st_nlink == 1
    assert _tree(LocalStorage(dest), dest) == FILES


def test_local_copy_falls_back_to_copying_across_devices(
    make_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = make_files(FILES)
    dest = str(tmp_path / "other-device")
    attempts: list[str] = []

    def cross_device(source: str, target: str, *args: object, **kwargs: object) -> None:
        attempts.append(target)
        raise OSError(errno.EXDEV, "Invalid cross-device link", source)

    monkeypatch.setattr(os, "link", cross_device)
    storage = LocalStorage(src, open_storage(src).settings)
    stats = storage.copy_tree(src, LocalStorage(dest), dest)
    assert (stats.linked, stats.transferred) == (0, 6)
    assert len(attempts) < 6  # after the first EXDEV it stops trying to link
    monkeypatch.undo()
    for name in FILES:
        assert os.stat(os.path.join(dest, name)).st_nlink == 1
    assert _tree(LocalStorage(dest), dest) == FILES


def test_local_copy_falls_back_when_links_are_refused(
    make_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = make_files({"a": b"1", "b/c": b"2"})

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)
    dest = str(tmp_path / "d")
    stats = LocalStorage(src).copy_tree(src, LocalStorage(dest), dest)
    assert (stats.linked, stats.transferred) == (0, 2)
    assert _tree(LocalStorage(dest), dest) == {"a": b"1", "b/c": b"2"}


def test_copy_replaces_existing_destination_files(make_files, tmp_path: Path) -> None:
    src = make_files({"a": b"new"})
    dest = make_files({"a": b"old", "other": b"kept"})
    stats = LocalStorage(src).copy_tree(src, LocalStorage(dest), dest)
    assert stats.linked == 1
    assert _tree(LocalStorage(dest), dest) == {"a": b"new", "other": b"kept"}


def test_copy_only_the_listed_files(make_files, tmp_path: Path) -> None:
    src = make_files(FILES)
    dest = str(tmp_path / "some")
    chosen = ["offsets/7", "state/0/1/8.snapshot", "metadata", "metadata"]
    stats = LocalStorage(src).copy_tree(src, LocalStorage(dest), dest, files=chosen)
    assert stats.files == 3
    assert _tree(LocalStorage(dest), dest) == {
        n: FILES[n] for n in ("offsets/7", "state/0/1/8.snapshot", "metadata")
    }


def test_missing_listed_files_are_named(make_files, tmp_path: Path) -> None:
    src = make_files(FILES)
    with pytest.raises(StorageNotFoundError) as caught:
        LocalStorage(src).copy_tree(
            src, LocalStorage(str(tmp_path)), str(tmp_path / "x"), files=["metadata", "gone/1"]
        )
    assert "gone/1" in str(caught.value)


def _purging(storage, gone: set[str]):
    """``storage`` as a live checkpoint's owner leaves it: each name of ``gone`` is deleted
    (as Spark purges an old log entry) between the copy's listing and its own copy."""

    class Purging(type(storage)):
        def _copy_file(self, src, dest, dest_path, size, link):
            if src.rpartition("/")[2] in gone:
                self.delete(src)
            return super()._copy_file(src, dest, dest_path, size, link)

    purging = Purging.__new__(Purging)
    purging.__dict__.update(storage.__dict__)
    return purging


def test_files_allowed_to_vanish_are_skipped_and_named(any_root: Root) -> None:
    src = _upload(any_root, FILES, "src")
    storage = _purging(any_root.storage, {"7"})
    dest = any_root.path("dest")
    stats = storage.copy_tree(
        src,
        any_root.storage,
        dest,
        files=["offsets/7", "commits/7", "metadata"],
        may_vanish=["offsets/7", "commits/7"],
    )
    assert sorted(stats.vanished) == ["commits/7", "offsets/7"]
    assert stats.files == 1 and stats.bytes == len(FILES["metadata"])
    assert _tree(any_root.storage, dest) == {"metadata": FILES["metadata"]}


def test_a_vanishing_file_not_allowed_to_is_an_error(any_root: Root) -> None:
    src = _upload(any_root, FILES, "src")
    storage = _purging(any_root.storage, {"7"})
    with pytest.raises(StorageNotFoundError, match="commits/7"):
        storage.copy_tree(
            src, any_root.storage, any_root.path("dest"), ["commits/7"], may_vanish=["offsets/7"]
        )


def test_a_file_allowed_to_vanish_already_gone_at_the_listing(make_files, tmp_path) -> None:
    src = make_files(FILES)
    dest = str(tmp_path / "dest")
    stats = LocalStorage(src).copy_tree(
        src, LocalStorage(dest), dest, ["metadata", "offsets/6"], may_vanish=["offsets/6"]
    )
    assert stats.vanished == ["offsets/6"] and stats.files == 1
    assert "1 gone before their copy" in str(stats)


@pytest.mark.parametrize("name", ["../escape", "a/../../b", "", "a//b", "/metadata"])
def test_listed_files_must_stay_inside(make_files, tmp_path: Path, name: str) -> None:
    src = make_files(FILES)
    with pytest.raises(StorageError, match="relative path"):
        LocalStorage(src).copy_tree(src, LocalStorage(str(tmp_path)), str(tmp_path / "x"), [name])


def test_nothing_to_copy(make_files, tmp_path: Path) -> None:
    src = make_files({})
    stats = LocalStorage(src).copy_tree(src, LocalStorage(str(tmp_path)), str(tmp_path / "e"))
    assert (stats.files, stats.bytes) == (0, 0)
    stats = LocalStorage(src).copy_tree(
        str(tmp_path / "missing"), LocalStorage(str(tmp_path)), str(tmp_path / "e"), files=[]
    )
    assert stats.files == 0


# -- S3 --------------------------------------------------------------------------------------
def test_s3_to_s3_copies_server_side_in_parallel(s3_server: S3Server, s3_root: Root) -> None:
    files = {f"part-{i:02d}": os.urandom(1000 + i) for i in range(16)} | FILES
    src = _upload(s3_root, files, "ckpt")
    other_bucket = s3_server.bucket()
    try:
        dest_storage = open_storage(other_bucket, s3_server.settings())
        dest = join(other_bucket, "savepoints", "sp-1")
        threads: set[str] = set()
        dest_storage.client.meta.events.register(  # type: ignore[attr-defined]
            "before-call.s3.CopyObject", lambda **_: threads.add(threading.current_thread().name)
        )
        calls = count_calls(dest_storage)  # the destination's client copies
        source_calls = count_calls(s3_root.storage)
        stats = s3_root.storage.copy_tree(src, dest_storage, dest)
        assert (stats.files, stats.server_side, stats.transferred) == (22, 22, 0)
        assert calls.get("CopyObject") == 22
        assert "GetObject" not in calls and "PutObject" not in calls
        assert source_calls == {"ListObjectsV2": 1}  # one listing for the sizes, no reads
        assert source_calls == {"ListObjectsV2": 1}  # one listing for the sizes, no reads
        assert len(threads) > 1
        assert _tree(dest_storage, dest) == files
    finally:
        s3_server.remove_bucket(other_bucket)


def test_s3_to_s3_on_another_endpoint_streams(s3_server: S3Server, s3_root: Root) -> None:
    src = _upload(s3_root, FILES, "ckpt")
    # the same server under another name: not "the same endpoint", so no server-side copy
    other = s3_server.settings(s3_endpoint=s3_server.endpoint.replace("127.0.0.1", "localhost"))
    dest_storage = open_storage(s3_root.root, other)
    dest = s3_root.path("copy")
    stats = s3_root.storage.copy_tree(src, dest_storage, dest)
    assert (stats.server_side, stats.transferred) == (0, 6)
    assert _tree(s3_root.storage, dest) == FILES


def test_local_to_s3(make_files, s3_root: Root) -> None:
    big = os.urandom(12 * MiB)
    src = make_files({**FILES, "state/big.bin": big})
    calls = count_calls(s3_root.storage)
    stats = LocalStorage(src).copy_tree(src, s3_root.storage, s3_root.path("up"))
    assert (stats.files, stats.transferred) == (7, 7)
    assert stats.bytes == sum(len(d) for d in FILES.values()) + len(big)
    assert calls.get("UploadPart") == 3  # the big file went in parts
    assert calls.get("PutObject") == 6
    assert _tree(s3_root.storage, s3_root.path("up")) == {**FILES, "state/big.bin": big}


def test_s3_to_local(s3_root: Root, tmp_path: Path) -> None:
    big = os.urandom(12 * MiB)
    src = _upload(s3_root, {**FILES, "state/big.bin": big}, "ckpt")
    dest = str(tmp_path / "restored")
    stats = s3_root.storage.copy_tree(src, LocalStorage(dest), dest)
    assert (stats.files, stats.transferred) == (7, 7)
    restored = _tree(LocalStorage(dest), dest)
    assert restored == {**FILES, "state/big.bin": big}
    leftovers = [n for _, _, names in os.walk(dest) for n in names if n.startswith(".")]
    assert leftovers == []
    assert hashlib.sha256(big).hexdigest() == LocalStorage(dest).checksum(
        join(dest, "state/big.bin")
    )


def test_s3_to_local_only_listed_files(s3_root: Root, tmp_path: Path) -> None:
    src = _upload(s3_root, FILES, "ckpt")
    dest = str(tmp_path / "few")
    stats = s3_root.storage.copy_tree(
        src, LocalStorage(dest), dest, files=["metadata", "state/0/0/8.delta"]
    )
    assert stats.files == 2
    assert sorted(_tree(LocalStorage(dest), dest)) == ["metadata", "state/0/0/8.delta"]


def test_a_failure_stops_the_copy_with_a_storage_error(s3_server: S3Server, make_files) -> None:
    src = make_files(FILES)
    missing = open_storage("s3://no-such-bucket-here", s3_server.settings())
    with pytest.raises(StorageError, match="does not exist"):
        LocalStorage(src).copy_tree(src, missing, "s3://no-such-bucket-here/x")


def test_copy_stats_read_well() -> None:
    stats = CopyStats(files=3, bytes=3 * MiB, linked=2, transferred=1, seconds=0.5)
    assert str(stats) == "3 files, 3.0 MiB in 0.50 s (2 hard-linked, 1 transferred)"
