"""Asking a job from any shell: send a command through the control channel and wait.

The mechanics under :class:`~flinkish_cli.client.jobs.JobClient`'s actions.

A waiting command never leaves a request behind that could be carried out after it gave up:
its request expires when the command stops waiting, and on a time-out, Ctrl-C or SIGTERM
the command withdraws it (see :mod:`flinkish_cli.registry.control`). When two commands try
to end one job at once (``stop`` and ``cancel``), the driver accepts the first and refuses
the second as "already ending"; the second command then waits for the job's end and reports
the job's actual outcome, with exit status 1.

The same functions serve both of the job client's transports: they read jobs through a
:class:`Lookup` (the registry in storage, or ``flinkish web``'s view of it) and carry
requests through a :class:`Channel` (the control channel in storage, or the endpoint's
trigger routes), so a command prints the same lines whichever it went through. The control
channel in storage and the protocol's commands are imported by the functions that send one:
a command that only reads jobs through an endpoint loads neither.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from flinkish_cli.errors import JobError, RequestInterruptedError
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry, UnreadableStatusError

if TYPE_CHECKING:
    from flinkish_cli.registry.control import ControlRequest, ControlResponse
    from flinkish_cli.registry.protocol import Command


class Lookup(Protocol):
    """Where the waiting functions read jobs: :class:`~flinkish_cli.registry.store.JobRegistry`
    or the REST client's view of a registry."""

    def find(self, job_id: str) -> JobStatus | None: ...

    def get(self, job_id: str) -> JobStatus: ...


class Channel(Protocol):
    """How a request reaches a job and its answer comes back:
    :class:`~flinkish_cli.registry.control.ControlChannel` or the REST client's."""

    job_id: str

    def send(self, request: ControlRequest) -> ControlRequest: ...

    def response(self, request_id: str) -> ControlResponse | None: ...

    def withdraw(self, request_id: str) -> bool: ...

    def claimed(self, request_id: str) -> bool: ...

    def forget(self, request_id: str) -> None: ...


#: Detached requests (REST triggers) that may wait for one job's driver at once: a client
#: cannot fill the job's control directory faster than its driver empties it.
MAX_WAITING = 64

#: How long a command whose end request lost a race waits for the job's actual outcome.
END_WAIT = 120.0

#: Looks (0.1 s apart) for a response written as the job ended.
LATE_POLLS = 20

#: What the driver says when it refuses a second end request (stop, cancel) for a job.
ALREADY_ENDING = "already ending"


def _what(action: str) -> str:
    """Wording per action, for messages ("the savepoint request")."""
    from flinkish_cli.registry.protocol import Action

    words = {
        Action.CANCEL.value: "cancel",
        Action.STOP.value: "stop-with-savepoint",
        Action.SAVEPOINT.value: "savepoint",
        Action.CHECKPOINT.value: "checkpoint",
    }
    return words.get(action, action)


def require_running(registry: Lookup, job_id: str, action: str) -> JobStatus:
    """The job's status, if it can take ``action``; a clear :class:`JobError` otherwise."""
    job_id = parse_job_id(job_id)
    try:
        status = registry.get(job_id)
    except UnreadableStatusError as error:
        raise JobError(
            f"Cannot {action} job {job_id}: its status file is unreadable ({error.reason}), "
            "so its state is unknown.",
            error.hint,
        ) from error
    state = status.effective_state()
    if state.is_terminal:
        cause = status.effective_failure_cause()
        detail = f" ({cause.splitlines()[0]})" if cause and state is JobState.FAILED else ""
        raise JobError(
            f"Cannot {action} job {status.job_id}: it is {state.value}{detail}.",
            f"Only a running job accepts '{action}'; see 'flinkish list -a'.",
        )
    return status


def send_detached(
    registry: JobRegistry,
    job_id: str,
    command: Command,
    ttl: float | None = None,
    trigger_id: str | None = None,
) -> str:
    """Send ``command`` without waiting (a detached trigger); its request id, the trigger id.

    The job carries it out when its driver next polls, at most ``ttl`` seconds
    (:data:`~flinkish_cli.registry.control.DETACHED_TTL` when None) from now. A
    ``trigger_id`` chosen by the caller (Flink's clients may) names the request; sending the
    same one again sends nothing, so a retried trigger is carried out once.
    """
    from flinkish_cli.registry.control import DETACHED_TTL, ControlChannel
    from flinkish_cli.registry.protocol import to_request

    channel = ControlChannel(registry, job_id)
    request = to_request(command)
    request.expires = time.time() + (DETACHED_TTL if ttl is None else ttl)
    if trigger_id is not None:
        request.request_id = trigger_id
        if channel.state_of(trigger_id) is not None:
            return trigger_id
    if channel.waiting() >= MAX_WAITING:
        raise JobError(
            f"Job {job_id} has {MAX_WAITING} requests waiting for its driver already; it "
            "takes no more until it has carried them out (or they expire).",
            "See the job's heartbeat with 'flinkish list'; its driver may be busy or gone.",
        )
    channel.send(request)
    return request.request_id


def ask(
    registry: Lookup,
    job_id: str,
    command: Command,
    timeout: float,
    channel: Channel | None = None,
    pause: float | None = None,
) -> ControlResponse:
    """Send ``command`` to the job's driver and wait for its response.

    The request expires when this gives up. On a time-out, Ctrl-C (KeyboardInterrupt) or
    SIGTERM the request is withdrawn; the error says whether the job had already started it.
    ``channel`` (the registry's control channel when None) carries it; ``pause`` is the time
    between looks for the answer (:func:`~flinkish_cli.registry.control.answer_poll_interval`
    when None).
    """
    from flinkish_cli.registry.protocol import to_request

    if channel is None:
        from flinkish_cli.registry.control import ControlChannel, answer_poll_interval

        assert isinstance(registry, JobRegistry)
        channel = ControlChannel(registry, job_id)
        pause = answer_poll_interval(registry.storage) if pause is None else pause
    request = to_request(command)
    what = _what(request.action)
    request.expires = time.time() + timeout
    first = registry.find(job_id)
    driver = _driver_of(first)
    channel.send(request)
    try:
        with _sigterm_interrupts():
            response = _wait(registry, channel, request, timeout, driver, pause or 0.05)
    except KeyboardInterrupt:
        if channel.withdraw(request.request_id):
            raise RequestInterruptedError(
                f"Interrupted: the {what} request to job {job_id} was withdrawn; the job will "
                "not carry it out."
            ) from None
        raise RequestInterruptedError(
            f"Interrupted: job {job_id} had already started the {what} request; it may still "
            "complete.",
            "See 'flinkish list -a' and the job's log ('flinkish logs').",
        ) from None
    if response is not None:
        _forget_quietly(channel, request.request_id)
        return response
    if channel.withdraw(request.request_id):
        raise JobError(
            f"Job {job_id} did not answer the {what} request within {timeout:.0f} s; the request "
            "was withdrawn.",
            "Its driver may be overloaded or gone; 'flinkish list' shows its heartbeat state.",
        )
    late = channel.response(request.request_id)
    if late is not None:
        _forget_quietly(channel, request.request_id)
        return late
    raise JobError(
        f"Job {job_id} did not complete the {what} request within {timeout:.0f} s; it had "
        "started on it, so it may still complete.",
        "See 'flinkish list -a' and the job's log ('flinkish logs').",
    )


def _wait(
    registry: Lookup,
    channel: Channel,
    request: ControlRequest,
    timeout: float,
    driver: int | None,
    pause: float,
) -> ControlResponse | None:
    """The response, or None on a time-out; :class:`JobError` when the job cannot answer."""
    job_id, what = channel.job_id, _what(request.action)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = channel.response(request.request_id)
        if response is not None:
            return response
        status = registry.find(job_id)
        if status is not None and status.effective_state().is_terminal:
            late = late_response(channel, request.request_id)
            if late is not None:  # answered as it ended (a stop ends the job right after)
                return late
            raise JobError(
                f"Job {job_id} ended ({status.effective_state().value}) before it answered "
                f"the {what} request."
            )
        if (
            driver is not None
            and status is not None
            and status.pid is not None
            and _driver_of(status) != driver
            and channel.claimed(request.request_id)
            and channel.response(request.request_id) is None
        ):
            channel.forget(request.request_id)
            raise JobError(
                f"The driver of job {job_id} was restarted while it carried out the {what} "
                "request; the request was not completed.",
                "Try again once 'flinkish list' shows the job RUNNING.",
            )
        time.sleep(pause)
    return None


def late_response(channel: Channel, request_id: str) -> ControlResponse | None:
    """A response written just as the job ended (the status may be written first): read
    again for a moment once the job is seen ended, before concluding it never answered."""
    for _ in range(LATE_POLLS):
        response = channel.response(request_id)
        if response is not None:
            return response
        time.sleep(0.1)
    return None


def _driver_of(status: JobStatus | None) -> int | None:
    """The process that runs the job's driver (another one after a driver restart)."""
    return None if status is None else status.pid


def _forget_quietly(channel: Channel, request_id: str) -> None:
    with contextlib.suppress(Exception):
        channel.forget(request_id)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While waiting, SIGTERM (a scheduler's time-out) interrupts like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def wait_for_end(registry: Lookup, job_id: str, timeout: float, pause: float = 0.2) -> JobStatus:
    """Wait until the job is in a terminal state (its last status after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        status = registry.get(job_id)
        if status.effective_state().is_terminal or time.monotonic() > deadline:
            return status
        time.sleep(pause)


def wait_until_ended(
    registry: Lookup, job_id: str, timeout: float, pause: float = 0.2
) -> JobStatus:
    """:func:`wait_for_end`, and a :class:`JobError` when the job has not ended by then."""
    final = wait_for_end(registry, job_id, timeout, pause)
    if not final.effective_state().is_terminal:
        raise JobError(f"Job {job_id} is still {final.state.value} after {timeout:.0f} s.")
    return final


def refused_end(registry: Lookup, job_id: str, action: str, response: ControlResponse) -> JobError:
    """The error for an end request (stop, cancel) that the driver refused.

    When the job is ending anyway (another stop or cancel won the race, or the refused stop
    failed after its queries stopped), wait for its end and name its actual outcome.
    """
    error = (response.error or "refused").rstrip(".")
    race = ALREADY_ENDING in error or any(f"it is {s.value}" in error for s in _ENDING)
    if not race and not _ending(registry, job_id):
        return JobError(f"Cannot {action} job {job_id}: {error}.")
    final = wait_for_end(registry, job_id, END_WAIT)
    state = final.effective_state()
    why = "another request was already ending it" if race else error
    if not state.is_terminal:
        return JobError(
            f"Cannot {action} job {job_id}: {why}; it is still {state.value} after "
            f"{END_WAIT:.0f} s.",
            "See 'flinkish list -a' for its outcome.",
        )
    cause = final.effective_failure_cause()
    detail = f" ({cause.splitlines()[0]})" if cause else ""
    return JobError(f"Cannot {action} job {job_id}: {why}; it ended {state.value}{detail}.")


_ENDING = (JobState.CANCELLING, JobState.FAILING)


def _ending(registry: Lookup, job_id: str, within: float = 3.0) -> bool:
    """Whether the job is ending or has ended (CANCELLING, FAILING, or a terminal state), as
    its status shows within ``within`` seconds (the driver writes it as it starts ending)."""
    deadline = time.monotonic() + within
    while True:
        status = registry.find(job_id)
        state = status.effective_state() if status is not None else None
        if state is not None and (state.is_terminal or state in _ENDING):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
