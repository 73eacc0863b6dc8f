"""A full local disk (a small tmpfs): the error names the full device, nothing half-written
stays behind, and the next write works once there is room."""

from __future__ import annotations

from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import LocalStorage
from tests.storage.tmpfs import fill, small_tmpfs


def test_a_copy_to_a_full_disk_names_the_full_device(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big").write_bytes(b"x" * (1024 * 1024))
    with small_tmpfs(tmp_path / "small", "512k") as disk:
        storage = LocalStorage(str(tmp_path))
        with pytest.raises(StorageError, match="No space left on the device to write") as caught:
            storage.copy_tree(str(tmp_path / "src"), storage, str(disk / "copy"), files=["big"])
        assert str(disk / "copy" / "big") in str(caught.value)
        assert list((disk / "copy").iterdir()) == [], "no temporary file left"


def test_an_atomic_write_to_a_full_disk_leaves_the_old_content(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "256k") as disk:
        storage = LocalStorage(str(disk))
        storage.write_text(str(disk / "status.json"), "old")
        filler = fill(disk, 0)
        with pytest.raises(StorageError, match="No space left on the device to write"):
            storage.write_bytes(str(disk / "status.json"), b"n" * 64 * 1024)
        assert (disk / "status.json").read_text() == "old"
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "status.json"]
        filler.unlink()
        storage.write_text(str(disk / "status.json"), "new")
        assert (disk / "status.json").read_text() == "new"
