"""The driver's measurement of its queries' checkpoints: recorded into the status (and the
status marked changed), said in the log once a growing part passes 1 MiB and each time it
doubles, and a storage that fails keeps the previous figures."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry.status import JobStatus, QueryStatus
from flinkish_cli.runtime.queries import footprints
from flinkish_cli.storage import open_storage

JOB = "ef" * 16


class Keeper:
    def __init__(self, status: JobStatus) -> None:
        self.status = status
        self.lock = threading.RLock()
        self.changes = 0

    def changed(self) -> None:
        self.changes += 1


class Broken:
    def exists(self, path: str) -> bool:
        raise OSError("the bucket is gone")


def _watch(tmp_path: Path, targets: dict[str, Any]) -> tuple[footprints.FootprintWatch, Keeper]:
    query = QueryStatus(name="raw", checkpoint=str(tmp_path / "cp"))
    keeper = Keeper(JobStatus(job_id=JOB, name="job", queries={"raw": query}))
    return footprints.FootprintWatch(keeper, lambda: targets, 60.0, JOB), keeper  # type: ignore[arg-type]


def test_each_measurement_lands_in_the_status_and_growth_is_told(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = open_storage(str(tmp_path))
    log = tmp_path / "cp" / "sources" / "0" / "9.compact"
    log.parent.mkdir(parents=True)
    watch, keeper = _watch(tmp_path, {"raw": (storage, str(tmp_path / "cp"), None)})
    caplog.set_level(logging.WARNING, "flinkish.runtime")
    for size in (1000, footprints.WARN_FROM, footprints.WARN_FROM + 10, 2 * footprints.WARN_FROM):
        log.write_bytes(b"x" * size)
        watch.measure_all()
        assert keeper.status.queries["raw"].footprint.parts["sources"].bytes == size
    assert keeper.changes == 4
    told = [r.getMessage() for r in caplog.records]
    assert len(told) == 2, told  # at 1 MiB, then at twice that
    assert "Query 'raw': sources takes 1.0 MiB" in told[0] and f"flinkish info {JOB}" in told[0]
    assert "flinkish.file-source.log.cleanup-delay" in told[0]


def test_a_failing_storage_keeps_the_figures_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = open_storage(str(tmp_path))
    (tmp_path / "cp").mkdir()
    (tmp_path / "cp" / "metadata").write_text("{}")
    targets: dict[str, Any] = {"raw": (storage, str(tmp_path / "cp"), None)}
    watch, keeper = _watch(tmp_path, targets)
    watch.measure_all()
    before = keeper.status.queries["raw"].footprint
    targets["raw"] = (Broken(), str(tmp_path / "cp"), None)
    caplog.set_level(logging.WARNING, "flinkish.runtime")
    watch.measure_all()
    watch.measure_all()
    assert keeper.status.queries["raw"].footprint is before
    assert len(caplog.records) == 1 and "the bucket is gone" in caplog.records[0].getMessage()


def test_a_query_restarted_with_another_checkpoint_is_not_given_old_figures(
    tmp_path: Path,
) -> None:
    storage = open_storage(str(tmp_path))
    (tmp_path / "old").mkdir()
    watch, keeper = _watch(tmp_path, {"raw": (storage, str(tmp_path / "old"), None)})
    watch.measure_all()
    assert keeper.status.queries["raw"].footprint is None and keeper.changes == 0
