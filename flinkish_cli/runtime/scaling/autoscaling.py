"""The autoscaler inside a job's driver: evaluate every interval, record, and rescale.

With ``job.autoscaler.enabled``, :class:`Autoscaler` runs on a thread of the job's driver
(as the Flink Kubernetes Operator's autoscaler runs beside its job): every
``job.autoscaler.interval`` it reads each active query's figures from the job's series
(:mod:`flinkish_cli.registry.series`), turns them into Flink's terms
(:func:`~flinkish_cli.autoscaler.metrics.query_metrics`), asks for the job-wide decision
(:func:`~flinkish_cli.autoscaler.decide.decide`) and records it in the job's rescale
history (:mod:`flinkish_cli.registry.rescales`): every evaluation as the latest, every
decision that changes the parallelism as a record. With ``job.autoscaler.scaling.enabled``
(the default) such a decision is applied as an in-place rescale
(:meth:`~flinkish_cli.runtime.driver.job.JobRuntime.request_rescale`, on the control worker,
so never beside a savepoint); without it, or when
the job cannot be rescaled in place (YARN, Kubernetes), the record says
NOT_APPLIED with the reason. Nothing is evaluated while a rescale is under way, nor while
the job is not RUNNING. The measured windows start with this driver (a rescale's new
driver starts them afresh: its figures are those of the new parallelism), and the last
change counts from when it completed (a rescale that took minutes does not spend
``stabilization.interval`` or ``scale-down.interval`` while it ran). The rates measured at
earlier parallelisms, which may size a scale-down, are the figures of the rescale history's
records (:func:`~flinkish_cli.autoscaler.decide.measured_rates`): they survive every
driver, where this object's own state does not outlive a rescale. So do the restart times
measured on completed rescales, which size every decision with
``job.autoscaler.restart.time-tracking.enabled``
(:func:`~flinkish_cli.autoscaler.decide.restart_time`).

Any parallelism in ``[vertex.min-parallelism, vertex.max-parallelism]`` is allowed: Spark's
offline repartition (RocksDB) splits state into any number of partitions, and Spark's
sources take any number of tasks. A job that reads Kafka is scaled within its topics'
partitions, as Flink aligns a Kafka source's parallelism to them: its parallelism is at
most the partition count of its Kafka source with the most partitions (a task more reads
nothing), never below ``vertex.min-parallelism`` (:func:`within_partitions`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from flinkish_cli.autoscaler.decide import (
    Decision,
    decide,
    measured_rates,
    rescale_record,
    restart_time,
)
from flinkish_cli.autoscaler.metrics import query_metrics
from flinkish_cli.autoscaler.settings import AutoscalerSettings
from flinkish_cli.registry import series as series_file
from flinkish_cli.registry.rescale_marker import read_marker
from flinkish_cli.registry.rescales import Outcome, RescaleHistory, RescaleRecord
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry

log = logging.getLogger("flinkish.autoscaler")


def kafka_partitions(status: JobStatus) -> int | None:
    """The most topic-partitions one Kafka source of the job's running queries reads, after
    its latest batch; None when the job reads no Kafka (or its offsets are cut short)."""
    counts = [
        count
        for query in status.queries.values()
        if query.active and query.figures is not None
        for source in query.figures.sources
        if (count := source.kafka_partitions())
    ]
    return max(counts) if counts else None


def within_partitions(settings: AutoscalerSettings, status: JobStatus) -> AutoscalerSettings:
    """``settings`` with ``vertex.max-parallelism`` at most the job's Kafka partitions
    (:func:`kafka_partitions`), not below ``vertex.min-parallelism``."""
    partitions = kafka_partitions(status)
    if partitions is None or partitions >= settings.max_parallelism:
        return settings
    return dataclasses.replace(settings, max_parallelism=max(partitions, settings.min_parallelism))


class Autoscaler:
    """Evaluates one job every interval and applies (or records) its decisions."""

    def __init__(
        self,
        settings: AutoscalerSettings,
        registry: JobRegistry,
        job_id: str,
        parallelism: int,
        status: Callable[[], JobStatus],
        refusal: Callable[[int], str | None],
        apply: Callable[[RescaleRecord], None],
        run_start: float | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.job_id = job_id
        self.parallelism = parallelism
        self.status = status  # the job's status, as its driver keeps it
        self.refusal = refusal  # why the job cannot be rescaled in place to N, or None
        self.apply = apply  # starts the in-place rescale a record decided
        self.run_start = time.time() if run_start is None else run_start

    def run(self, done: threading.Event) -> None:
        mode = "scaling" if self.settings.scaling_enabled else "metrics only"
        log.info("Autoscaler on (%s), every %.0f s.", mode, self.settings.interval)
        while not done.wait(self.settings.interval):
            try:
                self.evaluate(time.time())
            except Exception as error:  # a bad read never ends the job
                log.warning("The autoscaler could not evaluate the job: %s", error)

    #: a rescale was handed to the job (until it failed to start: :meth:`not_applied`)
    applying = False

    def not_applied(self) -> None:
        """The rescale handed over did not start (the job runs on as it was)."""
        self.applying = False

    def evaluate(self, now: float) -> Decision | None:
        """One evaluation at ``now`` (epoch s); the decision, None when none was made."""
        status = self.status()
        if self.applying or status.state is not JobState.RUNNING:
            return None
        if read_marker(self.registry, self.job_id) is not None:
            return None
        history = RescaleHistory.read(self.registry, self.job_id)
        decision = self.decide(status, history, now)
        evaluation: dict[str, Any] = {"time": int(now * 1000), **decision.to_json()}
        history.record_evaluation(evaluation)
        record = None
        if decision.changes:
            record = rescale_record(decision, self.settings, now)
            refusal = self.refusal(decision.target) if self.settings.scaling_enabled else None
            if refusal is not None:
                record.mode, record.outcome = "metrics-only", Outcome.NOT_APPLIED
                record.end_time = record.time
                record.reason += f" Not applied: {refusal}."
            history.append(record)
            log.info("%s", record.reason)
        history.write(self.registry, self.job_id)
        if record is not None and record.outcome is Outcome.PENDING:
            self.applying = True
            self.apply(record)
        return decision

    def decide(self, status: JobStatus, history: RescaleHistory, now: float) -> Decision:
        """The decision the job's figures call for now."""
        points = series_file.read(self.registry, self.job_id).queries
        metrics = [
            query_metrics(
                name, points.get(name, []), self.settings, now, self.run_start, query.trigger_ms
            )
            for name, query in status.queries.items()
            if query.active
        ]
        last = history.last_change()  # a change counts from when it completed
        changed = (last.end_time or last.time) / 1000 if last is not None else None
        return decide(
            metrics,
            self.parallelism,
            within_partitions(self.settings, status),
            now,
            self.run_start,
            changed,
            measured=measured_rates(history.rescales),  # a scale-down is sized with them
            restart=restart_time(self.settings, history.rescales, now),
        )
