"""Starting an in-place rescale from inside the running driver: refused, recorded in the
job's rescale history, the queries stopped with a savepoint, and the rescale handed to the
supervisor (its marker), which starts the next driver at the new parallelism
(:class:`~flinkish_cli.runtime.scaling.rescaling.RescaleWatch` then watches it there).

:class:`InPlaceRescales` is a part of the job's state machine
(:class:`~flinkish_cli.runtime.driver.job.JobRuntime`, which it is mixed into): a control
request and the autoscaler's decision reach it through the same methods.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from flinkish_cli.errors import JobError
from flinkish_cli.registry.history import Trigger
from flinkish_cli.registry.rescale_marker import RescaleMarker
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobState

log = logging.getLogger("flinkish.runtime")


class InPlaceRescales:
    """The rescale methods of the job's state machine. What they use of it: ``plan``,
    ``registry``, ``policy``, ``autoscaler``, ``keeper`` (its lock), the ending it sets
    (``_ending``, ``_ending_cause``), and :meth:`stop_with_savepoint`, :meth:`request_end`,
    :meth:`_require_live`."""

    plan: Any
    registry: Any
    policy: Any
    autoscaler: Any
    keeper: Any
    _ending: JobState | None
    _ending_cause: str | None

    def rescale_refusal(self, parallelism: int) -> str | None:
        """Why this job cannot be rescaled in place to ``parallelism`` now; None when it can.

        A job whose driver owns its Spark (``spark-submit``: local Spark, a standalone cluster)
        and a session cluster's job (Spark Connect: its client repartitions the state with a
        local Spark, :mod:`~flinkish_cli.runtime.flavours.offline_repartition`) are rescaled
        in place; on YARN and Kubernetes the cluster manager, not flinkish, starts the
        driver."""
        from flinkish_cli.registry.rescale_marker import read_marker

        if not self.plan.master.startswith(("local", "spark://", "sc://")):
            return (
                "in-place rescales run on local Spark, standalone clusters and session "
                f"clusters, not on {self.plan.master}"
            )
        if parallelism == self.plan.parallelism:
            return f"it already runs at parallelism {parallelism}"
        if read_marker(self.registry, self.plan.job_id) is not None:
            return "a rescale is under way"
        return None

    def request_rescale(
        self, parallelism: int, reason: str, record: RescaleRecord | None = None
    ) -> str | None:
        """Rescale the job in place to ``parallelism`` (a control request, or the
        autoscaler's decision, ``record``): the savepoint's path (None when it failed and
        the job restarts as it was); :class:`JobError` when it cannot."""
        self._require_live("rescale")
        refusal = self.rescale_refusal(parallelism)
        if refusal is not None:
            raise JobError(f"Cannot rescale job {self.plan.job_id}: {refusal}.")
        history = RescaleHistory.read(self.registry, self.plan.job_id)
        if record is None or history.find(record.id) is None:
            direction = "up" if parallelism > self.plan.parallelism else "down"
            record = record or RescaleRecord.new(
                time.time(), self.plan.parallelism, parallelism, direction, reason, {}, True
            )
            history.append(record)
        history.update_outcome(record.id, Outcome.IN_PROGRESS, None)
        history.write(self.registry, self.plan.job_id)
        stopping = int(time.time() * 1000)  # the restart starts: the queries stop next
        marker = RescaleMarker(
            record.id, self.plan.parallelism, parallelism, "", time=stopping, reason=reason
        )
        directory = self.policy.directory if self.policy else self.plan.job_dir + "/savepoints"
        path = self.rescale(marker, directory)
        if path is None:
            self._rescale_ended(marker, Outcome.FAILED.value)
        return path

    def _apply_rescale(self, record: RescaleRecord) -> None:
        """The autoscaler's decision, on the control worker."""
        try:
            self.request_rescale(record.to_parallelism, record.reason, record)
        except Exception as error:
            log.warning("The autoscaler's rescale did not start: %s", error)
            history = RescaleHistory.read(self.registry, self.plan.job_id)
            if history.update_outcome(record.id, Outcome.FAILED, time.time()):
                history.write(self.registry, self.plan.job_id)
            if self.autoscaler is not None:
                self.autoscaler.not_applied()

    def rescale(self, marker: RescaleMarker, target_dir: str) -> str | None:
        """Stop the job for an in-place rescale: its queries between micro-batches, then a
        savepoint into ``target_dir``, then the rescale handed to the supervisor; the
        savepoint's path. Without a savepoint (it failed) the driver still ends RESTARTING:
        the supervisor starts the next driver at the same parallelism, from the job's own
        checkpoints, and nothing is rescaled (None)."""
        from dataclasses import replace

        from flinkish_cli.registry.rescale_marker import write_marker

        try:
            path = self.stop_with_savepoint(
                target_dir, False, JobState.RESTARTING, False, Trigger.RESCALE
            )
        except JobError:
            raise  # not running, or already ending: nothing was stopped
        except Exception as error:
            with self.keeper.lock:
                self._ending = JobState.RESTARTING
                self._ending_cause = f"The rescale's savepoint failed: {error}."
            log.error("The rescale's savepoint failed (%s): restarting as it was.", error)
            return None
        write_marker(self.registry, self.plan.job_id, replace(marker, savepoint=path))
        with self.keeper.lock:
            self._ending_cause = (
                f"Rescaling from parallelism {marker.from_} to {marker.to}: {marker.reason}"
            )
        log.info("Rescaling from parallelism %s to %s.", marker.from_, marker.to)
        return path

    def _rescale_ended(self, marker: RescaleMarker, outcome: str) -> None:
        """Record how a rescale ended in the job's rescale history; a completed one with
        its restart measured, from the marker's time (the old driver began stopping) to now
        (every query has a batch at the new parallelism behind it)."""
        history = RescaleHistory.read(self.registry, self.plan.job_id)
        now = time.time()
        if history.update_outcome(marker.id, Outcome(outcome), now):
            history.record_restart(marker.id, marker.time / 1000, now)
            history.write(self.registry, self.plan.job_id)

    def abandon_rescale(self, cause: str) -> None:
        """The rescale this driver runs for did not become stable: end the driver
        RESTARTING, and its supervisor rolls the rescale back."""
        self.request_end(JobState.RESTARTING, cause, graceful=True)
