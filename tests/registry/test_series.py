"""A job's series for charts: points from completed batches, each once, bounded, and a
damaged file read as an empty series (the dashboard shows the rest)."""

from __future__ import annotations

import json
from pathlib import Path

from flinkish_cli.registry import series
from flinkish_cli.registry.status import JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry

JOB = "ab" * 16


def _status(batches: range) -> JobStatus:
    query = QueryStatus(name="counts", checkpoint="/cp/counts")
    for batch in batches:
        minute, second = divmod(batch, 60)
        hour, minute = divmod(minute, 60)
        query.record(
            Progress(batch, f"2026-11-24T{hour:02}:{minute:02}:{second:02}.000Z", input_rows=batch)
        )
    return JobStatus(job_id=JOB, name="job", queries={"counts": query})


def test_each_batch_becomes_one_point_however_often_it_is_merged() -> None:
    kept = series.Series()
    assert kept.merge(_status(range(5))) is True
    assert kept.merge(_status(range(5))) is False, "the same batches again add nothing"
    kept.merge(_status(range(3, 8)))
    points = kept.queries["counts"]
    assert [p[1] for p in points] == list(range(8))
    assert points[0][0] == 1795478400000 and points[7][5] == 7  # epoch ms; rows of batch 7


def test_it_keeps_the_newest_points_only() -> None:
    kept = series.Series()
    for start in range(0, series.SERIES_POINTS + 100, 20):
        kept.merge(_status(range(start, start + 20)))
    points = kept.queries["counts"]
    assert len(points) == series.SERIES_POINTS
    assert points[-1][1] == series.SERIES_POINTS + 99


def test_written_read_back_and_damaged_files(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path))
    assert series.read(registry, JOB).queries == {}, "no file yet: an empty series"
    kept = series.Series()
    kept.merge(_status(range(3)))
    series.write(registry, JOB, kept)
    assert series.read(registry, JOB) == kept
    path = tmp_path / JOB / "_flinkish" / series.SERIES_FILE
    for damage in (b"{ not json", b"\xff\xfe", b'{"fields": ["x"], "queries": {}}', b"[]"):
        path.write_bytes(damage)
        assert series.read(registry, JOB).queries == {}, damage
    good = [1, 0, 1.5, 2.5, 10, 5, 0, 0, None]
    queries = {"../etc": [good], "counts": [[1, 2, 3], "x", good, [*good[:-1], "NaN"]]}
    path.write_text(json.dumps({"fields": list(series.FIELDS), "queries": queries}))
    assert series.read(registry, JOB).queries == {"counts": [good]}, "only sound points"


def test_the_status_newest_batches_complete_a_lagging_file() -> None:
    kept = series.Series()
    kept.merge(_status(range(10)))
    newer = kept.with_recent(_status(range(5, 15)))
    assert [p[1] for p in newer.queries["counts"]] == list(range(15))
    assert len(kept.queries["counts"]) == 10, "the kept series itself is unchanged"
