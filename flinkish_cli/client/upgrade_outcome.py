"""What ``flinkish upgrade`` is asked, what its user sees while it goes on, and how it ended.

:class:`UpgradeRequest` (the job, the new program with ``run``'s options, the
:class:`UpgradeMode`, whether to roll back), the :class:`UpgradePresenter` the front end
passes in, and the :class:`UpgradeOutcome`: a :class:`Result` with the final line for scripts
(:attr:`UpgradeOutcome.line`) and the document for ``--output json``
(:meth:`UpgradeOutcome.summary`). The upgrade itself is :mod:`flinkish_cli.client.upgrade`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

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
