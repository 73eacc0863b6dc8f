"""Flink's checkpoint rules applied to micro-batches: every committed batch is a checkpoint.

- ``execution.checkpointing.timeout``: a batch running (or having run) longer is a failed
  checkpoint; ``execution.checkpointing.tolerable-failed-checkpoints`` consecutive failures
  are tolerated, one more fails the job (and then the restart strategy decides).
- ``execution.checkpointing.min-pause``: a floor of the trigger interval (Spark schedules the
  starts of batches, so after a batch that overruns its interval the pause can be shorter).
- ``execution.checkpointing.externalized-checkpoint-retention``: what happens to the
  checkpoints when the job ends (never deleted on failure).
- ``flinkish.health-check.checkpoint-progress.window`` (the Flink Kubernetes Operator's
  health check): a query with input, or a batch under way, that commits nothing for that
  long has stalled; the job fails and its restart strategy decides. A job stuck in a batch
  is caught this way.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flinkish_cli.plan.job import JobPlan
from flinkish_cli.registry.status import JobState, JobStatus, Progress

log = logging.getLogger("flinkish.runtime")


@dataclass(frozen=True)
class CheckpointRules:
    """The checkpoint settings of a job."""

    timeout_s: float = 600.0
    tolerable_failures: int = 0
    min_pause_ms: int = 0
    retention: str = "RETAIN_ON_CANCELLATION"
    progress_window_s: float = 0.0  # 0: no health check

    @classmethod
    def from_config(cls, config: Any) -> CheckpointRules:
        prefix = "execution.checkpointing."
        return cls(
            timeout_s=config.get(prefix + "timeout").total_seconds(),
            tolerable_failures=int(config.get(prefix + "tolerable-failed-checkpoints")),
            min_pause_ms=int(config.get(prefix + "min-pause").total_seconds() * 1000),
            retention=str(config.get(prefix + "externalized-checkpoint-retention")),
            progress_window_s=config.get(
                "flinkish.health-check.checkpoint-progress.window"
            ).total_seconds(),
        )

    def deletes_on(self, state: JobState) -> bool:
        """Whether the job's checkpoints go when it ends in ``state`` (never on failure)."""
        if state is JobState.CANCELED:
            return self.retention in ("DELETE_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS")
        if state is JobState.FINISHED:
            return self.retention == "NO_EXTERNALIZED_CHECKPOINTS"
        return False


#: How often the job's watcher thread looks at the running batches (:meth:`BatchWatcher.watch`).
#: Each look asks Spark for every query's status (two py4j calls a query), so not at the
#: pace of the control poll (0.1 s on local disk): the rules it applies are counted in
#: seconds (a checkpoint timeout, a progress window), and a job lives for months.
WATCH_SECONDS = 0.5


class BatchWatcher:
    """Counts failed checkpoints and calls ``fail`` (with the cause) once too many failed;
    calls ``stalled`` (with the cause) once a query makes no progress within the window."""

    def __init__(
        self,
        rules: CheckpointRules,
        fail: Callable[[str], None],
        stalled: Callable[[str], None] | None = None,
    ) -> None:
        self.rules = rules
        self.fail = fail
        self.stalled = stalled
        self.failed = 0
        self._running_since: dict[str, float] = {}
        self._expired: dict[str, int] = {}
        self._progress_at: dict[str, float] = {}  # the last commit, or when first watched
        self._stall_reported = False

    def reset(self) -> None:
        """A new attempt of the job starts counting afresh."""
        self.failed = 0
        self._running_since.clear()
        self._expired.clear()
        self._progress_at.clear()
        self._stall_reported = False

    def watch(self, queries: dict[str, Any], last_batch: Callable[[str], int | None]) -> None:
        """Look at the running batches (called every :data:`WATCH_SECONDS`)."""
        now = time.monotonic()
        for name, query in list(queries.items()):
            try:  # an ended query's status is Spark's "Stopped": no trigger, no data
                status = query.status
            except Exception:  # the query is going away
                continue
            running = bool(status and status.get("isTriggerActive"))
            self._check_progress(
                name, now, running or bool(status and status.get("isDataAvailable"))
            )
            if not running:
                self._running_since.pop(name, None)
                continue
            since = self._running_since.setdefault(name, now)
            committed = last_batch(name)
            batch = (committed if committed is not None else -1) + 1
            if now - since > self.rules.timeout_s and self._expired.get(name) != batch:
                self._expired[name] = batch
                self._failed(name, f"batch {batch} has run longer than {self.rules.timeout_s:g} s")

    def _check_progress(self, name: str, now: float, has_work: bool) -> None:
        """The health check: work to do (input, or a batch under way) and no commit within
        the window."""
        window = self.rules.progress_window_s
        if not has_work:  # idle, all input committed: the window starts when work comes
            self._progress_at[name] = now
            return
        since = self._progress_at.setdefault(name, now)
        if not window or self._stall_reported or now - since <= window:
            return
        self._stall_reported = True
        log.warning("Query '%s' has made no checkpoint progress for %g s.", name, now - since)
        if self.stalled is not None:
            self.stalled(
                f"no checkpoint progress for {_seconds(window)} (query '{name}' had input but "
                "committed no batch; flinkish.health-check.checkpoint-progress.window)"
            )

    def completed(self, name: str, progress: Progress) -> None:
        """A batch committed: a failed checkpoint if it took too long, else the count resets."""
        self._progress_at[name] = time.monotonic()
        if self._expired.get(name) == progress.batch_id:
            return  # already counted while it ran
        if progress.duration_ms > self.rules.timeout_s * 1000:
            self._failed(name, f"batch {progress.batch_id} took {progress.duration_ms / 1000:g} s")
        else:
            self.failed = 0

    def _failed(self, name: str, why: str) -> None:
        self.failed += 1
        log.warning(
            "Checkpoint failed (query '%s': %s; execution.checkpointing.timeout is %g s); "
            "%d consecutive.",
            name,
            why,
            self.rules.timeout_s,
            self.failed,
        )
        if self.failed > self.rules.tolerable_failures:
            self.fail(
                f"Exceeded the tolerable failed checkpoints: {self.failed} consecutive "
                f"(execution.checkpointing.tolerable-failed-checkpoints is "
                f"{self.rules.tolerable_failures}); query '{name}': {why}, more than "
                f"execution.checkpointing.timeout."
            )


def _seconds(value: float) -> str:
    return f"{value:g} s"


def delete_owned_checkpoints(
    storage: Any, plan: JobPlan, status: JobStatus, rules: CheckpointRules, state: JobState
) -> None:
    """execution.checkpointing.externalized-checkpoint-retention: delete the queries'
    checkpoints flinkish owns (the job's status stays, for ``list -a``); a checkpoint
    location the script chose is the script's, and stays."""
    discard_checkpoints(storage, plan.job_dir, status)
    log.info(
        "Deleted the checkpoints of job %s (%s, retention %s).",
        plan.job_id,
        state.value,
        rules.retention,
    )


def discard_checkpoints(storage: Any, job_dir: str, status: JobStatus) -> list[str]:
    """Delete the checkpoints flinkish owns of an ended job (``<job_dir>/<query>``), never a
    location the script chose; the names of the queries whose checkpoint went."""
    from flinkish_cli.storage import join

    gone = []
    for name, entry in list(status.queries.items()):
        if entry.checkpoint != join(job_dir, name):
            continue
        with contextlib.suppress(Exception):
            storage.delete_tree(entry.checkpoint)
            gone.append(name)
    return gone
