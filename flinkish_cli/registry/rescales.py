"""A job's rescale history: the autoscaler's latest evaluation and its rescale decisions::

    <root>/<JobID>/_flinkish/rescales.json
    {"version": 1, "latest": {<the latest evaluation>} | null,
     "rescales": [{<record>}, ...]}                           (oldest first)

``latest`` is the autoscaler's last evaluation, whatever it decided (overwritten by each:
what a dashboard shows as "why not"). ``rescales`` holds the decisions that changed, or in
metrics-only mode would have changed, the job's parallelism: the newest
:data:`MAX_RESCALES`, oldest dropped first. A record, and how it maps onto Flink 2.3's
rescale history (FLIP-495, ``/jobs/:jobid/rescales/history`` and ``/details/:rescaleuuid``,
whose ``/overview`` and ``/summary`` count these records)::

    id          uuid hex             rescaleUuid
    time        epoch ms             startTimestampInMillis
    end-time    epoch ms | null      endTimestampInMillis
    from, to    job-wide parallelism each vertex's parallelism before and after
    outcome     see below            terminalState (null while PENDING or IN_PROGRESS)
    direction   "up" | "down"        (flinkish's)
    reason      one sentence         terminatedReason's place for a human; the trigger is
                                     always Flink's UPDATE_REQUIREMENT (the autoscaler's)
    mode        "scaling" | "metrics-only"
    figures     the metrics the decision used (flinkish's)
    restart-duration  ms | null      (flinkish's; Flink's ScalingRecord.restartDuration)

``restart-duration`` is the rescale's restart as the job measured it, on a COMPLETED record
only (:meth:`RescaleHistory.record_restart`): from when the old driver began stopping its
queries for it (between micro-batches, before its savepoint) to when the new driver had
every query's first batch at the new parallelism behind it, the moment the rescale
completed. It is null on every other record; a record written before it existed (without
the key), or with a value that is not a duration, reads as null: the file's version is
unchanged.

Outcomes: PENDING (decided, not started), IN_PROGRESS (savepoint and restart under way),
COMPLETED, ROLLED_BACK (the restart at the new parallelism failed and the job went back to
the old one), FAILED, NOT_APPLIED (metrics-only: never applied). In Flink's terms COMPLETED
is COMPLETED, ROLLED_BACK and FAILED are FAILED, NOT_APPLIED is IGNORED.

The job's driver is the one writer: it reads the file (:meth:`RescaleHistory.read`),
changes it (:meth:`~RescaleHistory.record_evaluation`, :meth:`~RescaleHistory.append`,
:meth:`~RescaleHistory.update_outcome`) and writes it back whole
(:meth:`~RescaleHistory.write`). Reading is forgiving, as :mod:`.series`' is: a damaged or
foreign file is an empty history, and a damaged record is dropped.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.errors import StorageError
from flinkish_cli.registry.store import JobRegistry

RESCALES_FILE = "rescales.json"
VERSION = 1
#: Records kept per job.
MAX_RESCALES = 100
SCALING, METRICS_ONLY = "scaling", "metrics-only"


class Outcome(str, enum.Enum):
    """Where a rescale decision got to (see the module docstring)."""

    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    ROLLED_BACK = "ROLLED_BACK"
    FAILED = "FAILED"
    NOT_APPLIED = "NOT_APPLIED"

    @property
    def final(self) -> bool:
        return self not in (Outcome.PENDING, Outcome.IN_PROGRESS)


@dataclass
class RescaleRecord:
    """One decision that changed, or would have changed, the job's parallelism."""

    id: str
    time: int
    from_parallelism: int
    to_parallelism: int
    direction: str
    reason: str
    mode: str
    outcome: Outcome
    end_time: int | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    #: the measured restart, ms (see the module docstring); None: not measured
    restart_duration: int | None = None

    @classmethod
    def new(
        cls,
        time: float,
        from_parallelism: int,
        to_parallelism: int,
        direction: str,
        reason: str,
        figures: dict[str, Any],
        applied: bool,
    ) -> RescaleRecord:
        """A new record made at ``time`` (epoch s): PENDING when it is to be applied, else
        NOT_APPLIED and ended (metrics-only)."""
        ms = int(time * 1000)
        return cls(
            id=uuid.uuid4().hex,
            time=ms,
            from_parallelism=from_parallelism,
            to_parallelism=to_parallelism,
            direction=direction,
            reason=reason,
            mode=SCALING if applied else METRICS_ONLY,
            outcome=Outcome.PENDING if applied else Outcome.NOT_APPLIED,
            end_time=None if applied else ms,
            figures=figures,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "end-time": self.end_time,
            "from": self.from_parallelism,
            "to": self.to_parallelism,
            "direction": self.direction,
            "reason": self.reason,
            "mode": self.mode,
            "outcome": self.outcome.value,
            "figures": self.figures,
            "restart-duration": self.restart_duration,
        }

    @classmethod
    def from_dict(cls, data: Any) -> RescaleRecord | None:
        """The record in ``data``; None when it is not one."""
        try:
            end = data["end-time"]
            record = cls(
                id=str(data["id"]),
                time=_int(data["time"]),
                from_parallelism=_int(data["from"]),
                to_parallelism=_int(data["to"]),
                direction=str(data["direction"]),
                reason=str(data["reason"]),
                mode=str(data["mode"]),
                outcome=Outcome(data["outcome"]),
                end_time=None if end is None else _int(end),
                figures=data.get("figures") if isinstance(data.get("figures"), dict) else {},
                restart_duration=_duration(data.get("restart-duration")),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return record if record.mode in (SCALING, METRICS_ONLY) else None


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"not an integer: {value!r}")
    return value


def _duration(value: Any) -> int | None:
    """A measured duration (ms); None when there is none, or it is not one (an optional
    figure: a bad one does not cost the record)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass
class RescaleHistory:
    """A job's latest evaluation and its rescale records, oldest first."""

    latest: dict[str, Any] | None = None
    rescales: list[RescaleRecord] = field(default_factory=list)

    def record_evaluation(self, evaluation: dict[str, Any]) -> None:
        """Replace the latest evaluation (a decision's JSON, and whatever the caller adds)."""
        self.latest = evaluation

    def append(self, record: RescaleRecord) -> None:
        """Add a record, keeping the newest :data:`MAX_RESCALES`."""
        self.rescales.append(record)
        del self.rescales[:-MAX_RESCALES]

    def find(self, record_id: str) -> RescaleRecord | None:
        return next((r for r in self.rescales if r.id == record_id), None)

    def update_outcome(self, record_id: str, outcome: Outcome, end_time: float | None) -> bool:
        """Set a record's outcome (and its end, epoch s, for a final one); False when the
        history holds no such record (dropped, or never written)."""
        record = self.find(record_id)
        if record is None:
            return False
        record.outcome = outcome
        record.end_time = None if end_time is None else int(end_time * 1000)
        return True

    def record_restart(self, record_id: str, stopped: float, running: float) -> bool:
        """Measure a completed rescale's restart onto its record: from ``stopped`` (epoch s,
        when the job began stopping for it) to ``running`` (when it ran stable at the new
        parallelism). False when the history holds no such COMPLETED record, or ``stopped``
        is unknown (0) or after ``running``."""
        record = self.find(record_id)
        if record is None or record.outcome is not Outcome.COMPLETED:
            return False
        if stopped <= 0 or running < stopped:
            return False
        record.restart_duration = round((running - stopped) * 1000)
        return True

    def last_change(self) -> RescaleRecord | None:
        """The newest record that changed the parallelism (COMPLETED)."""
        done = [r for r in self.rescales if r.outcome is Outcome.COMPLETED]
        return done[-1] if done else None

    def to_json(self) -> str:
        document = {
            "version": VERSION,
            "latest": self.latest,
            "rescales": [r.to_dict() for r in self.rescales],
        }
        return json.dumps(document, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> RescaleHistory:
        """The history in ``text``; an empty one when it is not one (damaged, foreign)."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return cls()
        latest = data.get("latest")
        raw = data.get("rescales")
        records = [RescaleRecord.from_dict(r) for r in raw] if isinstance(raw, list) else []
        return cls(
            latest if isinstance(latest, dict) else None,
            [r for r in records if r is not None][-MAX_RESCALES:],
        )

    @classmethod
    def read(cls, registry: JobRegistry, job_id: str) -> RescaleHistory:
        """The job's history; empty when it has none or the file cannot be read."""
        try:
            return cls.from_json(registry.storage.read_text(_path(registry, job_id)))
        except (OSError, ValueError, StorageError):  # missing, not text, storage down
            return cls()

    def write(self, registry: JobRegistry, job_id: str) -> None:
        """Replace the job's history file."""
        registry.storage.write_text(_path(registry, job_id), self.to_json())


def _path(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), RESCALES_FILE)
