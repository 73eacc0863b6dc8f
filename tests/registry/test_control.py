"""Control requests: expiry, one claimant per request, withdrawal, damaged files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from flinkish_cli.registry.control import (
    DEFAULT_TTL,
    FORGET_AFTER,
    ControlChannel,
    ControlRequest,
    ControlResponse,
)
from flinkish_cli.registry.store import JobRegistry

JOB = "3f9c12ab45cd67ef89013f9c12ab45cd"


@pytest.fixture
def channel(tmp_path: Path) -> ControlChannel:
    return ControlChannel(JobRegistry.open(str(tmp_path / "cp")), JOB)


def _files(channel: ControlChannel) -> list[str]:
    directory = Path(channel.dir)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_pending_returns_each_request_once_in_order(channel: ControlChannel) -> None:
    first = channel.send(ControlRequest("savepoint", {"target": "/sp"}))
    second = channel.send(ControlRequest("cancel"))
    assert [r.request_id for r in channel.pending()] == [first.request_id, second.request_id]
    assert channel.pending() == []  # claimed: another poll (or reader) does not get them
    assert channel.claimed(first.request_id)


def test_expired_requests_are_deleted_never_returned(channel: ControlChannel) -> None:
    late = ControlRequest("savepoint", {"target": "/sp"}, expires=time.time() - 1)
    old = ControlRequest("cancel", created=time.time() - DEFAULT_TTL - 1)
    fresh = ControlRequest("checkpoint", expires=time.time() + 60)
    for request in (late, old, fresh):
        channel.send(request)
    assert [r.action for r in channel.pending()] == ["checkpoint"]
    assert _files(channel) == [f"{fresh.request_id}.claim", f"{fresh.request_id}.request.json"]


def test_a_withdrawn_request_is_never_carried_out(channel: ControlChannel) -> None:
    request = channel.send(ControlRequest("stop", {"savepoint": True, "target": "/sp"}))
    assert channel.withdraw(request.request_id) is True
    assert channel.pending() == []
    assert _files(channel) == []


def test_withdrawal_after_the_claim_is_refused(channel: ControlChannel) -> None:
    request = channel.send(ControlRequest("savepoint", {"target": "/sp"}))
    (taken,) = channel.pending()
    assert channel.withdraw(request.request_id) is False  # too late: the job has started it
    assert taken.request_id == request.request_id


def test_withdrawal_between_listing_and_claim(
    channel: ControlChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = channel.send(ControlRequest("cancel"))
    storage = channel.storage
    real = storage.create_exclusive

    def withdraw_first(path: str, data: bytes) -> bool:
        monkeypatch.setattr(storage, "create_exclusive", real)
        assert channel.withdraw(request.request_id)  # the CLI gives up as the driver lists
        return real(path, data)

    monkeypatch.setattr(storage, "create_exclusive", withdraw_first)
    assert channel.pending() == []
    monkeypatch.undo()
    assert _files(channel) == []


def test_damaged_or_foreign_requests_are_removed(channel: ControlChannel) -> None:
    directory = Path(channel.dir)
    directory.mkdir(parents=True)
    (directory / "00000000000000000001-aaaaaaaa.request.json").write_text("{not json")
    (directory / "00000000000000000002-bbbbbbbb.request.json").write_text('["a", "list"]')
    (directory / "00000000000000000003-cccccccc.request.json").write_text('{"action": 7}')
    good = channel.send(ControlRequest("cancel"))
    assert [r.request_id for r in channel.pending()] == [good.request_id]
    assert _files(channel) == [f"{good.request_id}.claim", f"{good.request_id}.request.json"]


def test_requests_from_older_or_newer_versions_are_read(channel: ControlChannel) -> None:
    directory = Path(channel.dir)
    directory.mkdir(parents=True)
    request_id = f"{time.time_ns():020d}-abcdef01"
    document = {
        "action": "cancel",
        "args": {},
        "request_id": request_id,
        "created": time.time(),
        "priority": "high",  # a field this version does not know
    }  # and no "expires": an older CLI
    (directory / f"{request_id}.request.json").write_text(json.dumps(document))
    (request,) = channel.pending()
    assert request.action == "cancel" and request.expires is None and not request.expired()


def test_responses_are_read_and_damaged_ones_reported(channel: ControlChannel) -> None:
    request = channel.send(ControlRequest("savepoint", {"target": "/sp"}))
    assert channel.response(request.request_id) is None
    channel.respond(ControlResponse(request.request_id, ok=True, result={"path": "/sp/x"}))
    assert channel.response(request.request_id).result == {"path": "/sp/x"}
    for damaged in ("{", '{"request_id": "other", "ok": true}', '{"ok": "yes"}', "\xff"):
        path = Path(channel.dir) / f"{request.request_id}.response.json"
        path.write_text(damaged, encoding="latin-1")
        response = channel.response(request.request_id)
        assert response is not None and response.ok is False
        assert "is unreadable" in (response.error or "")


def test_forget_removes_a_request_with_its_claim_and_response(channel: ControlChannel) -> None:
    request = channel.send(ControlRequest("cancel"))
    channel.pending()
    channel.respond(ControlResponse(request.request_id, ok=True))
    channel.forget(request.request_id)
    assert _files(channel) == []


def test_request_ids_are_flinks_trigger_ids_in_creation_order() -> None:
    from flinkish_cli.registry.control import _created_of, is_request_id, new_request_id

    first, second = new_request_id(), new_request_id()
    assert is_request_id(first) and is_request_id(second) and first < second
    assert abs(_created_of(first) - time.time()) < 5
    older = f"{time.time_ns():020d}-abcdef01"  # an earlier flinkish's form is still read
    assert abs(_created_of(older) - time.time()) < 5 and not is_request_id(older)


def test_files_left_by_requests_long_gone_are_deleted(channel: ControlChannel) -> None:
    """A detached trigger's files stay for its caller to poll, then go; so do a claim or a
    response whose request went first (a forget or withdrawal cut short): a job that runs
    for months keeps two days of control files at most."""
    answered = channel.send(ControlRequest("savepoint", {"target": "/sp"}))
    (request,) = channel.pending()
    channel.respond(ControlResponse(request.request_id, ok=True, result={"path": "/sp/x"}))
    recent = channel.send(ControlRequest("checkpoint"))
    channel.pending()
    channel.respond(ControlResponse(recent.request_id, ok=True))
    directory = Path(channel.dir)
    for orphan in ("0" * 31 + "1", "0" * 31 + "2"):
        (directory / f"{orphan}.response.json").write_text('{"ok": true}')
        (directory / f"{orphan}.claim").write_text("{}")
    long_ago = time.time() - FORGET_AFTER - 60
    for path in directory.iterdir():
        if answered.request_id in path.name or path.name.startswith("0" * 31 + "1"):
            os.utime(path, (long_ago, long_ago))
    assert channel.pending() == []
    assert _files(channel) == sorted(
        [
            *(f"{recent.request_id}.{kind}" for kind in ("claim", "request.json", "response.json")),
            *(f"{'0' * 31}2.{kind}" for kind in ("claim", "response.json")),
        ]
    )
    assert channel.response(recent.request_id) is not None
