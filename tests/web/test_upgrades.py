"""The server's side of an upgrade the CLI asked for (:mod:`flinkish_cli.web.upgrades`):
what the upgrade shows becomes events in order, its end is its outcome or its error, a
silence is filled with heartbeats, and a bug of the server is said, not a hang."""

from __future__ import annotations

import threading

from flinkish_cli.client.upgrade.outcome import Result, UpgradeMode, UpgradeOutcome
from flinkish_cli.errors import SavepointError
from flinkish_cli.rest.wire import error_from_header, read_event
from flinkish_cli.web.upgrades import UpgradeStream, UpgradesUnderWay

JOB = "0123456789abcdef0123456789abcdef"


def _events(stream: UpgradeStream) -> list[tuple[str, object] | None]:
    return [read_event(line) for line in stream.lines()]


def test_what_the_upgrade_shows_comes_in_order_then_its_outcome() -> None:
    stream = UpgradeStream()
    outcome = UpgradeOutcome(Result.STABLE, JOB, UpgradeMode.SAVEPOINT, new_job_id="f" * 32)

    def upgrade() -> UpgradeOutcome:
        stream.savepoint("/sp/savepoint-1")
        stream.submitted("f" * 32)
        stream.notice("Deleted the checkpoints of the replaced job.")
        return outcome

    thread = stream.start(upgrade, "test upgrade")
    events = _events(stream)
    thread.join(10)
    assert not thread.daemon  # a server asked to stop finishes it first
    assert events[:3] == [
        ("savepoint", "/sp/savepoint-1"),
        ("submitted", "f" * 32),
        ("notice", "Deleted the checkpoints of the replaced job."),
    ]
    kind, value = events[3]  # type: ignore[misc]
    assert kind == "outcome" and UpgradeOutcome.from_json(value) == outcome
    assert len(events) == 4


def test_a_refusal_ends_it_as_the_error_itself() -> None:
    stream = UpgradeStream()

    def upgrade() -> UpgradeOutcome:
        raise SavepointError("Cannot upgrade job x: the new program does not fit.", "Untouched.")

    stream.start(upgrade, "test upgrade")
    [(kind, value)] = _events(stream)  # type: ignore[misc]
    error = error_from_header(value)  # type: ignore[arg-type]
    assert kind == "error" and type(error) is SavepointError
    assert (error.message, error.hint) == (
        "Cannot upgrade job x: the new program does not fit.", "Untouched."
    )  # fmt: skip


def test_a_bug_is_said_and_a_silence_is_heartbeats() -> None:
    stream = UpgradeStream(heartbeat=0.05)
    release = threading.Event()

    def upgrade() -> UpgradeOutcome:
        release.wait(10)
        raise KeyError("queries")

    stream.start(upgrade, "test upgrade")
    lines = stream.lines()
    assert [next(lines), next(lines)] == [b"\n", b"\n"]  # nothing yet: still at it
    release.set()
    rest = [read_event(line) for line in lines]
    kind, value = next(e for e in rest if e is not None)
    error = error_from_header(value)  # type: ignore[arg-type]
    assert kind == "error" and error is not None
    assert "flinkish web failed while it carried out the upgrade (KeyError" in error.message


def test_a_stopping_server_waits_for_the_upgrades_under_way() -> None:
    under_way = UpgradesUnderWay()
    under_way.wait()  # none: at once
    release, ended = threading.Event(), threading.Event()

    def upgrade() -> UpgradeOutcome:
        release.wait(10)
        ended.set()
        return UpgradeOutcome(Result.STABLE, JOB, UpgradeMode.SAVEPOINT)

    stream = UpgradeStream()
    under_way.start(stream, upgrade, "test upgrade")
    waiter = threading.Thread(target=under_way.wait)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not ended.is_set()  # still under way: the stop waits
    release.set()
    waiter.join(10)
    assert not waiter.is_alive() and ended.is_set()
