"""When a new program counts as stable after ``flinkish upgrade``, judged from the status its
driver writes: RUNNING, its program waiting on its queries, each of them with a batch (or
Spark's report that it found no new input), and no failure of any kind; what it committed
beyond the state it started from, read from its commit logs; and the outcome's final line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flinkish_cli.client.upgrade.outcome import Result, UpgradeMode, UpgradeOutcome
from flinkish_cli.client.upgrade.stability import (
    committed_beyond,
    judge,
    last_commits,
    last_planned,
    planned_beyond,
)
from flinkish_cli.config import Configuration
from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus

JOB = "0123456789abcdef0123456789abcdef"


def _query(name: str, batches: int = 1, idle: bool = False, active: bool = True) -> QueryStatus:
    query = QueryStatus(name=name, checkpoint=f"/c/{JOB}/{name}", active=active, idle=idle)
    for batch in range(batches):
        query.record(Progress(batch_id=batch, timestamp="2026-11-24T08:00:00Z", input_rows=5))
    return query


def _status(**changes) -> JobStatus:
    status = JobStatus(job_id=JOB, name="counts", state=JobState.RUNNING, pid=42)
    status.queries = {"counts": _query("counts"), "raw": _query("raw")}
    status.queries_started = True
    for key, value in changes.items():
        setattr(status, key, value)
    return status


def test_running_with_a_batch_in_every_query_is_stable() -> None:
    assert judge(_status()).stable


def test_a_query_that_found_no_input_counts_as_ready() -> None:
    quiet = _status(queries={"counts": _query("counts"), "raw": _query("raw", 0, idle=True)})
    assert judge(quiet).stable


@pytest.mark.parametrize(
    ("changes", "waiting_for"),
    [
        ({"state": JobState.CREATED}, "it to run"),
        ({"queries_started": False}, "its program to start its queries"),
        ({"queries": {}}, "the first batch of a query"),
        ({"queries": {"counts": _query("counts"), "raw": _query("raw", 0)}}, "first batch of raw"),
        ({"queries": {"counts": _query("counts", active=False)}}, "first batch of counts"),
    ],
)
def test_not_yet_stable_says_what_it_waits_for(changes: dict, waiting_for: str) -> None:
    verdict = judge(_status(**changes))
    assert not verdict.stable and verdict.failure is None
    assert waiting_for in verdict.waiting


@pytest.mark.parametrize(
    ("changes", "failure"),
    [
        ({"state": JobState.FAILED, "failure_cause": "boom\nat line 3"}, "ended FAILED: boom"),
        ({"state": JobState.RESTARTING}, "failed"),
        ({"restarts": 1}, "failed"),
        (
            {
                "exceptions": [
                    {"cause": "[STREAM_FAILED] wrapped\nCaused by (Python): ValueError: bad key"}
                ]
            },
            "failed: ValueError: bad key",
        ),
        ({"heartbeat": time.time() - 3600}, "ended FAILED: The job's driver stopped"),
    ],
)
def test_any_failure_ends_the_wait(changes: dict, failure: str) -> None:
    verdict = judge(_status(**changes))
    assert not verdict.stable and verdict.failure and verdict.failure.startswith(failure)


def test_a_query_exception_names_the_query() -> None:
    status = _status()
    status.queries["raw"].exception = "java.io.IOException: disk full"
    assert judge(status).failure == "failed in query raw: java.io.IOException: disk full"


def _committed(root: Path, query: str, batches: int) -> QueryStatus:
    """A query whose checkpoint's commit log holds batches 0 .. batches - 1."""
    commits = root / query / "commits"
    commits.mkdir(parents=True)
    for batch in range(batches):
        (commits / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (commits / f".{batch}.crc").write_bytes(b"crc")
    return QueryStatus(name=query, checkpoint=f"{root / query}/")


def test_the_commit_logs_say_what_the_new_job_committed(tmp_path: Path) -> None:
    config = Configuration.from_flat({})
    status = _status()
    status.queries = {
        "counts": _committed(tmp_path, "counts", 3),  # last committed batch 2
        "raw": _committed(tmp_path, "raw", 5),  # 4
        "new": _committed(tmp_path, "new", 1),  # 0: a query the old program did not have
        "quiet": _committed(tmp_path, "quiet", 0),  # none yet
        "gone": QueryStatus(name="gone", checkpoint=str(tmp_path / "gone")),
    }
    assert last_commits(config, status) == {"counts": 2, "raw": 4, "new": 0}
    assert committed_beyond(config, status, {"counts": 2, "raw": 4}) == "query new batch 0"
    assert committed_beyond(config, status, {"counts": 1, "raw": 4, "new": 0}) == (
        "query counts batch 2"
    )
    assert committed_beyond(config, status, {"counts": 2, "raw": 4, "new": 0}) == ""


def test_the_offset_logs_say_what_the_new_job_planned(tmp_path: Path) -> None:
    """Under the exactly-once Kafka sink, a batch planned beyond the state the new job
    started from may be in Kafka (its transactions commit before Spark's commit log)."""
    config = Configuration.from_flat({})
    status = _status()
    status.queries = {"orders": _committed(tmp_path, "orders", 3)}  # committed up to 2
    offsets = tmp_path / "orders" / "offsets"
    offsets.mkdir()
    for batch in range(4):  # planned up to 3
        (offsets / str(batch)).write_text("v1\n{}\n{}")
    assert last_planned(config, status) == {"orders": 3}
    assert planned_beyond(config, status, {"orders": 2}) == (
        "query orders batch 3, planned and maybe in Kafka"
    )
    assert planned_beyond(config, status, {"orders": 3}) == ""  # the savepoint's own, replayed


def test_final_lines_say_which_job_runs_which_program_from_where() -> None:
    old, new, back = "a" * 32, "b" * 32, "c" * 32
    outcome = UpgradeOutcome(
        Result.ROLLED_BACK,
        old,
        UpgradeMode.SAVEPOINT,
        new_job_id=new,
        rollback_job_id=back,
        source="s3://b/sp/savepoint-aaaaaa-000000000000",
        reason="ended FAILED: ValueError: bad key",
        program="app/job.py",
        previous_program="/deploy/app/job.py",
    )
    assert outcome.line == (
        f"Upgrade of job {old} rolled back: job {new} (app/job.py) ended FAILED: ValueError: "
        f"bad key; job {back} runs the previous program (/deploy/app/job.py) from savepoint "
        "s3://b/sp/savepoint-aaaaaa-000000000000."
    )
    outcome.result = Result.FAILED
    assert outcome.line.endswith(
        "Resume by hand: flinkish run -s s3://b/sp/savepoint-aaaaaa-000000000000 "
        "/deploy/app/job.py ..."
    )
    stable = UpgradeOutcome(
        Result.STABLE,
        old,
        UpgradeMode.LAST_STATE,
        new_job_id=new,
        source=f"/c/{old}",
        program="job.py",
    )
    assert stable.line == (
        f"Upgrade of job {old} completed: job {new} (job.py) runs from the retained "
        f"checkpoints /c/{old} and is stable."
    )
    assert stable.summary()["result"] == "STABLE" and stable.summary()["new-jid"] == new


def test_the_upgrades_guide_shows_the_ci_script_the_tests_run() -> None:
    """The upgrades guide includes examples/ci/upgrade.sh itself (a snippet the strict docs
    build fails on when the file is missing), in a bash block, not a copy that could drift."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    guide = (root / "docs" / "guides" / "upgrades-from-ci.md").read_text()
    include = '--8<-- "examples/ci/upgrade.sh"'
    assert f"```bash\n{include}\n```" in guide
    assert "flinkish upgrade" in (root / "examples" / "ci" / "upgrade.sh").read_text()
    assert "#!/usr/bin/env bash" not in guide
