"""Acting on a job from any shell: ask its driver through the control channel and wait.

Used by ``cancel`` (and ``stop``/``savepoint``); callable without click.
"""

from __future__ import annotations

import time

from flinkish_cli.errors import JobError
from flinkish_cli.registry.control import (
    ControlChannel,
    ControlRequest,
    ControlResponse,
    poll_interval,
)
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry


def require_running(registry: JobRegistry, job_id: str, action: str) -> JobStatus:
    """The job's status, if it can take ``action``; a clear :class:`JobError` otherwise."""
    status = registry.get(parse_job_id(job_id))
    state = status.effective_state()
    if state.is_terminal:
        cause = status.effective_failure_cause()
        detail = f" ({cause.splitlines()[0]})" if cause and state is JobState.FAILED else ""
        raise JobError(
            f"Cannot {action} job {status.job_id}: it is {state.value}{detail}.",
            f"Only a running job accepts '{action}'; see 'flinkish list -a'.",
        )
    return status


def ask(
    registry: JobRegistry, job_id: str, request: ControlRequest, timeout: float
) -> ControlResponse:
    """Send ``request`` to the job's driver and wait for its response."""
    channel = ControlChannel(registry, job_id)
    channel.send(request)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = channel.response(request.request_id)
        if response is not None:
            return response
        status = registry.find(job_id)
        if status is not None and status.effective_state().is_terminal:
            raise JobError(
                f"Job {job_id} ended ({status.effective_state().value}) before it answered "
                f"the {request.action} request."
            )
        time.sleep(poll_interval(registry.storage) / 2)
    raise JobError(
        f"Job {job_id} did not answer the {request.action} request within {timeout:.0f} s.",
        "Its driver may be overloaded or gone; 'flinkish list' shows its heartbeat state.",
    )


def wait_for_end(registry: JobRegistry, job_id: str, timeout: float) -> JobStatus:
    """Wait until the job is in a terminal state."""
    deadline = time.monotonic() + timeout
    while True:
        status = registry.get(job_id)
        if status.effective_state().is_terminal or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def cancel_job(registry: JobRegistry, job_id: str, timeout: float = 120.0) -> JobStatus:
    """Cancel a running job at once; its final status."""
    status = require_running(registry, job_id, "cancel")
    response = ask(registry, status.job_id, ControlRequest("cancel"), timeout)
    if not response.ok:
        raise JobError(f"Cannot cancel job {status.job_id}: {response.error}")
    final = wait_for_end(registry, status.job_id, timeout)
    if not final.effective_state().is_terminal:
        raise JobError(f"Job {status.job_id} is still {final.state.value} after {timeout:.0f} s.")
    return final
