"""The Storage contract, checked on the local disk and on S3 (a real moto server) alike."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import FileInfo, StorageNotFoundError, join, relative_to
from flinkish_cli.storage.settings import MiB
from tests.storage.conftest import Root


def test_write_then_read_bytes_and_text(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("a", "b", "data.bin")
    s.write_bytes(path, b"\x00\x01binary")
    assert s.read_bytes(path) == b"\x00\x01binary"
    s.write_text(any_root.path("note.txt"), "héllo ✓")
    assert s.read_text(any_root.path("note.txt")) == "héllo ✓"
    assert s.exists(path) and not s.is_dir(path)
    assert s.exists(any_root.path("a")) and s.is_dir(any_root.path("a", "b"))
    assert s.size(path) == 8
    info = s.stat(path)
    assert (info.name, info.size, info.is_dir) == ("data.bin", 8, False)
    assert info.mtime is not None and info.mtime > 0


def test_overwrite_replaces_content(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("status.json")
    s.write_text(path, '{"state": "RUNNING", "padding": "' + "x" * 1000 + '"}')
    s.write_text(path, '{"state": "FINISHED"}')
    assert s.read_text(path) == '{"state": "FINISHED"}'


def test_missing_file_is_storage_not_found_and_file_not_found(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("nothing", "here.txt")
    assert not s.exists(path)
    assert not s.is_dir(path)
    for read in (s.read_bytes, s.read_text, s.checksum, s.stat, s.open_read):
        with pytest.raises(StorageNotFoundError) as caught:
            read(path)
        assert isinstance(caught.value, FileNotFoundError)
        assert isinstance(caught.value, StorageError)
        assert path in str(caught.value)


def test_writes_are_atomic_for_concurrent_readers(any_root: Root) -> None:
    """A reader running beside a writer sees one whole version, never a mix or a part."""
    s, path = any_root.storage, any_root.path("state", "big.bin")
    size = 1 * MiB
    versions = [bytes([65 + i]) * size for i in range(4)]
    s.write_bytes(path, versions[0])
    stop = threading.Event()
    seen: list[bytes] = []
    problems: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(s.read_bytes(path))
            except BaseException as error:  # a missing file is as wrong as a torn one
                problems.append(error)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for round_ in range(24):
            s.write_bytes(path, versions[round_ % len(versions)])
    finally:
        stop.set()
        reader.join()
    assert not problems
    assert seen, "the reader never got to read"
    assert all(data in versions for data in seen)


def test_failed_write_keeps_the_old_content(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("keep.txt")
    s.write_bytes(path, b"old content")

    class Broken:
        def __init__(self) -> None:
            self.calls = 0

        def read(self, n: int = -1) -> bytes:
            self.calls += 1
            if self.calls > 2:
                raise RuntimeError("source broke mid-way")
            return b"new partial data " * 1000

    with pytest.raises(RuntimeError, match="source broke"):
        s.write_stream(path, Broken())  # type: ignore[arg-type]
    assert s.read_bytes(path) == b"old content"
    assert [i.name for i in s.list(any_root.root)] == ["keep.txt"]


def test_write_stream_of_a_big_stream(any_root: Root, tmp_path: Path) -> None:
    data = os.urandom(11 * MiB)
    source = tmp_path / "big"
    source.write_bytes(data)
    s, path = any_root.storage, any_root.path("streamed.bin")
    with open(source, "rb") as stream:
        s.write_stream(path, stream)
    assert s.checksum(path) == hashlib.sha256(data).hexdigest()


def test_create_exclusive(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("locks", "leader")
    assert s.create_exclusive(path, b"first") is True
    assert s.create_exclusive(path, b"second") is False
    assert s.read_bytes(path) == b"first"


def test_create_exclusive_has_one_winner_among_racers(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("race")
    barrier = threading.Barrier(8)
    results: dict[int, bool] = {}

    def race(i: int) -> None:
        barrier.wait()
        results[i] = s.create_exclusive(path, f"writer {i}".encode())

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert s.read_text(path) == f"writer {winners[0]}"


def test_list_gives_immediate_children(any_root: Root) -> None:
    s = any_root.storage
    for name in ("a.txt", "b.bin", "sub/c.txt", "sub/deeper/d.txt", "other/e.txt"):
        s.write_bytes(any_root.path(name), name.encode())
    listed = s.list(any_root.root)
    assert [(i.name, i.is_dir) for i in listed] == [
        ("a.txt", False),
        ("b.bin", False),
        ("other", True),
        ("sub", True),
    ]
    files = {i.name: i for i in listed}
    etag = hashlib.md5(b"a.txt").hexdigest() if any_root.kind == "s3" else None
    assert files["a.txt"] == FileInfo(
        any_root.path("a.txt"), "a.txt", 5, False, files["a.txt"].mtime, etag
    )  # S3's listing carries each object's ETag (a single PUT's is its MD5), unquoted
    assert files["sub"].path == any_root.path("sub") and files["sub"].size == 0
    assert [i.name for i in s.list(any_root.path("sub"))] == ["c.txt", "deeper"]
    # trailing slashes do not matter, paths keep the caller's spelling
    assert [i.path for i in s.list(any_root.root + "/")] == [i.path for i in listed]


def test_list_and_walk_of_a_missing_directory_are_empty(any_root: Root) -> None:
    assert any_root.storage.list(any_root.path("missing")) == []
    assert list(any_root.storage.walk(any_root.path("missing"))) == []


def test_walk_gives_every_file_at_any_depth(any_root: Root) -> None:
    s = any_root.storage
    names = ["a.txt", "sub/c.txt", "sub/deeper/d.txt", "sub/deeper/e/f/g.bin", "z/last"]
    for name in names:
        s.write_bytes(any_root.path(name), b"x" * len(name))
    walked = list(s.walk(any_root.root))
    assert sorted(relative_to(any_root.root, i.path) for i in walked) == sorted(names)
    assert all(not i.is_dir and i.size == len(relative_to(any_root.root, i.path)) for i in walked)
    assert {i.name for i in walked} == {n.rpartition("/")[2] for n in names}
    assert sorted(i.name for i in s.walk(any_root.path("sub", "deeper"))) == ["d.txt", "g.bin"]


def test_delete_a_file(any_root: Root) -> None:
    s, path = any_root.storage, any_root.path("x", "gone.txt")
    s.write_bytes(path, b"1")
    s.delete(path)
    assert not s.exists(path)
    s.delete(path)  # missing is fine


def test_delete_tree(any_root: Root) -> None:
    s = any_root.storage
    for name in ("job/a", "job/sub/b", "job/sub/deep/c", "job-other/keep", "jobx"):
        s.write_bytes(any_root.path(name), b"1")
    s.delete_tree(any_root.path("job"))
    assert not s.exists(any_root.path("job"))
    assert list(s.walk(any_root.path("job"))) == []
    # a sibling whose name starts the same is untouched
    assert s.read_bytes(any_root.path("job-other", "keep")) == b"1"
    assert s.read_bytes(any_root.path("jobx")) == b"1"
    s.delete_tree(any_root.path("job"))  # missing is fine


def test_checksum_is_sha256(any_root: Root) -> None:
    data = os.urandom(3 * MiB + 17)
    path = any_root.path("sum.bin")
    any_root.storage.write_bytes(path, data)
    assert any_root.storage.checksum(path) == hashlib.sha256(data).hexdigest()
    empty = any_root.path("empty")
    any_root.storage.write_bytes(empty, b"")
    assert any_root.storage.checksum(empty) == hashlib.sha256(b"").hexdigest()


def test_open_read_streams(any_root: Root) -> None:
    data = os.urandom(2 * MiB + 5)
    path = any_root.path("stream.bin")
    any_root.storage.write_bytes(path, data)
    with any_root.storage.open_read(path) as stream:
        first = stream.read(10)
        rest = stream.read()
    assert first + rest == data


def test_upload_and_download_of_a_file_bigger_than_the_multipart_threshold(
    any_root: Root, tmp_path: Path
) -> None:
    data = os.urandom(12 * MiB + 123)
    source = tmp_path / "upload.bin"
    source.write_bytes(data)
    s, remote = any_root.storage, any_root.path("transfers", "big.bin")
    s.upload_file(str(source), remote)
    assert s.size(remote) == len(data)
    target = tmp_path / "down" / "big.bin"
    s.download_file(remote, str(target))
    assert target.read_bytes() == data
    assert sorted(os.listdir(target.parent)) == ["big.bin"]  # no temporary file left


def test_upload_of_a_missing_local_file(any_root: Root, tmp_path: Path) -> None:
    with pytest.raises(StorageNotFoundError):
        any_root.storage.upload_file(str(tmp_path / "absent"), any_root.path("x"))


def test_mkdirs_then_write_inside(any_root: Root) -> None:
    s, directory = any_root.storage, any_root.path("made", "deep")
    s.mkdirs(directory)
    s.write_text(join(directory, "f"), "ok")
    assert s.read_text(join(directory, "f")) == "ok"


def test_describe_names_the_root(any_root: Root) -> None:
    text = any_root.storage.describe()
    shown = any_root.root if any_root.kind == "s3" else os.path.abspath(any_root.root)
    assert shown in text
    assert text in repr(any_root.storage)
