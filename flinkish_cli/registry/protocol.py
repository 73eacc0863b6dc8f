"""What a job's driver (or its supervisor) can be asked, typed, for both ends of the channel.

A command is one of the dataclasses below; :func:`to_request` puts it in the envelope that
:mod:`.control` carries (a :class:`~.control.ControlRequest`: an action and its arguments as
JSON), and :func:`command_of` takes it out again on the job's side. The answers with a
result are :class:`SavepointDone` and :class:`CheckpointDone`. The time-outs of both ends
live here, so the client always waits longer than the driver works.

The JSON on the wire is the one flinkish has always written (``{"action": "stop", "args":
{"savepoint": true, "target": ...}}``), so a job started by an older flinkish still
understands a newer client.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.registry.control import ControlRequest


class Action(str, enum.Enum):
    """The actions on the wire."""

    CANCEL = "cancel"
    STOP = "stop"
    SAVEPOINT = "savepoint"
    CHECKPOINT = "checkpoint"
    RESCALE = "rescale"


#: How long the driver waits for the next committed batch of every query (``checkpoint``).
CHECKPOINT_WAIT = 600.0
#: How long the client waits for the answer to ``checkpoint``: the driver's wait, and then
#: some for the answer to travel.
CHECKPOINT_TIMEOUT = CHECKPOINT_WAIT + 60.0
#: How long the client waits for a savepoint (Flink's client waits ``client.timeout``; a
#: savepoint of large state takes longer, so flinkish waits up to an hour).
SAVEPOINT_TIMEOUT = 3600.0
#: How long the client waits for a cancelled job to end.
CANCEL_TIMEOUT = 120.0
#: How long a stopped job has to reach its final state once its savepoint is complete.
END_TIMEOUT = 120.0


@dataclass(frozen=True)
class Cancel:
    """End the job at once: CANCELED."""

    action = Action.CANCEL


@dataclass(frozen=True)
class Stop:
    """End the job gracefully without a savepoint: CANCELED, with ``reason`` as its cause (a
    supervisor's or an attached CLI's SIGTERM)."""

    reason: str = "Stopped by user."
    action = Action.STOP


@dataclass(frozen=True)
class StopWithSavepoint:
    """Take a savepoint into ``target`` and end the job: FINISHED, or CANCELED for Flink's
    deprecated ``cancel -s``; ``drain`` (``stop -d``) first lets the sources run dry."""

    target: str
    drain: bool = False
    format_type: str = "CANONICAL"
    end_state: str = "FINISHED"
    detached: bool = False
    explicit_target: bool = False  # the user named the directory (retention leaves it)
    upgrade: bool = False  # taken by ``flinkish upgrade`` (its history says UPGRADE)
    action = Action.STOP


@dataclass(frozen=True)
class TriggerSavepoint:
    """Take a savepoint into ``target``; the job keeps running."""

    target: str
    format_type: str = "CANONICAL"
    detached: bool = False
    explicit_target: bool = False  # the user named the directory (retention leaves it)
    action = Action.SAVEPOINT


@dataclass(frozen=True)
class TriggerCheckpoint:
    """Wait, at most ``timeout`` seconds, for the next committed batch of every query."""

    timeout: float = CHECKPOINT_WAIT
    action = Action.CHECKPOINT


@dataclass(frozen=True)
class Rescale:
    """Rescale the job in place to ``parallelism`` (same JobID: a savepoint, the state
    repartitioned, the next driver at the new parallelism); ``reason`` is recorded."""

    parallelism: int
    reason: str = "Asked for by user."
    action = Action.RESCALE


Command = Cancel | Stop | StopWithSavepoint | TriggerSavepoint | TriggerCheckpoint | Rescale


def ends_at_once(command: Command) -> bool:
    """Whether ``command`` ends the job without a savepoint: answered at once, even while a
    savepoint is being taken, and by a supervisor whose driver is down."""
    return isinstance(command, (Cancel, Stop))


def to_request(command: Command) -> ControlRequest:
    """``command`` in the channel's envelope."""
    args: dict[str, Any]
    if isinstance(command, Cancel):
        args = {}
    elif isinstance(command, Stop):
        args = {"reason": command.reason}
    elif isinstance(command, StopWithSavepoint):
        args = {
            "savepoint": True,
            "target": command.target,
            "drain": command.drain,
            "format_type": command.format_type,
        }
        if command.end_state != "FINISHED":  # written only when not the default, as always
            args["end_state"] = command.end_state
        if command.detached:
            args["detached"] = True
        if command.explicit_target:
            args["explicit_target"] = True
        if command.upgrade:
            args["upgrade"] = True
    elif isinstance(command, TriggerSavepoint):
        args = {"target": command.target, "format_type": command.format_type}
        if command.detached:
            args["detached"] = True
        if command.explicit_target:
            args["explicit_target"] = True
    elif isinstance(command, Rescale):
        args = {"parallelism": command.parallelism, "reason": command.reason}
    else:
        args = {"timeout": command.timeout}
    return ControlRequest(command.action.value, args)


def command_of(request: ControlRequest) -> Command:
    """The command a request carries; :class:`ValueError` naming what is wrong when it is
    not one (an unknown action, a missing or mistyped argument)."""
    try:
        action = Action(request.action)
    except ValueError:
        raise ValueError(f"Unknown '{request.action}'.") from None
    args = request.args
    if action is Action.CANCEL:
        return Cancel()
    if action is Action.STOP and not args.get("savepoint"):
        return Stop(_text(args, "reason", Stop.reason))
    if action is Action.STOP:
        end_state = _text(args, "end_state", "FINISHED").upper()
        return StopWithSavepoint(
            target=_target(args),
            drain=bool(args.get("drain")),
            format_type=_text(args, "format_type", "CANONICAL"),
            end_state=end_state if end_state in ("FINISHED", "CANCELED") else "FINISHED",
            detached=bool(args.get("detached")),
            explicit_target=bool(args.get("explicit_target")),
            upgrade=args.get("upgrade") is True,
        )
    if action is Action.SAVEPOINT:
        return TriggerSavepoint(
            target=_target(args),
            format_type=_text(args, "format_type", "CANONICAL"),
            detached=bool(args.get("detached")),
            explicit_target=bool(args.get("explicit_target")),
        )
    if action is Action.RESCALE:
        parallelism = args.get("parallelism")
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise ValueError(f"A parallelism must be a positive integer, not {parallelism!r}.")
        return Rescale(parallelism, _text(args, "reason", Rescale.reason))
    timeout = args.get("timeout") or CHECKPOINT_WAIT
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"A checkpoint time-out must be a positive number, not {timeout!r}.")
    return TriggerCheckpoint(float(timeout))


def _text(args: dict[str, Any], name: str, default: str) -> str:
    value = args.get(name)
    return value if isinstance(value, str) and value else default


def _target(args: dict[str, Any]) -> str:
    target = args.get("target")
    if not isinstance(target, str) or not target:
        raise ValueError("A savepoint request names no target directory.")
    return target


@dataclass(frozen=True)
class SavepointDone:
    """A savepoint was taken (trigger, or stop with a savepoint): where it is."""

    path: str

    def to_result(self) -> dict[str, Any]:
        return {"path": self.path}

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> SavepointDone:
        """:class:`ValueError` when the answer names no savepoint path."""
        path = result.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError("it names no savepoint path")
        return cls(path)


@dataclass(frozen=True)
class CheckpointDone:
    """Every query committed a batch: the job's checkpoint directory and each query's last
    committed batch."""

    path: str
    batches: dict[str, int] = field(default_factory=dict)

    @property
    def checkpoint_id(self) -> int:
        """The checkpoint's number as Flink counts them: the highest committed micro-batch
        id plus one (batch 0 is the first checkpoint)."""
        return max(self.batches.values()) + 1 if self.batches else 0

    def to_result(self) -> dict[str, Any]:
        return {"path": self.path, "batches": dict(self.batches)}

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> CheckpointDone:
        """:class:`ValueError` when the answer names no committed batches."""
        batches = result.get("batches")
        if not isinstance(batches, dict) or not all(
            isinstance(b, int) and not isinstance(b, bool) for b in batches.values()
        ):
            raise ValueError("its answer names no committed batches")
        path = result.get("path")
        return cls(path if isinstance(path, str) else "", dict(batches))
