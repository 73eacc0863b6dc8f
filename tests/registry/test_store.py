"""The job registry: one damaged or foreign status file never hides the other jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry, UnreadableJob, UnreadableStatusError

GOOD = "3f9c12ab45cd67ef89013f9c12ab45cd"
BAD = "0badc0ffee0badc0ffee0badc0ffee00"


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    status = JobStatus(job_id=GOOD, name="orders", state=JobState.RUNNING, pid=1)
    status.queries["orders"] = QueryStatus(name="orders", checkpoint="/cp/orders")
    registry.write(status)
    return registry


def _write_bad(registry: JobRegistry, content: str | bytes) -> Path:
    path = Path(registry.status_path(BAD))
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _good_json(**changes: object) -> str:
    data = json.loads(JobStatus(job_id=BAD, name="x", pid=1).to_json())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{truncated", "it is not valid JSON (line 1, column 2)"),
        ("", "it is not valid JSON"),
        (b"\xff\xfe\x00binary", "it is not text"),
        ('["a", "list"]', "it is not a flinkish job status"),
        ('{"job_id": "' + BAD + '"}', "it is not a flinkish job status"),
        (_good_json(state="SLEEPING"), "it is not a flinkish job status"),
        (_good_json(job_id=GOOD), "it names another job"),
        (_good_json(start_time="yesterday"), "its start_time is not a number"),
        (_good_json(heartbeat=None), "its heartbeat is not a number"),
        (_good_json(pid="1"), "its pid is not a whole number"),
        (_good_json(queries=[1]), "it is not a flinkish job status"),
        (
            _good_json(queries={"../../etc": {"name": "../../etc", "checkpoint": "/x"}}),
            "cannot be a query identity",
        ),
        ("[" * 100000, "it is not a flinkish job status"),
    ],
)
def test_unreadable_status_is_reported_and_others_listed(
    registry: JobRegistry, content, reason
) -> None:
    path = _write_bad(registry, content)
    statuses, unreadable = registry.scan()
    assert [s.job_id for s in statuses] == [GOOD]
    (job,) = unreadable
    assert isinstance(job, UnreadableJob)
    assert job.job_id == BAD and job.path == str(path) and reason in job.reason
    assert job.modified is not None
    assert [s.job_id for s in registry.list()] == [GOOD]
    with pytest.raises(UnreadableStatusError, match="is unreadable") as error:
        registry.get(BAD)
    assert reason in error.value.reason and str(path) in (error.value.hint or "")


def test_a_status_file_that_is_a_directory(registry: JobRegistry) -> None:
    Path(registry.status_path(BAD)).mkdir(parents=True)
    statuses, unreadable = registry.scan()
    assert [s.job_id for s in statuses] == [GOOD]
    assert [j.job_id for j in unreadable] == [BAD]


def test_a_job_directory_without_status_is_not_a_job(registry: JobRegistry) -> None:
    (Path(registry.root) / BAD / "orders").mkdir(parents=True)
    assert registry.scan() == ([registry.get(GOOD)], [])
    assert registry.find(BAD) is None
