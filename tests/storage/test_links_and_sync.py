"""Hostile trees on the local disk: links and special files are found, never copied through,
never followed by a delete; ``sync_tree`` makes a whole tree durable."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import LocalStorage, open_storage
from tests.storage.conftest import Root, count_calls


def _tree(base: Path) -> Path:
    (base / "a" / "b").mkdir(parents=True)
    (base / "top").write_text("top")
    (base / "a" / "b" / "deep").write_text("deep")
    return base


def test_special_entries_finds_links_at_any_depth_without_following_them(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    tree = _tree(tmp_path / "tree")
    (tree / "a" / "b" / "file-link").symlink_to(outside / "secret")
    (tree / "a" / "dir-link").symlink_to(outside)
    (tree / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tree / "a" / "pipe")
    found = LocalStorage(str(tree)).special_entries(str(tree))
    assert found == [
        ("a/b/file-link", "symbolic link"),
        ("a/dir-link", "symbolic link"),
        ("a/pipe", "named pipe"),
        ("dangling", "symbolic link"),
    ]
    limited = LocalStorage(str(tree)).special_entries(str(tree), limit=2)
    assert len(limited) == 2 and set(limited) <= set(found)


def test_special_entries_of_a_plain_tree_a_linked_root_or_a_missing_one(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    storage = LocalStorage(str(tmp_path))
    assert storage.special_entries(str(tree)) == []
    (tmp_path / "root-link").symlink_to(tree)  # the root itself may be a link
    assert storage.special_entries(str(tmp_path / "root-link")) == []
    assert storage.special_entries(str(tmp_path / "missing")) == []
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tree / "a" / "sock"))
        assert storage.special_entries(str(tree)) == [("a/sock", "socket")]


def test_s3_has_no_special_entries(s3_root: Root) -> None:
    s3_root.storage.write_text(s3_root.path("t", "f"), "x")
    assert s3_root.storage.special_entries(s3_root.path("t")) == []


@pytest.mark.parametrize("link", [True, False], ids=["hard-links", "copies"])
def test_copy_tree_never_copies_through_a_link(tmp_path: Path, link: bool) -> None:
    outside = tmp_path / "secret"
    outside.write_text("not yours")
    tree = _tree(tmp_path / "tree")
    (tree / "a" / "leak").symlink_to(outside)
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(StorageError, match=r"a/leak is a symbolic link, not a regular file"):
        storage.copy_tree(str(tree), storage, str(tmp_path / "copy"), files=["a/leak"], link=link)
    copied = tmp_path / "copy" / "a" / "leak"
    assert not copied.exists() and not copied.is_symlink()


def test_a_local_link_is_never_uploaded(tmp_path: Path, s3_root: Root) -> None:
    outside = tmp_path / "secret"
    outside.write_text("not yours")
    tree = _tree(tmp_path / "tree")
    (tree / "leak").symlink_to(outside)
    with pytest.raises(StorageError, match="leak is a symbolic link"):
        LocalStorage(str(tmp_path)).copy_tree(
            str(tree), s3_root.storage, s3_root.path("up"), files=["top", "leak"]
        )
    assert not s3_root.storage.exists(s3_root.path("up", "leak"))


def test_a_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    os.mkfifo(tree / "pipe")
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(StorageError, match="pipe is a named pipe"):
        storage.copy_tree(str(tree), storage, str(tmp_path / "copy"), files=["pipe"], link=False)


def test_delete_tree_removes_links_and_never_what_they_point_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "keep").write_text("keep")
    (outside / "sub" / "keep-too").write_text("keep")
    tree = _tree(tmp_path / "tree")
    (tree / "a" / "dir-link").symlink_to(outside)
    (tree / "a" / "b" / "file-link").symlink_to(outside / "keep")
    LocalStorage(str(tmp_path)).delete_tree(str(tree))
    assert not tree.exists()
    assert (outside / "keep").read_text() == "keep"
    assert (outside / "sub" / "keep-too").read_text() == "keep"


def test_delete_tree_refuses_a_link_given_as_the_tree(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tmp_path / "link").symlink_to(tree)
    with pytest.raises(StorageError, match="not a directory"):
        LocalStorage(str(tmp_path)).delete_tree(str(tmp_path / "link"))
    assert (tree / "top").exists()


def test_sync_tree_fsyncs_every_file_and_directory_and_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "tree")
    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    open_storage(str(tree)).sync_tree(str(tree))
    expected = {
        str(tree / "top"),
        str(tree / "a" / "b" / "deep"),
        str(tree),
        str(tree / "a"),
        str(tree / "a" / "b"),
        str(tmp_path),
    }
    assert set(synced) == expected
    # each directory after everything below it
    assert synced.index(str(tree / "a" / "b")) < synced.index(str(tree / "a"))
    assert synced.index(str(tree / "a")) < synced.index(str(tree))


def test_sync_tree_skips_links_and_nothing_happens_on_s3(tmp_path: Path, s3_root: Root) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "link").symlink_to(tmp_path / "nowhere")
    open_storage(str(tree)).sync_tree(str(tree))  # no error for a dangling link
    assert (tree / "link").is_symlink() and not (tree / "link").exists()
    calls = count_calls(s3_root.storage)
    s3_root.storage.sync_tree(s3_root.path("anything"))
    assert calls == {}  # S3 has nothing to fsync: not one request is sent
