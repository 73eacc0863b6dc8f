"""What is particular to the local disk: path spellings, temporary files, modes, guards."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import LocalStorage, join, open_storage


def test_every_spelling_of_a_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "dir" / "f.txt"
    target.parent.mkdir()
    target.write_text("same file")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    spellings = [
        str(target),
        f"file://{target}",
        f"file:{target}",
        f"file://localhost{target}",
        "dir/f.txt",
        "./dir/../dir/f.txt",
        "~/dir/f.txt",
    ]
    for spelling in spellings:
        storage = open_storage(spelling)
        assert isinstance(storage, LocalStorage), spelling
        assert storage.read_text(spelling) == "same file", spelling
        assert storage.exists(spelling), spelling


def test_listed_paths_keep_the_callers_spelling(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("1")
    uri = f"file://{tmp_path}"
    storage = open_storage(uri)
    assert [i.path for i in storage.list(uri)] == [f"{uri}/a"]
    assert [i.path for i in storage.walk(uri)] == [f"{uri}/a"]
    assert storage.describe() == f"local directory {tmp_path}"


def test_a_file_uri_of_another_host_is_refused() -> None:
    with pytest.raises(StorageError, match="host 'otherhost'"):
        open_storage("file://otherhost/data").exists("file://otherhost/data")


def test_writes_leave_no_temporary_files_and_respect_the_umask(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    old = os.umask(0o022)
    try:
        storage.write_text(str(tmp_path / "w" / "status.json"), "{}")
        storage.create_exclusive(str(tmp_path / "w" / "lock"), b"")
    finally:
        os.umask(old)
    assert sorted(os.listdir(tmp_path / "w")) == ["lock", "status.json"]
    assert (tmp_path / "w" / "status.json").stat().st_mode & 0o777 == 0o644


def test_temporary_files_of_writers_in_progress_are_not_listed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("r")
    (tmp_path / ".real.0123456789ab.flinkish-tmp").write_text("partial")
    (tmp_path / ".hidden").write_text("h")  # an ordinary hidden file is listed
    storage = LocalStorage(str(tmp_path))
    assert [i.name for i in storage.list(str(tmp_path))] == [".hidden", "real"]
    assert sorted(i.name for i in storage.walk(str(tmp_path))) == [".hidden", "real"]


def test_create_exclusive_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    storage = LocalStorage(str(tmp_path))
    assert storage.create_exclusive(str(tmp_path / "l"), b"1") is True
    assert storage.create_exclusive(str(tmp_path / "l"), b"2") is False
    assert (tmp_path / "l").read_bytes() == b"1"
    assert os.listdir(tmp_path) == ["l"]


def test_guards(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(StorageError, match="whole file system"):
        storage.delete_tree("/")
    with pytest.raises(StorageError, match="delete_tree"):
        storage.delete(str(tmp_path / "d"))
    with pytest.raises(StorageError, match="not a directory"):
        storage.delete_tree(str(tmp_path / "f"))
    with pytest.raises(StorageError, match="is a file"):
        list(storage.walk(str(tmp_path / "f")))
    with pytest.raises(StorageError, match="is a file"):
        storage.list(str(tmp_path / "f"))
    with pytest.raises(StorageError):
        storage.read_bytes(str(tmp_path / "d"))
    with pytest.raises(StorageError):
        storage.write_text(str(tmp_path / "f" / "under-a-file"), "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied_is_a_storage_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(StorageError, match="Permission denied") as caught:
            LocalStorage(str(tmp_path)).write_text(join(str(locked), "x"), "x")
        assert caught.value.hint
    finally:
        locked.chmod(0o700)
