"""The control protocol: each command survives the channel's JSON, both ends read the same
wire format as before, and a malformed request is refused with a reason."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from flinkish_cli.registry.control import ControlRequest
from flinkish_cli.registry.protocol import (
    CHECKPOINT_WAIT,
    Cancel,
    CheckpointDone,
    SavepointDone,
    Stop,
    StopWithSavepoint,
    TriggerCheckpoint,
    TriggerSavepoint,
    command_of,
    ends_at_once,
    to_request,
)

COMMANDS = [
    Cancel(),
    Stop("Stopped by SIGTERM."),
    StopWithSavepoint("s3://b/sp", drain=True, format_type="NATIVE", end_state="CANCELED"),
    StopWithSavepoint("/sp", detached=True),
    StopWithSavepoint("/sp", explicit_target=True, upgrade=True),
    TriggerSavepoint("hdfs:///sp", detached=True),
    TriggerCheckpoint(30.0),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_every_command_survives_the_channel(command) -> None:
    written = json.dumps(asdict(to_request(command)))
    assert command_of(ControlRequest.from_json(written)) == command


def test_only_cancel_and_a_plain_stop_end_the_job_at_once() -> None:
    assert [ends_at_once(c) for c in COMMANDS] == [True, True, False, False, False, False, False]


@pytest.mark.parametrize(
    ("action", "args", "expected"),
    [  # what flinkish wrote before the protocol was typed
        ("cancel", {}, Cancel()),
        ("stop", {"reason": "Stopped by SIGINT."}, Stop("Stopped by SIGINT.")),
        ("stop", {}, Stop()),
        (
            "stop",
            {"savepoint": True, "target": "/sp", "drain": False, "format_type": "CANONICAL"},
            StopWithSavepoint("/sp"),
        ),
        ("stop", {"savepoint": True, "target": "/sp", "end_state": "canceled"}, None),
        ("savepoint", {"target": "/sp", "format_type": "CANONICAL"}, TriggerSavepoint("/sp")),
        ("checkpoint", {}, TriggerCheckpoint(CHECKPOINT_WAIT)),
    ],
)
def test_requests_of_the_earlier_wire_format_are_understood(action, args, expected) -> None:
    command = command_of(ControlRequest(action, args))
    if expected is None:  # Flink's deprecated cancel with a savepoint
        assert command == StopWithSavepoint("/sp", end_state="CANCELED")
    else:
        assert command == expected


@pytest.mark.parametrize(
    ("action", "args", "reason"),
    [
        ("restart", {}, "Unknown 'restart'."),
        ("savepoint", {}, "names no target directory"),
        ("stop", {"savepoint": True, "target": ""}, "names no target directory"),
        ("checkpoint", {"timeout": "soon"}, "must be a positive number"),
        ("checkpoint", {"timeout": -1}, "must be a positive number"),
    ],
)
def test_a_malformed_request_is_refused_with_its_reason(action, args, reason) -> None:
    with pytest.raises(ValueError, match=reason):
        command_of(ControlRequest(action, args))


def test_an_unknown_end_state_stops_the_job_finished() -> None:
    request = ControlRequest("stop", {"savepoint": True, "target": "/sp", "end_state": "FAILED"})
    assert command_of(request) == StopWithSavepoint("/sp")


def test_answers_carry_their_result_and_refuse_a_damaged_one() -> None:
    assert SavepointDone.from_result(SavepointDone("/sp/savepoint-1").to_result()).path == (
        "/sp/savepoint-1"
    )
    done = CheckpointDone("/ck/job", {"counts": 4, "raw": 7})
    assert CheckpointDone.from_result(done.to_result()) == done
    assert done.checkpoint_id == 8 and CheckpointDone("/ck").checkpoint_id == 0
    with pytest.raises(ValueError, match="no savepoint path"):
        SavepointDone.from_result({"path": ""})
    with pytest.raises(ValueError, match="no committed batches"):
        CheckpointDone.from_result({"batches": {"counts": "4"}})
    with pytest.raises(ValueError, match="no committed batches"):
        CheckpointDone.from_result({"batches": {"counts": True}})


def test_a_named_target_directory_travels_with_the_savepoint_request() -> None:
    named = TriggerSavepoint("/sp", explicit_target=True)
    assert to_request(named).args == {
        "target": "/sp",
        "format_type": "CANONICAL",
        "explicit_target": True,
    }
    assert command_of(to_request(named)) == named
    assert "explicit_target" not in to_request(TriggerSavepoint("/sp")).args  # the earlier form


def test_an_upgrade_savepoint_is_marked_on_the_wire_only_when_it_is_one() -> None:
    assert to_request(StopWithSavepoint("/sp", upgrade=True)).args["upgrade"] is True
    assert "upgrade" not in to_request(StopWithSavepoint("/sp")).args  # the earlier form
    odd = ControlRequest("stop", {"savepoint": True, "target": "/sp", "upgrade": "yes"})
    assert command_of(odd) == StopWithSavepoint("/sp")  # only a JSON true says so
