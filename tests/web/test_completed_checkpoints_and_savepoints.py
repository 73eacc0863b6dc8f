"""What a job has completed, as ``flinkish web`` and the CLI tell it, over a registry written
with the registry's own API (as drivers write it):

- Flink's checkpoint counts: every micro-batch the job committed, batch 0 included, and for a
  job resumed from a savepoint its own batches only (its batch ids go on from the
  savepoint's), in the REST API's ``counts`` and the Prometheus metric alike; a status
  written by an older flinkish (no record of a query's first batch) counts from batch 0;
- a job's last savepoint: the newest COMPLETED record of its savepoint history, never a newer
  DISPOSED or FAILED one, and never what an older status file still says;
- a savepoint shown as the same JSON by ``savepoint list`` and the dashboard's history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flinkish_cli.registry.history import SavepointHistory, SavepointRecord, SavepointState, Trigger
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

#: a job whose two queries have each committed their first batch (batch 0)
FRESH = "e5" * 16
#: a job resumed from a savepoint at batches 99 and 49, now at batches 340 and 345
RESUMED = "f6" * 16
#: a job whose status an older flinkish wrote: no first batches, a ``last_savepoint`` key
OLDER = "a7" * 16
#: a job with savepoints: a COMPLETED one, then a DISPOSED one, then a FAILED one
SAVED = "b8" * 16
NOW = time.time()
KEPT, DISPOSED = "/sp/savepoint-b8b8b8-000000000002", "/sp/savepoint-b8b8b8-000000000003"


def _query(name: str, first: int, last: int) -> QueryStatus:
    query = QueryStatus(name=name, checkpoint=f"/cp/{name}", active=True)
    for batch in range(first, last + 1):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(NOW - 600 + batch))
        query.record(Progress(batch_id=batch, timestamp=f"{stamp}.000Z", input_rows=1))
    return query


def _running(job_id: str, **queries: tuple[int, int]) -> JobStatus:
    status = JobStatus(
        job_id=job_id, name=f"job-{job_id[:2]}", state=JobState.RUNNING, start_time=NOW - 900,
        heartbeat=NOW + 3600, pid=4242,
    )  # fmt: skip
    status.queries = {name: _query(name, *batches) for name, batches in queries.items()}
    return status


@pytest.fixture(scope="module")
def registry_env(tmp_path_factory: pytest.TempPathFactory) -> FlinkishEnv:
    root = tmp_path_factory.mktemp("completed")
    env = FlinkishEnv.under(root)
    registry = JobRegistry.open(str(env.checkpoints))
    registry.write(_running(FRESH, counts=(0, 0), raw=(0, 0)))
    resumed = _running(RESUMED, counts=(100, 340), raw=(50, 345))
    resumed.restored_from = "/sp/savepoint-f6f6f6-000000000001"
    registry.write(resumed)
    registry.write(_running(SAVED, counts=(0, 9)))
    older = json.loads(_running(OLDER, counts=(0, 4)).to_json())
    del older["queries"]["counts"]["first_batch"]
    older["last_savepoint"] = {"path": "/sp/savepoint-a7a7a7-000000000001", "time": 1, "x": 2}
    registry.storage.write_text(registry.status_path(OLDER), json.dumps(older))
    history = SavepointHistory(registry)
    for state, path, age in (
        (SavepointState.COMPLETED, KEPT, 300),
        (SavepointState.DISPOSED, DISPOSED, 200),
        (SavepointState.FAILED, "/sp", 100),
    ):
        history.record(
            SavepointRecord(SAVED, Trigger.PERIODIC, state, path, NOW - age, size=4096,
                            batches={"counts": 9}, cause="disk full" if path == "/sp" else None)
        )  # fmt: skip
        time.sleep(0.001)  # record ids sort by the time they were made
    return env


@pytest.fixture(scope="module")
def web(registry_env: FlinkishEnv) -> Iterator[WebServer]:
    with running_web(registry_env) as server:
        yield server


def _json(web: WebServer, path: str) -> Any:
    reply = web.get(path)
    assert reply.status == 200, (path, reply)
    return reply.json()


def test_counts_are_every_batch_the_job_committed(web: WebServer) -> None:
    expected = {
        FRESH: 1 + 1,  # batch 0 of each query
        RESUMED: (340 - 99) + (345 - 49),  # after the savepoint's batches 99 and 49
        OLDER: 5,  # batches 0 to 4: an older status does not say where the job began
        SAVED: 10,
    }
    metrics = web.get("/metrics").body.decode()
    for job_id, completed in expected.items():
        counts = _json(web, f"/jobs/{job_id}/checkpoints")["counts"]
        assert (counts["completed"], counts["total"], counts["failed"]) == (completed, completed, 0)
        labels = f'job_id="{job_id}",job_name="job-{job_id[:2]}"'
        sample = f"flink_jobmanager_job_numberOfCompletedCheckpoints{{{labels}}} {completed}.0"
        assert sample in metrics, (job_id, completed)
    assert _json(web, f"/jobs/{RESUMED}/checkpoints")["counts"]["restored"] == 1


def test_the_last_savepoint_is_the_newest_completed_one(registry_env: FlinkishEnv) -> None:
    jobs = {job["jid"]: job for job in registry_env.list_jobs()}
    listed = registry_env.run("savepoint", "list", SAVED, "--output", "json", check=True).stdout
    kept = next(r for r in json.loads(listed)["savepoints"] if r["path"] == KEPT)
    assert jobs[SAVED]["last-savepoint"] == kept, "the same savepoint, shown the same way"
    assert kept["state"] == "COMPLETED" and kept["trigger"] == "PERIODIC"
    assert jobs[OLDER]["last-savepoint"] is None, "an older status's own record is not read"
    assert jobs[FRESH]["last-savepoint"] is None


def test_the_dashboards_history_shows_savepoints_as_savepoint_list_does(
    web: WebServer, registry_env: FlinkishEnv
) -> None:
    listed = registry_env.run("savepoint", "list", SAVED, "--output", "json", check=True).stdout
    shown = _json(web, f"/flinkish/jobs/{SAVED}/savepoints")
    assert shown == json.loads(listed)
    assert [r["state"] for r in shown["savepoints"]] == ["FAILED", "DISPOSED", "COMPLETED"]


def test_the_rest_api_and_the_job_list_show_the_last_completed_savepoint(web: WebServer) -> None:
    latest = _json(web, f"/jobs/{SAVED}/checkpoints")["latest"]["savepoint"]
    assert latest is not None, "no savepoint shown"
    assert latest["external_path"] == KEPT and latest["is_savepoint"] is True
    assert latest["trigger_timestamp"] == int((NOW - 300) * 1000)
    assert _json(web, f"/jobs/{SAVED}")["last-savepoint"]["path"] == KEPT
    rows = {row["jid"]: row for row in _json(web, "/flinkish/jobs")["jobs"]}
    assert rows[SAVED]["last-savepoint"]["path"] == KEPT
    assert rows[OLDER]["last-savepoint"] is None
