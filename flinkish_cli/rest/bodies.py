"""The JSON bodies of the REST messages, declared once: each is a class named as Flink's
(what Flink's errors name: "Request did not match expected format
StopWithSavepointRequestBody."), its fields with their names on the wire and their JSON
types. The server reads a request with :meth:`RequestBody.from_wire` (:mod:`flinkish_cli.web`)
and the REST job client writes one with :meth:`RequestBody.to_wire`
(:mod:`flinkish_cli.client.rest`, :mod:`flinkish_cli.client.remote`); the answers are read
and written the other way round: no field name of these bodies is written anywhere else
(tests/rest/test_bodies.py checks).

- the trigger requests (checkpoint, savepoint, stop, disposal) and :class:`TriggerResponse`;
- the answer to a trigger's status, :class:`AsynchronousOperationResult` (where the
  operation stands, :data:`IN_PROGRESS` or :data:`COMPLETED`, and what it gave: a
  :class:`SavepointInfo`, :class:`CheckpointInfo`, :class:`RescaleInfo` or
  :class:`AsynchronousOperationInfo`);
- flinkish's own :class:`JarUpload`.

Every field may be absent or ``null`` (None here), as in Flink's bodies; a body with a field
it does not declare, or a field of another JSON type, does not match (a JSON ``true`` is no
number). What a field's value must be beyond its type (a trigger id's 32 hexadecimal digits,
an absolute savepoint target) is the server's check, not the body's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

_Body = TypeVar("_Body", bound="RequestBody")


class BodyMismatch(ValueError):
    """A body that is not the message's: not a JSON object, an undeclared field, or a field
    of another type. Its text is Flink's answer (HTTP 400)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Request did not match expected format {name}.")


def wire(name: str, *types: type) -> Any:
    """A body's field: its name on the wire and the JSON types it takes (absent: None)."""
    return dataclasses.field(default=None, metadata={"wire": name, "types": types})


@dataclasses.dataclass(frozen=True)
class RequestBody:
    """A message's body: a frozen dataclass whose fields are declared with :func:`wire`."""

    #: the body's name in errors: its class's name (Flink's, or flinkish's own)
    NAME: ClassVar[str] = "RequestBody"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.NAME = cls.__name__

    @classmethod
    def wire_names(cls) -> dict[str, str]:
        """Each field's name on the wire, by attribute."""
        return {f.name: f.metadata["wire"] for f in dataclasses.fields(cls)}

    @classmethod
    def from_wire(cls: type[_Body], data: object, strict: bool = True) -> _Body:
        """The body of a decoded JSON document; :class:`BodyMismatch` if it is not one.
        Not ``strict`` (an answer read by a client): fields it does not declare are
        ignored, as a newer server may send more."""
        if not isinstance(data, dict):
            raise BodyMismatch(cls.NAME)
        fields = {f.metadata["wire"]: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            declared = fields.get(key)
            if declared is None:
                if not strict:
                    continue
                raise BodyMismatch(cls.NAME)
            types = declared.metadata["types"]
            if value is not None and (
                not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
            ):
                raise BodyMismatch(cls.NAME)
            values[declared.name] = value
        return cls(**values)

    def to_wire(self) -> dict[str, Any]:
        """The body as a JSON object, without the fields that are None."""
        names = self.wire_names()
        return {
            names[f.name]: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }


# -- Flink's trigger messages ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CheckpointTriggerRequestBody(RequestBody):
    """``POST /jobs/:jobid/checkpoints``."""

    checkpoint_type: str | None = wire("checkpointType", str)
    trigger_id: str | None = wire("triggerId", str)


@dataclasses.dataclass(frozen=True)
class StopWithSavepointRequestBody(RequestBody):
    """``POST /jobs/:jobid/stop``."""

    target_directory: str | None = wire("targetDirectory", str)
    drain: bool | None = wire("drain", bool)
    format_type: str | None = wire("formatType", str)
    trigger_id: str | None = wire("triggerId", str)


@dataclasses.dataclass(frozen=True)
class SavepointTriggerRequestBody(RequestBody):
    """``POST /jobs/:jobid/savepoints`` (``cancel-job``: cancel the job after the savepoint)."""

    target_directory: str | None = wire("target-directory", str)
    cancel_job: bool | None = wire("cancel-job", bool)
    format_type: str | None = wire("formatType", str)
    trigger_id: str | None = wire("triggerId", str)


@dataclasses.dataclass(frozen=True)
class SavepointDisposalRequest(RequestBody):
    """``POST /savepoint-disposal``."""

    savepoint_path: str | None = wire("savepoint-path", str)


@dataclasses.dataclass(frozen=True)
class TriggerResponse(RequestBody):
    """The answer to every trigger: the trigger's id, to poll its status with."""

    request_id: str | None = wire("request-id", str)


# -- the status of a trigger -----------------------------------------------------------------
#: Flink's ``QueueStatus.Id``: where an asynchronous operation stands
IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"


@dataclasses.dataclass(frozen=True)
class QueueStatus(RequestBody):
    """An operation's ``status``: ``{"id": "IN_PROGRESS" | "COMPLETED"}``."""

    id: str | None = wire("id", str)


@dataclasses.dataclass(frozen=True)
class AsynchronousOperationInfo(RequestBody):
    """What a finished disposal gives: nothing. Flink's carries a failure's cause; flinkish
    answers a failed operation with an error (HTTP 500) instead, and a client reads Flink's
    ``failure-cause`` as a field it does not declare."""


@dataclasses.dataclass(frozen=True)
class SavepointInfo(RequestBody):
    """What a finished savepoint (or stop with a savepoint) gives: its location."""

    location: str | None = wire("location", str)


@dataclasses.dataclass(frozen=True)
class CheckpointInfo(RequestBody):
    """What a finished checkpoint gives: its id."""

    checkpoint_id: int | None = wire("checkpointId", int)


@dataclasses.dataclass(frozen=True)
class RescaleInfo(RequestBody):
    """What a finished rescale gives (flinkish's own): the savepoint it restarted from."""

    savepoint: str | None = wire("savepoint", str)


@dataclasses.dataclass(frozen=True)
class AsynchronousOperationResult(RequestBody):
    """The answer to a trigger's status: ``{"status": {"id": ...}, "operation": {...}}``,
    the operation's information (one of the classes above) once it is COMPLETED."""

    status: dict[str, Any] | None = wire("status", dict)
    operation: dict[str, Any] | None = wire("operation", dict)

    @classmethod
    def in_progress(cls) -> AsynchronousOperationResult:
        """An operation still under way."""
        return cls(QueueStatus(IN_PROGRESS).to_wire())

    @classmethod
    def completed(cls, info: RequestBody) -> AsynchronousOperationResult:
        """A finished operation and what it gave."""
        return cls(QueueStatus(COMPLETED).to_wire(), info.to_wire())

    @property
    def state(self) -> str | None:
        """IN_PROGRESS, COMPLETED, or None where the answer names none."""
        return QueueStatus.from_wire(self.status or {}, strict=False).id

    def info(self, kind: type[_Body]) -> _Body:
        """The operation's information read as ``kind`` (fields it does not declare are
        ignored); :class:`BodyMismatch` where a field is of another type."""
        return kind.from_wire(self.operation or {}, strict=False)


# -- flinkish's own --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class JarUpload(RequestBody):
    """``POST /flinkish/jars/upload``: a program's zip, base64-encoded, and its name."""

    name: str | None = wire("name", str)
    archive: str | None = wire("archive", str)
