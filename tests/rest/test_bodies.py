"""The trigger messages' bodies have one owner (:mod:`flinkish_cli.rest.bodies`): the server
reads them and the client writes them through its classes, their fields' wire names are
written nowhere else in the package, and a body that is not the message's is refused as
Flink refuses it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flinkish_cli.rest import bodies, messages
from flinkish_cli.rest.bodies import (
    COMPLETED,
    IN_PROGRESS,
    AsynchronousOperationInfo,
    AsynchronousOperationResult,
    BodyMismatch,
    CheckpointInfo,
    CheckpointTriggerRequestBody,
    RequestBody,
    RescaleInfo,
    SavepointInfo,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
    TriggerResponse,
)
from tests.rest.test_messages import PACKAGE, _literals

BODIES = [
    value
    for value in vars(bodies).values()
    if isinstance(value, type) and issubclass(value, RequestBody) and value is not RequestBody
]
#: the wire names that say what they are (``drain``, ``name`` are words any module may use)
SPECIFIC = {
    name
    for body in BODIES
    for name in body.wire_names().values()
    if "-" in name or name != name.lower()
}


def test_every_trigger_message_declares_its_bodies_in_the_catalogue_of_bodies() -> None:
    triggers = [m for m in messages.catalogue().values() if m.response is TriggerResponse]
    assert len(triggers) == 5, triggers  # checkpoint, stop, savepoint, disposal, rescale
    declared = {m.request for m in triggers} - {"JobResourceRequirementsBody"}
    assert all(isinstance(b, type) and issubclass(b, RequestBody) for b in declared), declared
    assert {b.NAME for b in BODIES} == {b.__name__ for b in BODIES}  # Flink's class names


def test_no_body_field_is_written_outside_its_owner() -> None:
    owner = Path(bodies.__file__).resolve()
    stray = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.resolve() != owner
        for line, text in _literals(path)
        if text in SPECIFIC
    ]
    assert {"targetDirectory", "target-directory", "request-id", "triggerId"} <= SPECIFIC
    assert not stray, "body fields belong in flinkish_cli/rest/bodies.py:\n" + "\n".join(stray)


def test_the_scan_sees_a_field_written_elsewhere(tmp_path: Path) -> None:
    module = tmp_path / "stray.py"
    module.write_text('"""targetDirectory in prose."""\nBODY = {"targetDirectory": "/sp"}\n')
    assert [text for _, text in _literals(module) if text in SPECIFIC] == ["targetDirectory"]


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b.NAME)
def test_a_body_comes_back_whole_from_the_wire(body: type[RequestBody]) -> None:
    values = {}
    for field in dataclasses.fields(body):
        types = field.metadata["types"]
        by_type = {bool: True, int: 7, dict: {"id": field.name}}
        values[field.name] = next(
            (by_type[t] for t in types if t in by_type), f"value of {field.name}"
        )
    sent = body(**values)
    wire = sent.to_wire()
    assert set(wire) == set(body.wire_names().values())
    assert body.from_wire(wire) == sent
    assert body.from_wire({}) == body()  # every field may be absent
    assert body().to_wire() == {}  # and None is not sent


def test_what_flink_sends_reads_as_the_message() -> None:
    # the body Flink's CLI sends for `flink stop --savepointPath /sp <JobID>`
    sent = {"targetDirectory": "/sp", "drain": False, "formatType": "CANONICAL"}
    body = StopWithSavepointRequestBody.from_wire(sent)
    assert (body.target_directory, body.drain, body.format_type) == ("/sp", False, "CANONICAL")
    assert body.trigger_id is None
    cancel = {"target-directory": None, "cancel-job": True}  # `flink cancel -s`
    savepoint = SavepointTriggerRequestBody.from_wire(cancel)
    assert savepoint.cancel_job is True and savepoint.target_directory is None


@pytest.mark.parametrize(
    "sent",
    [
        [],  # not an object
        "stop",
        {"targetDirectory": "/sp", "unknown": 1},  # a field it does not declare
        {"targetDirectory": 5},  # another type
        {"drain": "true"},
        {"drain": 1},  # a number is no boolean
        {"formatType": True},  # and a boolean is no string
    ],
)
def test_a_body_that_is_not_the_message_is_refused_in_flinks_words(sent: object) -> None:
    with pytest.raises(BodyMismatch) as refused:
        StopWithSavepointRequestBody.from_wire(sent)
    assert str(refused.value) == (
        "Request did not match expected format StopWithSavepointRequestBody."
    )


def test_an_answer_read_by_the_client_may_carry_more_than_it_declares() -> None:
    answer = {"request-id": "a" * 32, "newer-field": {}}
    assert TriggerResponse.from_wire(answer, strict=False).request_id == "a" * 32
    with pytest.raises(BodyMismatch):
        TriggerResponse.from_wire(answer)
    with pytest.raises(BodyMismatch):
        TriggerResponse.from_wire(["a" * 32], strict=False)
    assert CheckpointTriggerRequestBody(trigger_id="b" * 32).to_wire() == {"triggerId": "b" * 32}


def test_every_status_message_answers_an_asynchronous_operation_result() -> None:
    statuses = [
        m
        for m in messages.catalogue().values()
        if m.path.endswith("/{triggerid}") and not m.path.startswith("/flinkish/")
    ]
    assert len(statuses) == 4, statuses  # checkpoint, savepoint, disposal, rescale
    assert {m.response for m in statuses} == {AsynchronousOperationResult}


def test_a_status_is_written_in_flinks_shapes() -> None:
    assert AsynchronousOperationResult.in_progress().to_wire() == {"status": {"id": IN_PROGRESS}}
    savepoint = AsynchronousOperationResult.completed(SavepointInfo(location="s3://b/sp-1"))
    assert savepoint.to_wire() == {
        "status": {"id": "COMPLETED"},
        "operation": {"location": "s3://b/sp-1"},
    }
    checkpoint = AsynchronousOperationResult.completed(CheckpointInfo(checkpoint_id=12))
    assert checkpoint.to_wire()["operation"] == {"checkpointId": 12}
    disposal = AsynchronousOperationResult.completed(AsynchronousOperationInfo())
    assert disposal.to_wire() == {"status": {"id": "COMPLETED"}, "operation": {}}
    rescale = AsynchronousOperationResult.completed(RescaleInfo("/sp/savepoint-1"))
    assert rescale.info(RescaleInfo).savepoint == "/sp/savepoint-1"


def test_a_status_flink_answers_reads_as_one() -> None:
    # Flink's answer to GET /jobs/:jobid/savepoints/:triggerid, failure-cause included
    sent = {"status": {"id": "COMPLETED"}, "operation": {"location": "/sp", "failure-cause": None}}
    answer = AsynchronousOperationResult.from_wire(sent, strict=False)
    assert answer.state == COMPLETED
    assert answer.info(SavepointInfo).location == "/sp"
    assert AsynchronousOperationResult.from_wire({}, strict=False).state is None
    with pytest.raises(BodyMismatch):  # a status that is not an object
        AsynchronousOperationResult.from_wire({"status": "COMPLETED"}, strict=False)
    with pytest.raises(BodyMismatch):  # a checkpoint id that is no number
        answer = AsynchronousOperationResult.from_wire({"operation": {"checkpointId": "1"}})
        answer.info(CheckpointInfo)
