"""The job's side of the control channel: carries out what any shell asks of the job.

:class:`ControlServer` reads the requests the job's client writes
(:mod:`flinkish_cli.registry.control`), takes the typed command out of each
(:mod:`flinkish_cli.registry.protocol`) and answers it. Cancel and a plain stop are answered
at once, even while a savepoint is being taken; savepoints and checkpoints run one at a time
on a worker thread, so a long savepoint never delays the next poll. A request that is not a
command is refused with its reason, never dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from flinkish_cli.errors import FlinkishError
from flinkish_cli.registry import protocol
from flinkish_cli.registry.control import ControlChannel, ControlRequest, ControlResponse
from flinkish_cli.registry.history import Trigger
from flinkish_cli.registry.status import JobState

log = logging.getLogger("flinkish.runtime")


class ControlledJob(Protocol):
    """What the server asks of the job (its runtime)."""

    def request_end(self, state: JobState, cause: str, graceful: bool) -> bool: ...

    def stop_with_savepoint(
        self,
        target_dir: str,
        drain: bool,
        end_state: JobState,
        explicit_target: bool,
        trigger: Trigger,
    ) -> str: ...

    def trigger_savepoint(self, target_dir: str, explicit_target: bool) -> str: ...

    def wait_for_checkpoint(self, timeout: float) -> dict[str, int]: ...

    def request_rescale(self, parallelism: int, reason: str) -> str | None: ...

    def describe_ending(self) -> str: ...

    @property
    def checkpoint_dir(self) -> str: ...


class ControlServer:
    """Answers one job's control requests."""

    def __init__(self, channel: ControlChannel, job: ControlledJob) -> None:
        self.channel = channel
        self.job = job
        self._workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flinkish-control")
        self._inflight: set[str] = set()

    def poll(self) -> None:
        """Take the pending requests: answer what ends the job now, queue the rest."""
        for request in self.channel.pending():
            if request.request_id in self._inflight:
                continue
            self._inflight.add(request.request_id)
            try:
                command = protocol.command_of(request)
            except ValueError as error:
                self.channel.respond(
                    ControlResponse(request.request_id, ok=False, error=str(error))
                )
                continue
            if protocol.ends_at_once(command):
                self._answer(request, command)
            else:
                self._workers.submit(self._answer, request, command)

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work`` on the worker, after the savepoints asked for before it."""
        self._workers.submit(work)

    def shutdown(self) -> None:
        """Stop taking work; a savepoint being taken completes first."""
        self._workers.shutdown(wait=True)

    def _answer(self, request: ControlRequest, command: protocol.Command) -> None:
        try:
            response = self._carry_out(request.request_id, command)
        except FlinkishError as error:
            response = ControlResponse(request.request_id, ok=False, error=str(error))
        except Exception as error:
            log.exception("Control request %s failed.", request.action)
            response = ControlResponse(
                request.request_id, ok=False, error=f"{type(error).__name__}: {error}"
            )
        self.channel.respond(response)

    def _carry_out(self, request_id: str, command: protocol.Command) -> ControlResponse:
        job = self.job
        if isinstance(command, (protocol.Cancel, protocol.Stop)):
            if isinstance(command, protocol.Cancel):
                accepted = job.request_end(JobState.CANCELED, "Canceled by user.", graceful=False)
            else:
                accepted = job.request_end(JobState.CANCELED, command.reason, graceful=True)
            if not accepted:
                return ControlResponse(request_id, ok=False, error=job.describe_ending())
            return ControlResponse(request_id, ok=True)
        if isinstance(command, protocol.StopWithSavepoint):
            path = job.stop_with_savepoint(
                command.target,
                command.drain,
                JobState(command.end_state),
                command.explicit_target,
                Trigger.UPGRADE if command.upgrade else Trigger.STOP,
            )
            return ControlResponse(
                request_id, ok=True, result=protocol.SavepointDone(path).to_result()
            )
        if isinstance(command, protocol.TriggerSavepoint):
            path = job.trigger_savepoint(command.target, command.explicit_target)
            return ControlResponse(
                request_id, ok=True, result=protocol.SavepointDone(path).to_result()
            )
        if isinstance(command, protocol.Rescale):
            path = job.request_rescale(command.parallelism, command.reason)
            return ControlResponse(request_id, ok=True, result={"savepoint": path})
        batches = job.wait_for_checkpoint(command.timeout)
        done = protocol.CheckpointDone(job.checkpoint_dir, batches)
        return ControlResponse(request_id, ok=True, result=done.to_result())
