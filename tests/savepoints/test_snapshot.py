"""Savepoint mechanics without Spark: which files a batch needs, the manifest, clean failure."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints import layout
from flinkish_cli.savepoints.create import last_committed_batch, snapshot_query, take_savepoint
from flinkish_cli.savepoints.dispose import dispose
from flinkish_cli.savepoints.manifest import Manifest, is_savepoint_name
from flinkish_cli.savepoints.restore import read_savepoint
from flinkish_cli.storage import open_storage
from tests.savepoints.checkpoints import OFFSETS, fake_checkpoint


def test_snapshot_takes_committed_state_and_the_planned_batch(tmp_path: Path) -> None:
    query = fake_checkpoint(tmp_path / "q", committed=1)
    # a batch under way writes its state through temporary files (renamed, or gone, at any
    # moment): never part of a savepoint, so never a reason for one to fail
    writing = query / "state" / "0" / "0" / ".2.delta.6f1c.TID5.tmp"
    writing.write_bytes(b"partial")
    (writing.parent / f".{writing.name}.crc").write_bytes(b"crc")
    snapshot = snapshot_query(open_storage(str(tmp_path)), str(query), "q")
    files = set(snapshot.files)
    assert {"commits/0", "commits/1"} <= files and "commits/2" not in files
    assert {"offsets/0", "offsets/1", "offsets/2", "sources/0/2"} <= files
    assert "offsets/3" not in files
    assert "state/0/0/2.zip" in files and "state/0/0/3.zip" not in files  # versions <= C+1
    assert {"state/0/0/SSTs/0000.sst", "state/0/_metadata/metadata", "metadata"} <= files
    assert "offsets/.3.tmp" not in files
    assert not [f for f in files if ".tmp" in f], files
    manifest = snapshot.manifest
    assert manifest.last_committed_batch == 1
    assert manifest.source_offsets == [{"logOffset": 1}]
    assert manifest.watermark_ms == 5
    assert manifest.shuffle_partitions == 2
    assert [(o.operator_id, o.partitions, o.stores) for o in manifest.operators] == [(0, 2, [])]


def test_a_file_source_log_is_saved_from_its_newest_compaction_on() -> None:
    names = ["2.compact", ".2.compact.crc", "3", "5.compact", ".5.compact.crc", "4", "6", ".6.crc"]
    names += ["7", "x"]  # a log that ran ahead of the batches, and a stranger: both kept
    assert layout.source_log_needed(names) == {
        "5.compact",
        ".5.compact.crc",
        "6",
        ".6.crc",
        "7",
        "x",
    }
    # no compaction yet (or a source that never compacts, Kafka's and rate's): all of it
    assert layout.source_log_needed(["0", ".0.crc", "1"]) == {"0", ".0.crc", "1"}


def _before_its_first_commit(query: Path, planned: bool) -> Path:
    """A query's checkpoint as Spark leaves it before its first commit: its id, and when it
    has planned batch 0, that batch's offsets, its file source's log entry, and what the
    batch under way has written of its state."""
    files = {"metadata": '{"id":"q-0"}'}
    if planned:
        files |= {
            "offsets/0": OFFSETS % 0,
            "sources/0/0": 'v1\n{"path":"file:/in/part-0.json","timestamp":1,"batchId":0}',
            "state/0/0/1.delta": "state of batch 0, not committed",
            "state/0/0/_metadata/schema": "schema",
            "state/0/_metadata/metadata": "operator",
        }
    for name, text in files.items():
        (query / name).parent.mkdir(parents=True, exist_ok=True)
        (query / name).write_text(text)
    return query


def test_a_query_without_a_committed_batch_is_saved_where_it_starts(tmp_path: Path) -> None:
    """Flink saves a job that has not completed a checkpoint; a query that has committed no
    micro-batch is saved at batch -1: its id, its planned first batch and its source's log
    (where it starts), none of the state the batch under way is writing."""
    storage = open_storage(str(tmp_path))
    planned = snapshot_query(
        storage, str(_before_its_first_commit(tmp_path / "q", True)), "q"
    ).manifest
    files = snapshot_query(storage, str(tmp_path / "q"), "q").files
    assert files == ["metadata", "offsets/0", "sources/0/0"]
    assert planned.last_committed_batch == -1 and planned.query_id == "q-0"
    assert planned.operators == [] and not planned.stateful, "no committed state"
    assert planned.source_offsets == [{"logOffset": 0}] and planned.shuffle_partitions == 2
    started = snapshot_query(storage, str(_before_its_first_commit(tmp_path / "r", False)), "r")
    assert started.files == ["metadata"]
    assert started.manifest.last_committed_batch == -1 and started.manifest.source_offsets == []
    # a running query's checkpoint always has its metadata (Spark writes it as the query
    # starts): a savepoint of one without it, and without a commit, would lose what it read
    with pytest.raises(SavepointError, match=r"'gone' .* is damaged: it has neither the query"):
        take_savepoint(
            storage, {"gone": str(tmp_path / "gone")}, storage, str(tmp_path / "sp"),
            "ab" * 16, "job", "4.3.0",
        )  # fmt: skip
    assert not (tmp_path / "sp").exists(), "nothing was written"


def test_a_savepoint_of_a_job_whose_queries_are_before_and_after_their_first_batch(
    tmp_path: Path,
) -> None:
    """One query with committed batches, one with none, one not even planned: one savepoint,
    each at its own batch; restored, the one before its first batch gets its id and its
    planned batch (replayed exactly, as Spark restarts it in place) and no state, and the
    session's partitions replace the saved ones (it starts as a fresh query would)."""
    from flinkish_cli.savepoints.inspect import describe
    from flinkish_cli.savepoints.restore import open_source, restore_query, set_stateless_partitions

    job = tmp_path / "job"
    queries = {
        "busy": fake_checkpoint(job / "busy", committed=3),
        "waiting": _before_its_first_commit(job / "waiting", planned=True),
        "idle": _before_its_first_commit(job / "idle", planned=False),
    }
    storage = open_storage(str(tmp_path))
    path = take_savepoint(
        storage,
        {name: str(directory) for name, directory in queries.items()},
        storage,
        str(tmp_path / "sp"),
        "ab" * 16,
        "job",
        "4.3.0",
    )
    source = open_source(storage, path)  # the manifest, every file checked
    batches = {q["name"]: q["last-committed-batch"] for q in describe(source.manifest)["queries"]}
    assert batches == {"busy": 3, "waiting": -1, "idle": -1}
    assert {f.path for f in source.manifest.files_of("waiting")} == {
        "waiting/metadata",
        "waiting/offsets/0",
        "waiting/sources/0/0",
    }
    for name in ("waiting", "idle"):
        assert restore_query(storage, source, name, storage, str(tmp_path / "run" / name))
    restored = tmp_path / "run" / "waiting"
    assert (restored / "metadata").read_text() == '{"id":"q-0"}', "the query keeps its id"
    assert (restored / "offsets" / "0").read_text() == OFFSETS % 0
    assert not (restored / "state").exists() and not (restored / "commits").exists()
    assert set_stateless_partitions(storage, str(restored), 4)
    assert layout.parse_offsets(0, (restored / "offsets" / "0").read_text()).shuffle_partitions == 4
    assert [p.name for p in (tmp_path / "run" / "idle").iterdir()] == ["metadata"]


def test_the_last_committed_batch_is_the_newest_commit_log_entry(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    query = fake_checkpoint(tmp_path / "q", committed=1)
    (query / "commits" / ".2.tmp").write_text("v1\n{}")  # a commit still being written
    (query / "commits" / ".1.crc").write_bytes(b"crc")
    assert last_committed_batch(storage, str(query)) == 1
    assert last_committed_batch(storage, str(tmp_path / "missing")) is None
    empty = tmp_path / "empty"
    (empty / "commits").mkdir(parents=True)
    assert last_committed_batch(storage, str(empty)) is None


def test_savepoint_is_hard_linked_verified_and_disposable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    query = fake_checkpoint(tmp_path / "job" / "q", committed=2, planned=False)
    storage = open_storage(str(tmp_path))
    with caplog.at_level(logging.INFO, logger="flinkish"):
        path = take_savepoint(
            storage, {"q": str(query)}, storage, str(tmp_path / "sp"), "ab" * 16, "job", "4.3.0"
        )
    assert is_savepoint_name(Path(path).name)
    # the job's log names the savepoint and says how its files travelled
    copied = [r.getMessage() for r in caplog.records if ": query 'q': " in r.getMessage()]
    assert len(copied) == 1 and copied[0].startswith(f"Savepoint {path}: query 'q': "), copied
    assert "hard-linked)" in copied[0]
    linked = Path(path) / "q" / "state" / "0" / "0" / "1.zip"
    assert linked.stat().st_ino == (query / "state" / "0" / "0" / "1.zip").stat().st_ino
    manifest = read_savepoint(storage, path)
    assert manifest.query("q").last_committed_batch == 2
    assert {f.path for f in manifest.files} >= {"q/commits/2", "q/state/0/1/3.zip"}
    assert dispose(storage, path).job_id == "ab" * 16
    assert not Path(path).exists() and query.exists()


def _savepoint_of_running(query: Path, spark: Callable[[], None]) -> str:
    """A savepoint of ``query`` into ``../../sp``, ``spark`` acting on the checkpoint (as
    the running query would) between the choice of its files and their copy."""
    root = query.parents[1]
    storage = open_storage(str(root))
    return take_savepoint(
        storage, {"q": str(query)}, storage, str(root / "sp"), "ab" * 16, "job", "4.3.0",
        before_copy=spark,
    )  # fmt: skip


def test_old_log_entries_spark_purges_during_the_copy_are_left_out(tmp_path: Path) -> None:
    """Spark deletes a running query's old log entries (minBatchesToRetain) at any moment: one
    gone between the savepoint's listing and its copy is not needed to resume, so the
    savepoint goes on without it, and without its checksum file."""
    query = fake_checkpoint(tmp_path / "job" / "q", committed=12)
    storage = open_storage(str(tmp_path))

    def purge() -> None:  # what Spark's purge of batches 0 and 1 does
        for name in ("offsets/0", "offsets/.0.crc", "commits/0", "offsets/1", "commits/1"):
            (query / name).unlink()

    path = _savepoint_of_running(query, purge)
    saved = {f.path for f in read_savepoint(storage, path).files}
    assert {"q/commits/12", "q/offsets/12", "q/offsets/13", "q/offsets/2"} <= saved
    assert not {"q/offsets/0", "q/offsets/.0.crc", "q/offsets/1", "q/offsets/.1.crc"} & saved
    assert not (Path(path) / "q" / "offsets" / ".1.crc").exists()  # no checksum without file
    assert read_savepoint(storage, path).query("q").last_committed_batch == 12


def test_a_query_that_moved_on_during_the_copy_is_saved_at_its_new_batch(
    tmp_path: Path,
) -> None:
    """A file the resume needs gone under the copy means the query ran on past Spark's
    retention: its files are chosen again at its newest committed batch."""
    query = fake_checkpoint(tmp_path / "job" / "q", committed=3)
    storage = open_storage(str(tmp_path))

    def run_on() -> None:  # batch 4 commits and the state of version 4 is cleaned up
        (query / "commits" / "4").write_text('v1\n{"nextBatchWatermarkMs":0}')
        for partition in (0, 1):
            (query / "state" / "0" / str(partition) / "6.zip").write_text("state 6")
            for version in (1, 2):
                for name in (f"{version}.zip", f".{version}.zip.crc"):
                    (query / "state" / "0" / str(partition) / name).unlink()

    path = _savepoint_of_running(query, run_on)
    manifest = read_savepoint(storage, path)
    assert manifest.query("q").last_committed_batch == 4
    saved = {f.path for f in manifest.files}
    assert {"q/commits/4", "q/state/0/1/5.zip"} <= saved
    assert "q/state/0/1/1.zip" not in saved


def test_failed_copy_leaves_no_savepoint_behind(tmp_path: Path, monkeypatch) -> None:
    query = fake_checkpoint(tmp_path / "job" / "q", committed=0)
    storage = open_storage(str(tmp_path))

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(type(storage), "checksum", broken)
    with pytest.raises(OSError, match="disk full"):
        take_savepoint(
            storage, {"q": str(query)}, storage, str(tmp_path / "sp"), "c" * 32, "j", "4"
        )
    assert not (tmp_path / "sp").exists() or not any((tmp_path / "sp").iterdir())


def test_manifest_errors_are_savepoint_errors(tmp_path: Path) -> None:
    with pytest.raises(SavepointError, match="format version 99"):
        Manifest.from_json(json.dumps({"format_version": 99}), "x/_metadata")
    with pytest.raises(SavepointError, match="not a flinkish savepoint manifest"):
        Manifest.from_json("{not json", "x/_metadata")


def test_batch_file_selection() -> None:
    names = ["0", "1", "2", ".1.crc", ".2.crc", "3.compact", "tmp"]
    assert layout.batch_files(names, 1) == ["0", "1", ".1.crc"]
    assert layout.state_file_needed("state/0/1/5.delta", 4)
    assert not layout.state_file_needed("state/0/1/6.delta", 4)
    assert layout.state_file_needed("state/0/1/7_0a1b.zip", 6)
    assert layout.state_file_needed("state/0/1/SSTs/abc.sst", 0)
    assert layout.is_temporary("..5.delta.c617-abbe.TID5.tmp.crc")
    assert layout.is_temporary("5.delta.tmp") and not layout.is_temporary(".5.delta.crc")


def test_a_restore_leaves_out_the_operators_n_skips(tmp_path: Path) -> None:
    from flinkish_cli.savepoints.restore import open_source, restore_query

    query = fake_checkpoint(tmp_path / "job" / "q", committed=1)
    for name in ("state/1/0/1.zip", "state/1/_metadata/metadata"):
        (query / name).parent.mkdir(parents=True, exist_ok=True)
        (query / name).write_text("operator 1")
    storage = open_storage(str(tmp_path))
    path = take_savepoint(
        storage, {"q": str(query)}, storage, str(tmp_path / "sp"), "a" * 32, "j", "4"
    )
    source = open_source(storage, path)
    for leave_out, target in (((), "all"), ((1,), "without-1")):
        restore_query(storage, source, "q", storage, str(tmp_path / target), leave_out)
    assert (tmp_path / "all" / "state" / "1" / "0" / "1.zip").is_file()
    assert not (tmp_path / "without-1" / "state" / "1").exists()
    assert (tmp_path / "without-1" / "state" / "0" / "0" / "1.zip").is_file()
    assert (tmp_path / "without-1" / "commits" / "1").is_file()


def test_a_stateless_querys_partitions_are_rewritten_in_a_new_file(tmp_path: Path) -> None:
    """What an in-place rescale does to a query without state: its latest offset log entry
    says the new partitions, the rest of it unchanged; a savepoint sharing the old file
    through a hard link keeps its own; the checksum beside it goes."""
    from flinkish_cli.savepoints.layout import parse_offsets
    from flinkish_cli.savepoints.restore import set_stateless_partitions
    from flinkish_cli.storage import open_storage

    offsets = tmp_path / "cp" / "offsets"
    offsets.mkdir(parents=True)
    metadata = (
        '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{"spark.sql.shuffle.partitions":"2"}}'
    )
    text = f'v1\n{metadata}\n{{"logOffset":4}}'
    (offsets / "3").write_text("v1\n" + metadata + '\n{"logOffset":3}')
    (offsets / "4").write_text(text)
    (offsets / ".4.crc").write_bytes(b"crc")
    saved = tmp_path / "savepoint-4"
    saved.hardlink_to(offsets / "4")
    storage = open_storage(str(tmp_path), None)
    assert set_stateless_partitions(storage, str(tmp_path / "cp"), 5)
    entry = parse_offsets(4, (offsets / "4").read_text())
    assert entry.shuffle_partitions == 5 and entry.sources == [{"logOffset": 4}]
    assert parse_offsets(3, (offsets / "3").read_text()).shuffle_partitions == 2
    assert saved.read_text() == text and not (offsets / ".4.crc").exists()
    assert not set_stateless_partitions(storage, str(tmp_path / "cp"), 5), "already so"
    assert not set_stateless_partitions(storage, str(tmp_path / "none"), 5)
