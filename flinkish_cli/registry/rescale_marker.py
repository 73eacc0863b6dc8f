"""A rescale under way: what the driver that starts it hands to the job's supervisor.

An in-place rescale keeps the job's JobID, as Flink's adaptive scheduler keeps its job when
it rescales: the driver stops its queries between micro-batches, takes a savepoint (the
safety net), writes this marker and exits; the supervisor reads it, starts the next driver
at the new parallelism, and that driver repartitions the job's own checkpoints (from the
savepoint when a checkpoint is missing or its repartition was interrupted)::

    <root>/<JobID>/_flinkish/rescale.json
    {"id": "<hex>", "from": 2, "to": 4, "savepoint": "<path>", "stage": "SAVEPOINTED",
     "time": <epoch ms>, "reason": "..."}

Stages, in order: ``SAVEPOINTED`` (the old driver is done; the supervisor starts the new
one), ``RESTARTED`` (a driver at ``to`` runs: it completes the rescale once every query
committed a batch), ``ROLLING_BACK`` (the new parallelism did not become stable: a driver
at ``from`` runs, from the same state). The marker is deleted when the rescale has ended
(completed, rolled back); its outcome stays in the job's rescale history. ``time`` is when
the old driver began stopping its queries for the rescale (or, for a marker written without
one, when it was written): a completed rescale's restart is measured from it
(:meth:`~flinkish_cli.registry.rescales.RescaleHistory.record_restart`). A marker that
cannot be read is no rescale (the supervisor then restarts the job as after any failure).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from flinkish_cli.registry.store import JobRegistry

MARKER_FILE = "rescale.json"
STAGES = ("SAVEPOINTED", "RESTARTED", "ROLLING_BACK")


@dataclass(frozen=True)
class RescaleMarker:
    """One rescale of a job, from the parallelism ``from_`` to ``to``."""

    id: str
    from_: int
    to: int
    savepoint: str
    stage: str = "SAVEPOINTED"
    time: int = 0
    reason: str = ""

    @property
    def running_at(self) -> int:
        """The parallelism the job's driver runs (or starts) at in this stage."""
        return self.from_ if self.stage == "ROLLING_BACK" else self.to

    def at(self, stage: str) -> RescaleMarker:
        return replace(self, stage=stage)

    def to_json(self) -> str:
        data = asdict(self)
        data["from"] = data.pop("from_")
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> RescaleMarker:
        """Parse a marker; ValueError when it is not one."""
        data: Any = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        numbers = (data.get("from"), data.get("to"))
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in numbers):
            raise ValueError("parallelisms must be positive integers")
        if data.get("stage") not in STAGES:
            raise ValueError(f"unknown stage {data.get('stage')!r}")
        if not isinstance(data.get("savepoint"), str) or not isinstance(data.get("id"), str):
            raise ValueError("id and savepoint must be strings")
        return cls(
            id=data["id"],
            from_=data["from"],
            to=data["to"],
            savepoint=data["savepoint"],
            stage=data["stage"],
            time=int(data.get("time") or 0),
            reason=str(data.get("reason") or ""),
        )


def _path(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), MARKER_FILE)


def read_marker(registry: JobRegistry, job_id: str) -> RescaleMarker | None:
    """The job's rescale under way; None when there is none (or it cannot be read)."""
    try:
        return RescaleMarker.from_json(registry.storage.read_text(_path(registry, job_id)))
    except Exception:
        return None


def write_marker(registry: JobRegistry, job_id: str, marker: RescaleMarker) -> None:
    if not marker.time:
        marker = replace(marker, time=int(time.time() * 1000))
    registry.storage.write_text(_path(registry, job_id), marker.to_json())


def clear_marker(registry: JobRegistry, job_id: str) -> None:
    """The rescale has ended: no marker (none there is fine)."""
    registry.storage.delete(_path(registry, job_id))
