"""Control requests from any shell to a running job's driver, through the storage.

A CLI that wants a job to cancel, stop or take a savepoint writes a request file::

    <root>/<JobID>/_flinkish/control/<request id>.request.json

The job's driver polls that directory (every :func:`poll_interval`: 0.1 s on a local file
system, 0.5 s on object stores and HDFS, where each poll is a request), carries it out,
and writes ``<request id>.response.json`` with the outcome, which the sender looks for
every :func:`answer_poll_interval`. Request ids sort by creation
time so the driver handles requests in order. Works across hosts with shared storage.

Requests expire, and the side that gets to a request first wins, so that a request is
carried out at most once and never long after its sender gave up:

- Every request has a deadline (:attr:`ControlRequest.expires`, epoch seconds): a waiting
  CLI sets it to the moment it gives up, a detached trigger gets a long one
  (:data:`DETACHED_TTL`), and a request without one expires :data:`DEFAULT_TTL` after it was
  created. :meth:`ControlChannel.pending` never returns an expired request; it deletes it.
- Before the driver carries a request out, :meth:`ControlChannel.pending` *claims* it by
  creating ``<request id>.claim`` exclusively. A CLI that gives up (time-out, Ctrl-C,
  SIGTERM) *withdraws* its request by creating the same file first
  (:meth:`ControlChannel.withdraw`): exactly one of the two succeeds, so a withdrawn request
  is never carried out, and a CLI that was too late knows the job had already started it.

Nothing is kept for long: a waiting CLI forgets its request once answered, withdrawn or
given up (request, claim and response); a detached trigger's files stay for its caller to
poll, and :meth:`ControlChannel.pending` deletes them :data:`FORGET_AFTER` after the request
was made, as it does a claim or response left alone by a forget cut short. So the control
directory of a job that runs for months holds the last two days' triggers at most.

Deadlines compare wall clocks, so hosts that share a registry need roughly synchronised
clocks (a skew of seconds only shortens or lengthens a deadline by as much).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from flinkish_cli.registry.store import JobRegistry

CONTROL_DIR = "control"
POLL_SECONDS = 0.5
LOCAL_POLL_SECONDS = 0.1
#: Lifetime of a request whose sender set no deadline (the driver answers in well under a
#: second when it runs; a request older than this was meant for a driver long gone).
DEFAULT_TTL = 600.0
#: Lifetime of a detached trigger (``savepoint -detached``, ``stop -detached``): nobody waits
#: for it, the job carries it out whenever its driver next polls, within this time.
DETACHED_TTL = 24 * 3600.0

#: How long after a request was made its files are kept at most (its response is read by
#: then: a detached trigger is carried out within :data:`DETACHED_TTL`).
FORGET_AFTER = 2 * DETACHED_TTL

REQUEST, RESPONSE, CLAIM = "request.json", "response.json", "claim"


def poll_interval(storage: object) -> float:
    """How often the driver looks for control requests on ``storage``."""
    from flinkish_cli.storage import LocalStorage

    return LOCAL_POLL_SECONDS if isinstance(storage, LocalStorage) else POLL_SECONDS


def answer_poll_interval(storage: object) -> float:
    """How often a sender looks for its request's response on ``storage``: a fifth of the
    driver's interval on a local file system (a ``stat``; the answer is seen within 20 ms
    of the driver's), half of it where each look is a request (object stores, HDFS)."""
    from flinkish_cli.storage import LocalStorage

    if isinstance(storage, LocalStorage):
        return LOCAL_POLL_SECONDS / 5
    return POLL_SECONDS / 2


def new_request_id() -> str:
    """32 hex digits, as Flink's trigger ids: the creation time in ns (16 digits, so that ids
    sort by it), then 16 random ones."""
    return f"{time.time_ns():016x}{uuid.uuid4().hex[:16]}"


def is_request_id(text: str) -> bool:
    """Whether ``text`` can be a request id of this format (Flink's trigger id form)."""
    return len(text) == 32 and all(c in "0123456789abcdef" for c in text)


@dataclass
class ControlRequest:
    """An action asked of a job: ``cancel``, ``stop``, ``savepoint`` or ``checkpoint``.

    ``expires`` is the wall-clock deadline after which the driver must not carry the request
    out (None: :data:`DEFAULT_TTL` after ``created``).
    """

    action: str
    args: dict[str, Any] = field(default_factory=dict)
    request_id: str = field(default_factory=new_request_id)
    created: float = field(default_factory=time.time)
    expires: float | None = None

    def deadline(self) -> float:
        """When the request expires (epoch seconds)."""
        return self.expires if self.expires is not None else self.created + DEFAULT_TTL

    def expired(self, now: float | None = None) -> bool:
        """Whether the request is past its deadline."""
        return (time.time() if now is None else now) > self.deadline()

    @classmethod
    def from_json(cls, text: str) -> ControlRequest:
        """Parse a request file; :class:`ValueError` when it is not a valid request."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        request = cls(**{k: v for k, v in data.items() if k in known})
        if not isinstance(request.action, str) or not isinstance(request.args, dict):
            raise ValueError("no action")
        if not isinstance(request.request_id, str) or not _is_number(request.created):
            raise ValueError("no request id or creation time")
        if request.expires is not None and not _is_number(request.expires):
            raise ValueError("a deadline that is not a number")
        return request


@dataclass
class ControlResponse:
    """The driver's answer: ``ok`` with a result (e.g. a savepoint path), or an error."""

    request_id: str
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def from_json(cls, text: str, request_id: str) -> ControlResponse:
        """Parse a response file; :class:`ValueError` when it is not a valid answer to
        ``request_id``."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        ok, result, error = data.get("ok"), data.get("result", {}), data.get("error")
        if data.get("request_id") != request_id:
            raise ValueError("it answers another request")
        if not isinstance(ok, bool) or not isinstance(result, dict):
            raise ValueError("no outcome")
        if error is not None and not isinstance(error, str):
            raise ValueError("an error that is not text")
        return cls(request_id=request_id, ok=ok, result=result, error=error)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


class ControlChannel:
    """Requests and responses of one job."""

    def __init__(self, registry: JobRegistry, job_id: str) -> None:
        from flinkish_cli.storage import join

        self.registry = registry
        self.job_id = job_id
        self.dir = join(registry.meta_dir(job_id), CONTROL_DIR)
        self._join = join

    @property
    def storage(self) -> Any:
        return self.registry.storage

    def _path(self, request_id: str, kind: str) -> str:
        return self._join(self.dir, f"{request_id}.{kind}")

    # -- CLI side ------------------------------------------------------------------------
    def send(self, request: ControlRequest) -> ControlRequest:
        """Write a request for the driver."""
        self.storage.write_text(
            self._path(request.request_id, REQUEST), json.dumps(asdict(request))
        )
        return request

    def response(self, request_id: str) -> ControlResponse | None:
        """The driver's response, if it has written one.

        A response file that cannot be read as an answer to this request (damaged, or not
        flinkish's) gives a failed response that says so, never an internal error.
        """
        path = self._path(request_id, RESPONSE)
        try:
            text = self.storage.read_text(path)
        except FileNotFoundError:
            return None
        except ValueError as error:  # not UTF-8
            return _unreadable(request_id, path, error)
        try:
            return ControlResponse.from_json(text, request_id)
        except (ValueError, TypeError, RecursionError) as error:
            return _unreadable(request_id, path, error)

    def withdraw(self, request_id: str) -> bool:
        """Take a request back before the driver claims it.

        True when it is withdrawn (the driver will never carry it out); False when the driver
        had already claimed it (it may still be carried out, or be under way).
        """
        claim = self._path(request_id, CLAIM)
        marker = json.dumps({"withdrawn": True, "by": _me(), "at": time.time()})
        if not self.storage.create_exclusive(claim, marker.encode()):
            return self._claim_is_withdrawal(claim)
        self.storage.delete(self._path(request_id, REQUEST))
        self.storage.delete(claim)
        return True

    def state_of(self, request_id: str) -> str | None:
        """Where a request stands: ``answered``, ``pending`` (sent, or claimed and under
        way), or None when this job has no such request (never sent, or forgotten)."""
        if self.storage.exists(self._path(request_id, RESPONSE)):
            return "answered"
        if self.storage.exists(self._path(request_id, REQUEST)):
            return "pending"
        return None

    def claimed(self, request_id: str) -> bool:
        """Whether a driver (or supervisor) has claimed the request."""
        return self.storage.exists(self._path(request_id, CLAIM))

    def forget(self, request_id: str) -> None:
        """Remove a request that has been answered, with its claim and response."""
        for kind in (REQUEST, CLAIM, RESPONSE):
            self.storage.delete(self._path(request_id, kind))

    def _claim_is_withdrawal(self, claim: str) -> bool:
        try:
            return bool(json.loads(self.storage.read_text(claim)).get("withdrawn"))
        except (FileNotFoundError, ValueError, TypeError, AttributeError):
            return False

    def waiting(self, now: float | None = None) -> int:
        """How many requests wait for the driver (sent, neither claimed nor answered); those
        past their deadline are deleted first, so requests to a driver that died are swept
        by the next sender instead of staying for ever."""
        now = time.time() if now is None else now
        names = {info.name for info in self.storage.list(self.dir)}
        count = 0
        for name in names:
            if not name.endswith("." + REQUEST):
                continue
            request_id = name[: -len("." + REQUEST)]
            if f"{request_id}.{RESPONSE}" in names or f"{request_id}.{CLAIM}" in names:
                continue
            try:
                request = ControlRequest.from_json(
                    self.storage.read_text(self._path(request_id, REQUEST))
                )
            except FileNotFoundError:
                continue
            except (ValueError, TypeError, RecursionError):
                request = None
            expired = request is None or request.expired(now)
            if expired and self.withdraw(request_id):
                continue
            count += 1
        return count

    # -- driver side ---------------------------------------------------------------------
    def pending(self) -> list[ControlRequest]:
        """Requests to carry out now, oldest first; each is claimed for the caller.

        A request is returned at most once, to one caller: it must then be answered with
        :meth:`respond`. Requests past their deadline are deleted, never returned; so are
        request files that cannot be read as a request.
        """
        storage = self.storage
        files = {info.name: info for info in storage.list(self.dir)}
        names = set(files)
        if not names:
            return []
        now = time.time()
        requests = []
        for name in sorted(names):
            if not name.endswith("." + REQUEST):
                self._sweep(files[name], names, now)
                continue
            request_id = name[: -len("." + REQUEST)]
            if f"{request_id}.{RESPONSE}" in names or f"{request_id}.{CLAIM}" in names:
                if now - made(files[name]) > FORGET_AFTER:
                    self.forget(request_id)  # answered or claimed long ago: nobody reads it
                continue
            claim = self._path(request_id, CLAIM)
            marker = json.dumps({"by": _me(), "at": now})
            if not storage.create_exclusive(claim, marker.encode()):
                continue  # withdrawn, or claimed by another reader
            try:
                request = ControlRequest.from_json(storage.read_text(self._join(self.dir, name)))
            except FileNotFoundError:  # withdrawn between the listing and the claim
                storage.delete(claim)
                continue
            except (ValueError, TypeError, RecursionError):
                self.forget(request_id)  # damaged, or not flinkish's
                continue
            if request.request_id != request_id or request.expired(now):
                self.forget(request_id)
                continue
            requests.append(request)
        return requests

    def _sweep(self, info: Any, names: set[str], now: float) -> None:
        """Delete a claim or response whose request is gone (a forget or a withdrawal cut
        short) once it is :data:`FORGET_AFTER` old: nothing reads it any more."""
        request_id, _, kind = info.name.partition(".")
        if kind not in (RESPONSE, CLAIM) or f"{request_id}.{REQUEST}" in names:
            return
        if now - made(info) > FORGET_AFTER:
            self.storage.delete(info.path)

    def respond(self, response: ControlResponse) -> None:
        """Answer a request."""
        self.storage.write_text(
            self._path(response.request_id, RESPONSE), json.dumps(asdict(response))
        )


def made(info: Any) -> float:
    """When a file of a listing (a :class:`~flinkish_cli.storage.FileInfo`) was written:
    its modification time, or where the storage gives none, the time in its name's request
    id (a trigger id a client chose may hold no time at all: 0)."""
    if info.mtime is not None:
        return float(info.mtime)
    return _created_of(info.name.split(".", 1)[0])


def _created_of(request_id: str) -> float:
    """When a request was created, from its id (32 hex digits, or an older flinkish's
    ``<time in ns>-<random>``); 0 if unknown."""
    try:
        if is_request_id(request_id):
            return int(request_id[:16], 16) / 1e9
        return int(request_id.split("-", 1)[0]) / 1e9
    except ValueError:
        return 0.0


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _unreadable(request_id: str, path: str, error: Exception) -> ControlResponse:
    return ControlResponse(
        request_id,
        ok=False,
        error=f"its response ({path}) is unreadable: {error}",
        result={"unreadable": True},
    )
