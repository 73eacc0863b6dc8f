"""Job status: serialisation, progress records, and the heartbeat rule."""

import json
import time

import pytest

from flinkish_cli.registry.status import (
    RECENT_PROGRESS,
    JobState,
    JobStatus,
    Progress,
    QueryStatus,
)


def _progress(batch: int) -> dict:
    return {
        "batchId": batch,
        "timestamp": "2026-11-21T10:00:00.000Z",
        "numInputRows": 10,
        "inputRowsPerSecond": 5.0,
        "processedRowsPerSecond": float("nan"),
        "durationMs": {"triggerExecution": 120},
        "stateOperators": [{"numRowsTotal": 3}, {"numRowsTotal": 4}],
        "eventTime": {"watermark": "2026-11-21T09:59:00.000Z"},
    }


def test_progress_from_spark_sums_state_rows_and_drops_nan() -> None:
    progress = Progress.from_spark(_progress(7))
    assert progress.batch_id == 7
    assert progress.state_rows == 7
    assert progress.processed_rows_per_second == 0.0
    assert progress.watermark == "2026-11-21T09:59:00.000Z"
    assert progress.duration_ms == 120
    assert progress.lag is None and progress.state_bytes == 0


def test_progress_from_spark_takes_state_bytes_and_the_sources_lag() -> None:
    document = _progress(3)
    document["stateOperators"] = [{"numRowsTotal": 3, "memoryUsedBytes": 1024}]
    document["sources"] = [  # Kafka's metrics, as Spark reports them (text), and a file source
        {"description": "KafkaV2[Subscribe[orders]]", "metrics": {"maxOffsetsBehindLatest": "42"}},
        {"description": "FileStreamSource[/in]", "metrics": {}},
    ]
    progress = Progress.from_spark(document)
    assert (progress.state_bytes, progress.lag) == (1024, 42.0)


def test_query_keeps_only_recent_progress() -> None:
    query = QueryStatus(name="q", checkpoint="/c/q")
    for batch in range(RECENT_PROGRESS + 5):
        query.record(Progress.from_spark(_progress(batch)))
    assert len(query.recent) == RECENT_PROGRESS
    assert query.recent[0].batch_id == 5
    assert query.last_committed_batch == RECENT_PROGRESS + 4


def test_round_trip_through_json() -> None:
    status = JobStatus(job_id="a" * 32, name="orders", state=JobState.RUNNING)
    status.queries["orders"] = QueryStatus(name="orders", checkpoint="/c/orders")
    status.queries["orders"].record(Progress.from_spark(_progress(3)))
    again = JobStatus.from_json(status.to_json())
    assert again == status


def test_unknown_fields_from_newer_versions_are_ignored() -> None:
    text = JobStatus(job_id="b" * 32, name="x").to_json().replace("{", '{"future": 1, ', 1)
    assert JobStatus.from_json(text).job_id == "b" * 32


def test_running_job_with_stale_heartbeat_shows_failed_with_cause() -> None:
    now = time.time()
    status = JobStatus(job_id="c" * 32, name="x", state=JobState.RUNNING, heartbeat_timeout=5)
    status.pid = 1234
    status.heartbeat = now - 4
    assert status.effective_state(now) is JobState.RUNNING
    status.heartbeat = now - 6
    assert status.effective_state(now) is JobState.FAILED
    assert "heartbeat" in (status.effective_failure_cause(now) or "")


def test_terminal_states_ignore_the_heartbeat() -> None:
    status = JobStatus(job_id="d" * 32, name="x", state=JobState.FINISHED, heartbeat_timeout=1)
    status.heartbeat = 0
    assert status.effective_state() is JobState.FINISHED
    assert status.summary()["state"] == "FINISHED"


def test_a_submitted_job_whose_driver_has_not_reported_gets_a_start_up_grace() -> None:
    from flinkish_cli.registry.status import STARTUP_GRACE

    now = time.time()
    status = JobStatus(job_id="e" * 32, name="x", heartbeat_timeout=5)
    status.heartbeat = now - 60
    assert status.effective_state(now) is JobState.CREATED
    status.heartbeat = now - STARTUP_GRACE - 6
    assert status.effective_state(now) is JobState.FAILED
    assert "never reported" in (status.effective_failure_cause(now) or "")


def _status_json(**changes: object) -> str:
    import json

    status = JobStatus(job_id="f" * 32, name="x", state=JobState.RUNNING)
    status.queries["orders"] = QueryStatus(name="orders", checkpoint="/c/" + "f" * 32 + "/orders")
    data = json.loads(status.to_json())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize("name", ["../../etc", "a/b", "..", ".hidden", "", "x" * 129, "caf\u00e9"])
def test_query_names_read_back_are_validated_like_names_from_scripts(name: str) -> None:
    text = _status_json(queries={name: {"name": name, "checkpoint": f"/c/{name}"}})
    with pytest.raises(ValueError, match="cannot be a query identity"):
        JobStatus.from_json(text)


def test_a_query_entry_must_carry_its_own_name() -> None:
    text = _status_json(queries={"orders": {"name": "../../etc", "checkpoint": "/c/x"}})
    with pytest.raises(ValueError, match="entry for query 'orders' is damaged"):
        JobStatus.from_json(text)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[]", "not a job status object"),
        ('"x"', "not a job status object"),
        (_status_json(job_id="../../x"), "is not a JobID"),
        (_status_json(job_id=None), "is not a JobID"),
        (_status_json(queries=[1]), "'queries' is not a JSON object"),
        (_status_json(queries={"q": {"name": "q", "recent": "x"}}), "progress of query 'q'"),
        (_status_json(state="EXPLODED"), "EXPLODED"),
    ],
)
def test_a_status_of_another_shape_is_a_value_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        JobStatus.from_json(text)


def test_the_registry_reports_a_hostile_status_as_unreadable(tmp_path) -> None:
    from flinkish_cli.errors import JobError
    from flinkish_cli.registry.store import JobRegistry

    registry = JobRegistry.open(str(tmp_path))
    registry.storage.write_text(
        registry.status_path("f" * 32),
        _status_json(queries={"../../etc": {"name": "../../etc", "checkpoint": "/etc"}}),
    )
    with pytest.raises(JobError, match=r"status file of job f{32} is unreadable"):
        registry.find("f" * 32)


def test_the_exception_history_keeps_the_last_failures_in_order() -> None:
    status = JobStatus(job_id="a" * 32, name="job")
    for number in range(5):
        status.remember_failure(f"cause {number}", 1000.0 + number, limit=3, query="q")
        status.restarts += 1
    assert [e["cause"] for e in status.exceptions] == ["cause 2", "cause 3", "cause 4"]
    assert [e["attempt"] for e in status.exceptions] == [2, 3, 4]
    assert status.exceptions[-1] == {
        "timestamp": 1004000,
        "attempt": 4,
        "query": "q",
        "cause": "cause 4",
    }
    again = JobStatus.from_json(status.to_json())
    assert again.exceptions == status.exceptions
    assert again.summary()["exceptions"] == status.exceptions


def test_a_querys_committed_batches_are_the_jobs_own() -> None:
    fresh = QueryStatus(name="q", checkpoint="/c/q")
    assert fresh.committed_batches() == 0
    fresh.record(Progress.from_spark(_progress(0)))
    assert fresh.committed_batches() == 1, "batch 0 is the first committed"
    resumed = QueryStatus(name="q", checkpoint="/c/q")  # from a savepoint at batch 99
    for batch in range(100, 100 + RECENT_PROGRESS + 10):
        resumed.record(Progress.from_spark(_progress(batch)))
    assert resumed.first_batch == 100 and resumed.committed_batches() == RECENT_PROGRESS + 10
    status = JobStatus(job_id="a" * 32, name="orders", queries={"a": fresh, "b": resumed})
    assert status.completed_checkpoints() == 1 + RECENT_PROGRESS + 10
    assert status.latest_batches() == {"a": fresh.recent[-1], "b": resumed.recent[-1]}


def test_a_status_written_by_an_older_flinkish_is_read() -> None:
    """It had a ``last_savepoint`` (the savepoint history owns it now: ignored) and no
    first batches (its queries' batches are counted from batch 0)."""
    status = JobStatus(job_id="a" * 32, name="orders")
    query = QueryStatus(name="q", checkpoint="/c/q")
    for batch in range(3, 8):
        query.record(Progress.from_spark(_progress(batch)))
    status.queries["q"] = query
    data = json.loads(status.to_json())
    data["last_savepoint"] = {"path": "/sp/savepoint-aaaaaa-000000000001", "time": 1}
    del data["queries"]["q"]["first_batch"]
    again = JobStatus.from_json(json.dumps(data))
    assert "last_savepoint" not in json.loads(again.to_json())
    assert again.queries["q"].committed_batches() == 8
