"""Results of operations that belong to no job (a disposal through the REST API): read back
by trigger id, a damaged one is no result, and they expire, so the directory stays small."""

from __future__ import annotations

import os
import time
from pathlib import Path

from flinkish_cli.registry import operations
from flinkish_cli.registry.control import new_request_id
from flinkish_cli.registry.store import JobRegistry


def test_results_are_read_back_and_expire(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    old, failed = new_request_id(), new_request_id()
    operations.record(registry, old, True, None)
    operations.record(registry, failed, False, "not a savepoint")
    assert operations.result(registry, old) == (True, None, None)
    assert operations.result(registry, failed) == (False, "not a savepoint", None)
    assert operations.result(registry, new_request_id()) is None
    directory = tmp_path / "cp" / "_flinkish" / "operations"
    long_ago = time.time() - operations.RESULT_TTL - 60
    os.utime(directory / f"{old}.json", (long_ago, long_ago))
    (directory / "notes.txt").write_text("not a result")
    os.utime(directory / "notes.txt", (long_ago, long_ago))
    newest = new_request_id()
    operations.record(registry, newest, True, None)  # each new result expires the old ones
    assert operations.result(registry, old) is None
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [f"{failed}.json", f"{newest}.json", "notes.txt"]
    )
