"""What ``flinkish upgrade`` is asked, what its user sees while it goes on, and how it ended.

:class:`UpgradeRequest` (the job, the new program with ``run``'s options, the
:class:`UpgradeMode`, whether to roll back), the :class:`UpgradePresenter` the front end
passes in, and the :class:`UpgradeOutcome`: a :class:`Result` with the final line for scripts
(:attr:`UpgradeOutcome.line`) and the document for ``--output json``
(:meth:`UpgradeOutcome.summary`). The upgrade itself is :mod:`flinkish_cli.client.upgrade`.

Through ``flinkish web`` the request travels as the body of ``/flinkish/jars/:id/upgrade``
(:meth:`UpgradeRequest.to_json`, the new program as the upload's run request) and the
outcome comes back whole (:meth:`UpgradeOutcome.to_json`); both are checked on arrival.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from flinkish_cli.errors import UsageError
from flinkish_cli.registry.jobid import parse_job_id

if TYPE_CHECKING:
    from flinkish_cli.submission.submit import RunRequest


class UpgradeMode(str, enum.Enum):
    """How the state crosses the upgrade (the operator's ``upgradeMode``)."""

    SAVEPOINT = "savepoint"
    LAST_STATE = "last-state"
    STATELESS = "stateless"


class Result(str, enum.Enum):
    """How an upgrade ended; only STABLE exits 0."""

    STABLE = "STABLE"  # the new program runs and is stable
    ROLLED_BACK = "ROLLED_BACK"  # the previous program runs again
    UNSTABLE = "UNSTABLE"  # the new program is left to its restart strategy
    FAILED = "FAILED"  # neither program runs


@dataclass
class UpgradeRequest:
    """What ``flinkish upgrade`` was asked."""

    job_id: str
    program: RunRequest  # the new program, with run's options
    mode: UpgradeMode = UpgradeMode.SAVEPOINT
    savepoint_dir: str | None = None  # --savepointPath (else the configured directory)
    rollback: bool = True  # --no-rollback: False

    def to_json(self, run: dict[str, Any]) -> dict[str, Any]:
        """The request as flinkish web's upgrade route takes it; ``run`` is the new
        program's run request (:class:`~flinkish_cli.submission.upload.UploadedRun`'s)."""
        return {
            "jobId": self.job_id,
            "upgradeMode": self.mode.value,
            "savepointPath": self.savepoint_dir,
            "rollback": self.rollback,
            "run": run,
        }

    @classmethod
    def from_json(cls, body: Any, program: RunRequest) -> UpgradeRequest:
        """The route's body, checked (:class:`UsageError` naming what is wrong), for the new
        program ``program`` (the request its ``run`` makes, which the caller reads)."""
        if not isinstance(body, dict):
            raise UsageError("The upgrade request is not a JSON object.")
        job_id, mode = body.get("jobId"), body.get("upgradeMode", "savepoint")
        if not isinstance(job_id, str):
            raise UsageError("The upgrade request names no job (jobId).")
        modes = [m.value for m in UpgradeMode]
        if mode not in modes:
            raise UsageError(f"upgradeMode must be one of {', '.join(modes)}.")
        target = body.get("savepointPath")
        if target is not None and not isinstance(target, str):
            raise UsageError("savepointPath must be a string.")
        rollback = body.get("rollback", True)
        if not isinstance(rollback, bool):
            raise UsageError("rollback must be true or false.")
        return cls(parse_job_id(job_id), program, UpgradeMode(mode), target, rollback)


@dataclass
class UpgradeOutcome:
    """What became of an upgrade; ``line`` is its final line for scripts."""

    result: Result
    job_id: str  # the job upgraded
    mode: UpgradeMode
    new_job_id: str | None = None
    rollback_job_id: str | None = None
    source: str | None = None  # the savepoint or checkpoints the new program started from
    reason: str | None = None  # why the new program was not stable
    program: str = ""
    previous_program: str = ""
    notes: list[str] = field(default_factory=list)
    new_job_dir: str = ""  # the new job's checkpoints

    @property
    def line(self) -> str:
        start = _from(self.mode, self.source)
        new = f"job {self.new_job_id} ({self.program})"
        if self.result is Result.STABLE:
            return f"Upgrade of job {self.job_id} completed: {new} runs {start} and is stable."
        if self.result is Result.ROLLED_BACK:
            return (
                f"Upgrade of job {self.job_id} rolled back: {new} {self.reason}; job "
                f"{self.rollback_job_id} runs the previous program ({self.previous_program}) "
                f"{start}."
            )
        if self.result is Result.UNSTABLE:
            return (
                f"Upgrade of job {self.job_id} is not stable: {new} {self.reason}; it is left "
                f"to its restart strategy (it started {start}; once it has ended, resume "
                f"from its checkpoints with 'flinkish run -s {self.new_job_dir} ...')."
            )
        resume = f" -s {self.source}" if self.source else ""
        return (
            f"Upgrade of job {self.job_id} failed: {new} {self.reason}. Resume by hand: "
            f"flinkish run{resume} {self.previous_program or '<job.py>'} ..."
        )

    def summary(self) -> dict[str, Any]:
        """The outcome for ``--output json``."""
        return {
            "result": self.result.value,
            "jid": self.job_id,
            "upgrade-mode": self.mode.value,
            "new-jid": self.new_job_id,
            "rollback-jid": self.rollback_job_id,
            "restored-from": self.source,
            "reason": self.reason,
            "program": self.program,
            "previous-program": self.previous_program or None,
            "notes": list(self.notes),
        }

    def to_json(self) -> dict[str, Any]:
        """The whole outcome (what flinkish web sends back to the CLI that asked)."""
        return {**asdict(self), "result": self.result.value, "mode": self.mode.value}

    @classmethod
    def from_json(cls, document: Any) -> UpgradeOutcome:
        """:meth:`to_json`'s document; ValueError (or TypeError) when it is not one."""
        if not isinstance(document, dict):
            raise ValueError("the outcome is not a JSON object")
        names = {f.name for f in fields(cls)}
        outcome = cls(
            **{k: v for k, v in document.items() if k in names},
        )
        outcome.result, outcome.mode = Result(outcome.result), UpgradeMode(outcome.mode)
        for name in ("job_id", "program", "previous_program", "new_job_dir"):
            if not isinstance(getattr(outcome, name), str):
                raise ValueError(f"{name} is not a string")
        if not isinstance(outcome.notes, list):
            raise ValueError("notes is not a list")
        return outcome


class UpgradePresenter(Protocol):
    """What the user sees while an upgrade goes on."""

    def savepoint(self, path: str) -> None: ...
    def submitted(self, job_id: str) -> None: ...
    def notice(self, message: str) -> None: ...


def _from(mode: UpgradeMode, source: str | None) -> str:
    if source is None:
        return "with empty state"
    if mode is UpgradeMode.LAST_STATE:
        return f"from the retained checkpoints {source}"
    return f"from savepoint {source}"


__all__ = ["Result", "UpgradeMode", "UpgradeOutcome", "UpgradePresenter", "UpgradeRequest"]
