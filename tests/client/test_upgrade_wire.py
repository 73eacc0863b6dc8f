"""An upgrade carried out by ``flinkish web`` for the CLI: its request and its outcome travel
whole and are checked on arrival, and its events are one JSON object a line."""

from __future__ import annotations

import json

import pytest

from flinkish_cli.client.upgrade.outcome import Result, UpgradeMode, UpgradeOutcome, UpgradeRequest
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.rest.wire import event, read_event
from flinkish_cli.submission.submit import RunRequest

JOB = "0123456789abcdef0123456789abcdef"


_PROGRAM = RunRequest(script="/uploads/job.py")


def test_the_request_round_trips() -> None:
    asked = UpgradeRequest(JOB, RunRequest(script="job.py"), UpgradeMode.LAST_STATE, "/sp", False)
    body = json.loads(json.dumps(asked.to_json({"entryClass": "job.py"})))
    back = UpgradeRequest.from_json(body, _PROGRAM)
    assert (back.job_id, back.mode, back.savepoint_dir, back.rollback) == (
        JOB, UpgradeMode.LAST_STATE, "/sp", False
    )  # fmt: skip
    assert back.program.script == "/uploads/job.py"


@pytest.mark.parametrize(
    ("body", "error", "word"),
    [
        ([], UsageError, "not a JSON object"),
        ({}, UsageError, "names no job"),
        ({"jobId": "../../etc"}, JobError, "not a valid JobID"),
        ({"jobId": JOB, "upgradeMode": "hot"}, UsageError, "upgradeMode must be one of"),
        ({"jobId": JOB, "savepointPath": ["/sp"]}, UsageError, "savepointPath"),
        ({"jobId": JOB, "rollback": "no"}, UsageError, "rollback"),
    ],
)
def test_a_bad_request_is_refused_naming_the_field(
    body: object, error: type[Exception], word: str
) -> None:
    with pytest.raises(error, match=word):
        UpgradeRequest.from_json(body, _PROGRAM)


def test_the_outcome_travels_whole_with_its_final_line() -> None:
    outcome = UpgradeOutcome(
        Result.UNSTABLE, JOB, UpgradeMode.SAVEPOINT, new_job_id="f" * 32, source="/sp/savepoint-1",
        reason="was not stable within 60 s", program="/home/me/job.py", notes=["a note"],
        new_job_dir="/cp/" + "f" * 32,
    )  # fmt: skip
    back = UpgradeOutcome.from_json(json.loads(json.dumps(outcome.to_json())))
    assert back == outcome
    assert back.line == outcome.line and "flinkish run -s /cp/fff" in back.line
    for broken in ([], {**outcome.to_json(), "result": "MAYBE"}, {**outcome.to_json(), "notes": 1}):
        with pytest.raises(ValueError):
            UpgradeOutcome.from_json(broken)


def test_events_are_lines_and_an_empty_line_is_a_heartbeat() -> None:
    line = event("notice", "Rolling back: ünï\ncode")
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert read_event(line) == ("notice", "Rolling back: ünï\ncode")
    assert read_event(b"\n") is None
    for bad in (b"{}", b"[1]", b'{"event": "shell", "value": 1}', b"not json"):
        with pytest.raises(ValueError):
            read_event(bad)
