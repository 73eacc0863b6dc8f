"""Fixtures for the storage tests: one storage root per backend (local disk, moto S3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.storage import Storage, StorageSettings, join, open_storage
from flinkish_cli.storage.settings import MiB
from tests.fixtures.s3server import S3Server

SMALL_PARTS = {"multipart_threshold": 5 * MiB, "multipart_chunksize": 5 * MiB}


@dataclass
class Root:
    """A storage and an empty directory on it."""

    kind: str
    storage: Storage
    root: str

    def path(self, *parts: str) -> str:
        return join(self.root, *parts)


def count_calls(storage: Storage) -> dict[str, int]:
    """Count the S3 operations ``storage`` sends from now on (a botocore event hook:
    it observes real requests, it changes nothing)."""
    counts: dict[str, int] = {}

    def seen(model: Any, **_: Any) -> None:
        counts[model.name] = counts.get(model.name, 0) + 1

    storage.client.meta.events.register("before-call.s3", seen)  # type: ignore[attr-defined]
    return counts


@pytest.fixture
def local_root(tmp_path: Path) -> Root:
    root = str(tmp_path / "root")
    return Root("local", open_storage(root, StorageSettings(**SMALL_PARTS)), root)


@pytest.fixture
def s3_root(s3_server: S3Server, s3_bucket: str) -> Root:
    root = join(s3_bucket, "root")
    return Root("s3", open_storage(root, s3_server.settings(**SMALL_PARTS)), root)


@pytest.fixture(params=["local", "s3"])
def any_root(request: pytest.FixtureRequest) -> Root:
    """Each test using it runs once on the local disk and once on S3."""
    return request.getfixturevalue(f"{request.param}_root")


@pytest.fixture
def make_files(tmp_path: Path) -> Callable[[dict[str, bytes]], str]:
    """Write ``{relative name: content}`` under a fresh local directory; its path."""
    counter = iter(range(1_000_000))

    def make(files: dict[str, bytes]) -> str:
        base = tmp_path / f"src{next(counter)}"
        for name, data in files.items():
            target = base / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        base.mkdir(parents=True, exist_ok=True)
        return str(base)

    return make
