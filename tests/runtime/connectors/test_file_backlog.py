"""A file source's backlog, measured from its checkpoint's source log as Spark writes it and
the source directory's files (real files, no Spark): the files newer than the newest the
batch took, in rows at the batch's rows per file; unknown where it cannot be told."""

from __future__ import annotations

import json
import os
from pathlib import Path

from flinkish_cli.runtime.connectors.file_backlog import FileBacklog
from flinkish_cli.storage import open_storage

T0 = 1_795_000_000.0


def _input(directory: Path, name: str, at: float) -> Path:
    path = directory / name
    path.write_text('{"key": "a"}\n')
    os.utime(path, (at, at))
    return path


def _source_log(checkpoint: Path, batch: int, files: list[Path], compact: bool = False) -> None:
    log_dir = checkpoint / "sources" / "0"
    log_dir.mkdir(parents=True, exist_ok=True)
    entries = [
        json.dumps({"path": f"file://{f}", "timestamp": int(f.stat().st_mtime * 1000),
                    "batchId": batch})
        for f in files
    ]  # fmt: skip
    name = f"{batch}.compact" if compact else str(batch)
    (log_dir / name).write_text("\n".join(["v1", *entries]) + "\n")


def _progress(directory: Path, batch: int, rows: int) -> dict:
    return {
        "sources": [
            {"description": f"FileStreamSource[file:{directory}]",
             "endOffset": {"logOffset": batch}, "numInputRows": rows}
        ]
    }  # fmt: skip


def _backlog() -> FileBacklog:
    return FileBacklog(lambda path: open_storage(path, None))


def test_the_files_after_the_newest_taken_are_the_backlog_in_rows(tmp_path: Path) -> None:
    inputs, checkpoint = tmp_path / "in", tmp_path / "cp"
    inputs.mkdir()
    taken = [_input(inputs, f"taken-{i}.json", T0 + i) for i in range(2)]
    for i in range(3):
        _input(inputs, f"waiting-{i}.json", T0 + 10 + i)
    _input(inputs, ".hidden.crc", T0 + 20)  # not input
    _source_log(checkpoint, 3, taken)
    assert _backlog().of(str(checkpoint), _progress(inputs, 3, 200)) == 3 * 100.0


def test_a_compacted_entry_is_read_and_a_caught_up_source_has_none(tmp_path: Path) -> None:
    inputs, checkpoint = tmp_path / "in", tmp_path / "cp"
    inputs.mkdir()
    taken = [_input(inputs, f"taken-{i}.json", T0 + i) for i in range(2)]
    _source_log(checkpoint, 9, taken, compact=True)
    assert _backlog().of(str(checkpoint), _progress(inputs, 9, 50)) == 0.0


def test_unknown_where_it_cannot_be_told(tmp_path: Path) -> None:
    inputs, checkpoint = tmp_path / "in", tmp_path / "cp"
    inputs.mkdir()
    backlog = _backlog()
    assert backlog.of(str(checkpoint), _progress(inputs, 4, 10)) is None, "no log entry"
    glob = {"sources": [{"description": f"FileStreamSource[file:{inputs}/*.json]",
                         "endOffset": {"logOffset": 1}, "numInputRows": 1}]}  # fmt: skip
    assert backlog.of(str(checkpoint), glob) is None
    kafka = {"sources": [{"description": "KafkaV2[Subscribe[orders]]"}]}
    assert backlog.of(str(checkpoint), kafka) is None
