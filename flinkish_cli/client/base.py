"""The job client's interface, and what it does the same whichever way it reaches the jobs.

:class:`JobClientBase` is what the CLI's commands call. It has two transports:
:class:`~flinkish_cli.client.jobs.JobClient` reads and writes the registry in storage, and
:class:`~flinkish_cli.client.rest.RestJobClient` goes through ``flinkish web``. Each answers
the questions of its transport (where jobs are read, how a request reaches a job and its
answer comes back, how often to look); the waiting actions here (``stop``, ``savepoint``,
``checkpoint``, ``rescale``, and ``cancel -s`` as a stop that ends CANCELED) run over
either through :mod:`.asking`, so they print the same lines whichever way they went, by
construction. ``savepoint info <path>`` is here too: it reads the savepoint's files on this
machine, whatever the transport.

This module imports neither the storage client nor the control protocol's commands (they
are imported by the actions that send one), so a command that goes through an endpoint and
sends no command (``list``, the detached triggers) loads only what it uses.

A local savepoint directory given relative (``./sp``) is resolved against the caller's
working directory before the request leaves this process: the job's driver runs elsewhere.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.asking import ask, refused_end, require_running, wait_for_end
from flinkish_cli.errors import FlinkishError, JobError, SavepointError, UsageError
from flinkish_cli.registry.control import DETACHED_TTL
from flinkish_cli.registry.control import is_request_id as is_trigger_id
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from flinkish_cli.client.asking import Channel, Lookup
    from flinkish_cli.registry.control import ControlResponse
    from flinkish_cli.registry.history import SavepointRecord
    from flinkish_cli.registry.protocol import CheckpointDone, Command, StopWithSavepoint
    from flinkish_cli.registry.store import RegistryIdentity, UnreadableJob

SCHEMES = ("file://", "s3://", "s3a://", "hdfs://")

#: What the front ends name through the job client (they never import the control channel):
#: how long a detached trigger waits for its job, and whether a value is a trigger id.
__all__ = ["DETACHED_TTL", "is_trigger_id"]


@dataclass(frozen=True)
class TriggerResult:
    """A detached trigger (savepoint, stop, checkpoint): under way, or done with the driver's
    answer (a savepoint's ``path``, a checkpoint's ``batches``) or its error."""

    done: bool
    ok: bool = False
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
    #: the error itself, when it is known whole (a disposal's)
    failure: FlinkishError | None = None


def resolve_local(path: str) -> str:
    """``path`` as the caller means it: a local path relative to the working directory (or
    starting with ``~``) made absolute; URIs unchanged."""
    if "://" in path:
        return path
    if path.startswith("file:") and not path.startswith("file:/"):
        path = path[len("file:") :]  # file:relative/dir
    return os.path.abspath(os.path.expanduser(path))


def savepoint_target(config: Any, given: str | None) -> str:
    """The directory a savepoint goes to: the one given, else the configured default, with a
    relative local path resolved against the caller's working directory."""
    target = given or config.get("execution.checkpointing.savepoint-dir")
    if not target:
        raise UsageError(
            "No savepoint directory given and execution.checkpointing.savepoint-dir is not set.",
            "Pass a target directory, or set execution.checkpointing.savepoint-dir.",
        )
    target = str(target)
    if "://" in target and not target.startswith(SCHEMES):
        raise UsageError(
            f"{target} is not on a supported storage.",
            "Use a local path, file://, s3://, s3a:// or hdfs:// URI.",
        )
    resolved = resolve_local(target)
    return resolved.rstrip("/") or resolved


@dataclass
class StopOutcome:
    """What became of a job stopped (or cancelled) with a savepoint."""

    job_id: str
    path: str
    state: JobState
    cause: str | None

    def ended_as(self, expected: JobState) -> JobError | None:
        """An error when the job did not end ``expected`` once its savepoint was taken."""
        from flinkish_cli.registry.protocol import END_TIMEOUT

        if self.state is expected:
            return None
        if not self.state.is_terminal:
            return JobError(
                f"Job {self.job_id} is still {self.state.value} {END_TIMEOUT:.0f} s after its "
                f"savepoint {self.path} completed.",
                "See 'flinkish list -a' and the job's log ('flinkish logs').",
            )
        detail = f": {self.cause.splitlines()[0]}" if self.cause else ""
        return JobError(
            f"Job {self.job_id} ended {self.state.value} after its savepoint {self.path}{detail}."
        )


class JobClientBase:
    """Every action on the jobs of one configuration's registry, whichever way it goes."""

    #: Where this client reaches the jobs (for messages, and ``--verbose``).
    transport = "storage"

    def __init__(self, config: Any) -> None:
        self.config = config

    # -- the transport (each subclass answers these) ---------------------------------------
    def open(self) -> JobClientBase:
        """Make sure the jobs can be reached now, so that a transport that cannot be used
        fails here."""
        raise NotImplementedError

    def identity(self) -> RegistryIdentity:
        """Which registry this client acts on."""
        raise NotImplementedError

    def _lookup(self) -> Lookup:
        """Where the waiting actions read jobs."""
        raise NotImplementedError

    def _channel(self, job_id: str) -> Channel:
        """How a request reaches the job and its answer comes back."""
        raise NotImplementedError

    def _pause(self) -> float:
        """Seconds between looks for a request's answer."""
        raise NotImplementedError

    def _end_pause(self) -> float:
        """Seconds between looks for a job's end."""
        raise NotImplementedError

    def _target(self, given: str | None) -> str:
        """The directory a savepoint goes to (:func:`savepoint_target`)."""
        raise NotImplementedError

    # -- reading (each transport its own way) ----------------------------------------------
    def list_jobs(self) -> tuple[list[JobStatus], list[UnreadableJob]]:
        """Every job, newest first, and the jobs whose status could not be read."""
        raise NotImplementedError

    def find(self, job_id: str) -> JobStatus | None:
        """The job's status; None when the registry has no such job."""
        raise NotImplementedError

    def get(self, job_id: str) -> JobStatus:
        """The job's status; a :class:`JobError` naming where it looked when there is none."""
        raise NotImplementedError

    def log(
        self, job_id: str, follow: bool = False, last_lines: int | None = None
    ) -> Iterator[str]:
        """The job's driver log in chunks of text; ``follow`` keeps reading while it runs."""
        raise NotImplementedError

    def job_info(self, job_id: str) -> dict[str, Any]:
        """``flinkish info <JobID>``: per query, what its checkpoint takes on storage, and
        its graph with its latest figures."""
        raise NotImplementedError

    def savepoint_history(self, job_id: str | None = None) -> list[SavepointRecord]:
        """The savepoints of one job, and of the jobs it was upgraded from (every job's
        without a JobID), newest first."""
        raise NotImplementedError

    def last_savepoints(self, job_ids: list[str]) -> dict[str, SavepointRecord | None]:
        """Each job's last savepoint (the newest completed one of its history), by JobID."""
        raise NotImplementedError

    # -- acting at once (each transport its own way) ----------------------------------------
    def cancel(self, job_id: str, timeout: float | None = None, wait: bool = True) -> JobStatus:
        """Cancel a running job at once; its final status (without ``wait``: its status once
        its driver accepted, as Flink's REST API answers before the job has ended).
        ``timeout``: :data:`~flinkish_cli.registry.protocol.CANCEL_TIMEOUT` when None."""
        raise NotImplementedError

    def stop_detached(
        self,
        job_id: str,
        target: str | None,
        drain: bool,
        format_type: str = "CANONICAL",
        end_state: JobState = JobState.FINISHED,
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Ask a running job to stop with a savepoint without waiting; the trigger id."""
        raise NotImplementedError

    def savepoint_detached(
        self,
        job_id: str,
        target: str | None,
        format_type: str = "CANONICAL",
        trigger_id: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Ask a running job for a savepoint without waiting; the trigger id."""
        raise NotImplementedError

    def checkpoint_detached(
        self, job_id: str, trigger_id: str | None = None, ttl: float | None = None
    ) -> str:
        """Ask a running job for its next checkpoint without waiting; the trigger id."""
        raise NotImplementedError

    def dispose_savepoint(self, path: str) -> None:
        """Delete a savepoint (and refuse anything else)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop what this client keeps running (nothing, unless the transport keeps some)."""

    # -- the waiting actions (the same over either transport) ------------------------------
    def _ask(self, job_id: str, command: Command, timeout: float) -> ControlResponse:
        channel = self._channel(job_id)
        return ask(self._lookup(), job_id, command, timeout, channel, self._pause())

    def _running(self, job_id: str, action: str) -> JobStatus:
        return require_running(self._lookup(), parse_job_id(job_id), action)

    def _stop_command(
        self,
        job_id: str,
        target: str | None,
        drain: bool,
        end_state: JobState,
        fmt: str,
        upgrade: bool = False,
    ) -> tuple[str, StopWithSavepoint]:
        from flinkish_cli.registry.protocol import StopWithSavepoint

        status = self._running(job_id, _stop_action(end_state))
        command = StopWithSavepoint(
            target=self._target(target),
            drain=drain,
            format_type=fmt,
            end_state=end_state.value,
            explicit_target=target is not None,
            upgrade=upgrade,
        )
        return status.job_id, command

    def stop(
        self,
        job_id: str,
        target: str | None,
        drain: bool,
        format_type: str = "CANONICAL",
        end_state: JobState = JobState.FINISHED,
        upgrade: bool = False,
    ) -> StopOutcome:
        """Stop a job gracefully with a savepoint (``end_state`` CANCELED: Flink's deprecated
        cancel with a savepoint; ``upgrade``: for ``flinkish upgrade``, recorded UPGRADE);
        the savepoint's path and the state the job ended in."""
        from flinkish_cli.registry.protocol import END_TIMEOUT, SAVEPOINT_TIMEOUT

        action = _stop_action(end_state)
        job_id, command = self._stop_command(job_id, target, drain, end_state, format_type, upgrade)
        response = self._ask(job_id, command, SAVEPOINT_TIMEOUT)
        if not response.ok:
            if response.result.get("unreadable"):
                raise SavepointError(f"Stopping job {job_id} failed: {response.error}")
            raise refused_end(self._lookup(), job_id, action, response)
        path = _savepoint_path(response.result, job_id)
        final = wait_for_end(self._lookup(), job_id, END_TIMEOUT, self._end_pause())
        return StopOutcome(job_id, path, final.effective_state(), final.effective_failure_cause())

    def savepoint(self, job_id: str, target: str | None, format_type: str = "CANONICAL") -> str:
        """Take a savepoint of a running job; its path."""
        from flinkish_cli.registry.protocol import SAVEPOINT_TIMEOUT, TriggerSavepoint

        status = self._running(job_id, "take a savepoint of")
        command = TriggerSavepoint(
            self._target(target), format_type, explicit_target=target is not None
        )
        response = self._ask(status.job_id, command, SAVEPOINT_TIMEOUT)
        if not response.ok:
            raise SavepointError(f"Savepoint of job {status.job_id} failed: {response.error}")
        return _savepoint_path(response.result, status.job_id)

    def checkpoint(self, job_id: str) -> CheckpointDone:
        """Wait for the job's next completed checkpoint (a committed batch of every query)."""
        from flinkish_cli.registry.protocol import CHECKPOINT_TIMEOUT, TriggerCheckpoint

        status = self._running(job_id, "checkpoint")
        response = self._ask(status.job_id, TriggerCheckpoint(), CHECKPOINT_TIMEOUT)
        if not response.ok:
            raise SavepointError(f"Checkpoint of job {status.job_id} failed: {response.error}")
        return checkpoint_of(status.job_id, response.result)

    def rescale(self, job_id: str, parallelism: int, reason: str = "Asked for by user.") -> str:
        """Rescale a running job in place to ``parallelism`` (its JobID stays; Flink's
        adaptive scheduler's resource requirements): once the job has stopped with its
        rescale's savepoint, that savepoint's path; :class:`JobError` when it cannot."""
        from flinkish_cli.registry.protocol import SAVEPOINT_TIMEOUT, Rescale

        status = self._running(job_id, "rescale")
        response = self._ask(status.job_id, Rescale(parallelism, reason), SAVEPOINT_TIMEOUT)
        if not response.ok:
            raise JobError(f"Rescale of job {status.job_id} failed: {response.error}")
        return str((response.result or {}).get("savepoint") or "")

    # -- on this machine, whatever the transport -------------------------------------------
    def savepoint_info(
        self, path: str, rows: bool = True, notice: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """What a savepoint (or retained checkpoint) holds, with each stateful operator's
        state rows per store (read by :mod:`flinkish_cli.state`) unless ``rows`` is false."""
        from flinkish_cli.savepoints.inspect import describe
        from flinkish_cli.savepoints.restore import open_source
        from flinkish_cli.storage import open_for_config

        path = path.rstrip("/")
        source = open_source(open_for_config(path, self.config), path)
        summary = describe(source.manifest)
        summary["path"] = path
        if rows and any(q.stateful for q in source.manifest.queries):
            from flinkish_cli.state.api import list_state

            listing = list_state(path, self.config, notice=notice, verify=False)
            for query in summary["queries"]:
                state = listing.query(query["name"])
                for operator in query["stateful-operators"]:
                    found = state.operator(operator["id"]) if state else None
                    operator["rows"] = {s.name: s.rows for s in found.stores} if found else {}
        return summary


def checkpoint_of(job_id: str, result: dict[str, Any]) -> CheckpointDone:
    """The checkpoint a job's answer names; a :class:`SavepointError` when it names none."""
    from flinkish_cli.registry.protocol import CheckpointDone

    try:
        return CheckpointDone.from_result(result)
    except ValueError as error:
        raise SavepointError(f"Checkpoint of job {job_id}: {error}.") from None


def _stop_action(end_state: JobState) -> str:
    return "cancel" if end_state is JobState.CANCELED else "stop"


def _savepoint_path(result: dict[str, Any], job_id: str) -> str:
    from flinkish_cli.registry.protocol import SavepointDone

    try:
        return SavepointDone.from_result(result).path
    except ValueError:
        raise SavepointError(f"Job {job_id} answered without a savepoint path.") from None
