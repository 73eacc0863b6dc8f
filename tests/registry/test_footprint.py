"""A query's checkpoint by part: one listing sizes each part (the file sink's log beside the
output included), the status file keeps it across a write and a read, and a damaged entry is
no figure rather than a broken status."""

from __future__ import annotations

import json
from pathlib import Path

from flinkish_cli.registry import footprint
from flinkish_cli.registry.status import JobStatus, QueryStatus
from flinkish_cli.storage import open_storage

JOB = "cd" * 16


def _file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def _checkpoint(root: Path) -> tuple[Path, Path]:
    checkpoint, output = root / "cp" / "raw", root / "out" / "raw"
    _file(checkpoint / "metadata", 45)
    _file(checkpoint / ".metadata.crc", 12)
    for batch in range(3):
        _file(checkpoint / "offsets" / str(batch), 500)
        _file(checkpoint / "commits" / str(batch), 20)
    _file(checkpoint / "sources" / "0" / "9.compact", 1300)
    _file(checkpoint / "sources" / "0" / "19.compact", 2600)
    _file(checkpoint / "sources" / "0" / "20", 130)
    _file(checkpoint / "state" / "0" / "0" / "1.zip", 4000)
    _file(checkpoint / "state" / "0" / "_metadata" / "metadata", 80)
    _file(output / "_spark_metadata" / "9.compact", 2270)
    _file(output / "part-0000.json", 999)  # output itself: not the log
    return checkpoint, output


def test_one_listing_sizes_every_part_and_the_sinks_log(tmp_path: Path) -> None:
    checkpoint, output = _checkpoint(tmp_path)
    storage = open_storage(str(tmp_path))
    found = footprint.measure(storage, str(checkpoint), (storage, str(output)), now=12.5)
    sizes = {name: (p.files, p.bytes) for name, p in found.parts.items()}
    assert sizes == {
        "metadata": (2, 57),
        "offsets": (3, 1500),
        "commits": (3, 60),
        "sources": (3, 4030),
        "state": (2, 4080),
        "sink_metadata": (1, 2270),
    }
    assert found.total == 57 + 1500 + 60 + 4030 + 4080, "the sink's log is beside the output"
    growing = [part.name for part, _ in found.growing()]
    assert growing == ["sources", "sink_metadata"]
    summary = found.summary()
    assert summary["measured"] == 12500
    assert summary["parts"]["sources"] == {"bytes": 4030, "files": 3, "grows": "age"}
    assert summary["parts"]["offsets"]["grows"] == "bounded"
    advice = {g["part"]: g["advice"] for g in summary["growing"]}
    assert "flinkish.file-source.log.cleanup-delay" in advice["sources"]
    assert "retention" in advice["sink_metadata"]


def test_a_query_without_a_checkpoint_or_file_sink_yet_measures_empty(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    found = footprint.measure(storage, str(tmp_path / "none"), (storage, str(tmp_path / "o")))
    assert found.parts == {} and found.total == 0 and found.growing() == []


def test_the_status_keeps_the_footprint_and_forgets_a_damaged_one(tmp_path: Path) -> None:
    checkpoint, _ = _checkpoint(tmp_path)
    measured = footprint.measure(open_storage(str(tmp_path)), str(checkpoint), now=3.0)
    query = QueryStatus(name="raw", checkpoint=str(checkpoint), footprint=measured)
    status = JobStatus(job_id=JOB, name="job", queries={"raw": query})
    again = JobStatus.from_json(status.to_json())
    assert again.queries["raw"].footprint == measured
    for damaged in ("nonsense", {"parts": {"sources": {"files": "x"}}}, {"measured": 1}):
        data = json.loads(status.to_json())
        data["queries"]["raw"]["footprint"] = damaged
        assert JobStatus.from_json(json.dumps(data)).queries["raw"].footprint is None
    data = json.loads(status.to_json())
    del data["queries"]["raw"]["footprint"]  # written by an older flinkish
    assert JobStatus.from_json(json.dumps(data)).queries["raw"].footprint is None
