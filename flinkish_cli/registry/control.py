"""Control requests from any shell to a running job's driver, through the storage.

A CLI that wants a job to cancel, stop or take a savepoint writes a request file::

    <root>/<JobID>/_flinkish/control/<request id>.request.json

The job's driver polls that directory (every :func:`poll_interval`: 0.1 s on a local file
system, 0.5 s on object stores and HDFS, where each poll is a request), carries it out,
and writes ``<request id>.response.json`` with the outcome. Request ids sort by creation
time so the driver handles requests in order. Works across hosts with shared storage.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from flinkish_cli.registry.store import JobRegistry

CONTROL_DIR = "control"
POLL_SECONDS = 0.5
LOCAL_POLL_SECONDS = 0.1


def poll_interval(storage: object) -> float:
    """How often to look for control requests and responses on ``storage``."""
    from flinkish_cli.storage import LocalStorage

    return LOCAL_POLL_SECONDS if isinstance(storage, LocalStorage) else POLL_SECONDS


@dataclass
class ControlRequest:
    """An action asked of a job: ``cancel``, ``stop``, ``savepoint`` or ``checkpoint``."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)
    request_id: str = field(default_factory=lambda: f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}")
    created: float = field(default_factory=time.time)


@dataclass
class ControlResponse:
    """The driver's answer: ``ok`` with a result (e.g. a savepoint path), or an error."""

    request_id: str
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class ControlChannel:
    """Requests and responses of one job."""

    def __init__(self, registry: JobRegistry, job_id: str) -> None:
        from flinkish_cli.storage import join

        self.registry = registry
        self.job_id = job_id
        self.dir = join(registry.meta_dir(job_id), CONTROL_DIR)
        self._join = join

    def _path(self, request_id: str, kind: str) -> str:
        return self._join(self.dir, f"{request_id}.{kind}.json")

    # -- CLI side ------------------------------------------------------------------------
    def send(self, request: ControlRequest) -> ControlRequest:
        """Write a request for the driver."""
        self.registry.storage.write_text(
            self._path(request.request_id, "request"), json.dumps(asdict(request))
        )
        return request

    def response(self, request_id: str) -> ControlResponse | None:
        """The driver's response, if it has written one."""
        try:
            text = self.registry.storage.read_text(self._path(request_id, "response"))
        except FileNotFoundError:
            return None
        return ControlResponse(**json.loads(text))

    # -- driver side ---------------------------------------------------------------------
    def pending(self) -> list[ControlRequest]:
        """Requests without a response, oldest first."""
        storage = self.registry.storage
        if not storage.exists(self.dir):
            return []
        names = {info.name for info in storage.list(self.dir)}
        requests = []
        for name in sorted(names):
            if not name.endswith(".request.json"):
                continue
            request_id = name[: -len(".request.json")]
            if f"{request_id}.response.json" in names:
                continue
            try:
                data = json.loads(storage.read_text(self._join(self.dir, name)))
                requests.append(ControlRequest(**data))
            except (FileNotFoundError, ValueError, TypeError):
                continue
        return requests

    def respond(self, response: ControlResponse) -> None:
        """Answer a request."""
        self.registry.storage.write_text(
            self._path(response.request_id, "response"), json.dumps(asdict(response))
        )
