"""Judging the new job of ``flinkish upgrade``: is it stable, and may it still be rolled back?

:func:`judge` reads the status the new job's driver writes: stable once it is RUNNING, its
program reached its first wait and every query reported progress, with no failure of any
kind (a :class:`Verdict`). :func:`committed_beyond` reads its queries' commit logs (Spark's
``commits/<N>``, as a savepoint does: :func:`~flinkish_cli.savepoints.create.last_committed_batch`)
for output committed beyond the state it started from (:func:`last_commits`), which a
rollback would have to undo (see :mod:`flinkish_cli.client.upgrade`); under the
exactly-once Kafka sink it also reads their offset logs (:func:`planned_beyond`): a batch
the new job planned may be in Kafka before Spark's commit log holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flinkish_cli.errors import FlinkishError
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.spark.failures import headline


@dataclass(frozen=True)
class Verdict:
    """The new job's stability, from its status."""

    stable: bool
    failure: str | None = None  # why it can no longer become stable
    waiting: str = ""  # what it still waits for


def judge(status: JobStatus) -> Verdict:
    """Stable: RUNNING, the program reached its first wait, every query active and with
    progress in this job (a committed batch, or Spark's report that it found no new input);
    a failure: any failure, restart or query exception."""
    state = status.effective_state()
    if state.is_terminal or state in (JobState.FAILING, JobState.CANCELLING):
        cause = headline(status.effective_failure_cause())
        return Verdict(False, f"ended {state.value}" + (f": {cause}" if cause else ""))
    if status.restarts or status.exceptions or state is JobState.RESTARTING:
        last = status.exceptions[-1]["cause"] if status.exceptions else status.failure_cause
        cause = headline(last)
        return Verdict(False, "failed" + (f": {cause}" if cause else ""))
    for name, query in status.queries.items():
        if query.exception:
            return Verdict(False, f"failed in query {name}: {headline(query.exception)}")
    if state is not JobState.RUNNING:
        return Verdict(False, waiting=f"it to run (it is {state.value})")
    if not status.queries_started:
        return Verdict(False, waiting="its program to start its queries")
    waiting = [
        name for name, q in status.queries.items() if not (q.active and (q.recent or q.idle))
    ]
    if not status.queries or waiting:
        return Verdict(False, waiting=f"the first batch of {', '.join(waiting) or 'a query'}")
    return Verdict(True)


def last_commits(config: Any, status: JobStatus) -> dict[str, int]:
    """Each of the job's queries' last committed batch, from its checkpoint's commit log (a
    query without one, or whose log cannot be read, is left out)."""
    return {
        name: batch
        for name, query in status.queries.items()
        if (batch := _last_commit(config, query.checkpoint)) is not None
    }


def committed_beyond(config: Any, status: JobStatus, baseline: dict[str, int]) -> str:
    """The job's queries that committed a batch beyond ``baseline`` (each query's last
    committed batch in the state the job started from), ``query <name> batch <N>`` each:
    output a rollback cannot undo; empty when there is none."""
    last = last_commits(config, status)
    return ", ".join(
        f"query {name} batch {batch}"
        for name, batch in sorted(last.items())
        if batch > baseline.get(name, -1)
    )


def last_planned(config: Any, status: JobStatus) -> dict[str, int]:
    """Each of the job's queries' last planned batch, from its checkpoint's offset log."""
    return {
        name: batch
        for name, query in status.queries.items()
        if (batch := _last_commit(config, query.checkpoint, "offsets")) is not None
    }


def planned_beyond(config: Any, status: JobStatus, baseline: dict[str, int]) -> str:
    """The job's queries that planned a batch beyond ``baseline`` (each query's last planned
    batch in the state the job started from, which a rollback replays as it was planned),
    ``query <name> batch <N>`` each. The exactly-once Kafka sink commits a batch's
    transactions before Spark's commit log holds the batch, partition by partition: such a
    batch may be in Kafka, and a rollback, which plans its input anew, would write it again;
    empty when there is none."""
    last = last_planned(config, status)
    return ", ".join(
        f"query {name} batch {batch}, planned and maybe in Kafka"
        for name, batch in sorted(last.items())
        if batch > baseline.get(name, -1)
    )


def _last_commit(config: Any, checkpoint: str, log: str = "commits") -> int | None:
    """The last batch in a query checkpoint's commit log, or its offset log with ``log=
    "offsets"`` (None: none, or unreadable)."""
    from flinkish_cli.savepoints import layout
    from flinkish_cli.storage import join, open_for_config

    directory = join(checkpoint.rstrip("/"), log)
    try:
        storage = open_for_config(checkpoint, config)
        if not storage.exists(directory):
            return None
        batches = layout.numbered([i.name for i in storage.list(directory)])
    except (FlinkishError, OSError):
        return None
    return batches[-1] if batches else None


__all__ = [
    "Verdict",
    "committed_beyond",
    "judge",
    "last_commits",
    "last_planned",
    "planned_beyond",
]
