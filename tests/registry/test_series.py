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


def test_each_stateful_operators_rows_and_bytes_are_kept_per_batch(tmp_path: Path) -> None:
    """From Spark's progress (``stateOperators``) to the series the State tab charts."""
    progress = {
        "batchId": 4,
        "timestamp": "2026-11-24T00:00:04.000Z",
        "stateOperators": [
            {"operatorName": "symmetricHashJoin", "numRowsTotal": 40, "memoryUsedBytes": 9000},
            {"operatorName": "stateStoreSave", "numRowsTotal": 7, "memoryUsedBytes": 800},
        ],
    }
    query = QueryStatus(name="joined", checkpoint="/cp/joined")
    query.record(Progress.from_spark(progress))
    status = JobStatus(job_id=JOB, name="job", queries={"joined": query})
    assert JobStatus.from_json(status.to_json()).queries["joined"].recent[0].operators == [
        ["symmetricHashJoin", 40, 9000],
        ["stateStoreSave", 7, 800],
    ]
    kept = series.Series()
    kept.merge(status)
    expected = {
        "joined": {
            "names": ["symmetricHashJoin", "stateStoreSave"],
            "points": [[1795478404000, [40, 9000], [7, 800]]],
        }
    }
    assert kept.operators == expected
    assert series.Series.from_json(kept.to_json()).operators == expected
    older = json.dumps({"fields": list(series.FIELDS), "queries": {}})  # before operators
    assert series.Series.from_json(older).operators == {}
    damaged = json.loads(kept.to_json())
    damaged["operators"]["joined"]["points"].append([1, [2]])
    damaged["operators"]["other"] = {"names": ["x"], "points": "no"}
    assert series.Series.from_json(json.dumps(damaged)).operators == {}
    assert Progress(0, "t", operators=[["x", "1", 2], "y"]).operators == []  # read as damaged
