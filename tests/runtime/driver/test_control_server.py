"""The control channel's job side in this process: :class:`ControlServer` over a real
registry in a temporary directory and a job double, asked by the job client's own
:func:`~flinkish_cli.client.asking.ask`. What the driver's server decides (an end answered
at once even while a savepoint is being taken, a refused end with the job's reason, the
job's error as the answer, a request that is no command refused) is checked in seconds,
without Spark; the Spark scenarios cover the same answers with a real driver."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flinkish_cli.client.asking import ask
from flinkish_cli.errors import SavepointError
from flinkish_cli.registry import protocol
from flinkish_cli.registry.control import ControlChannel, ControlRequest, ControlResponse
from flinkish_cli.registry.history import Trigger
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.driver.control_server import ControlServer

JOB = "5e" * 16
TIMEOUT = 30.0


class JobDouble:
    """The job's runtime as the server sees it: records what it was asked; a savepoint
    waits for :attr:`release` when :attr:`hold` is set."""

    def __init__(self, checkpoint_dir: str) -> None:
        self.ends: list[tuple[JobState, str, bool]] = []
        self.savepoints: list[tuple[str, bool]] = []
        self.accept_end = True
        self.hold = False
        self.taking = threading.Event()
        self.release = threading.Event()
        self.failure: Exception | None = None
        self._checkpoint_dir = checkpoint_dir

    def request_end(self, state: JobState, cause: str, graceful: bool) -> bool:
        self.ends.append((state, cause, graceful))
        return self.accept_end

    def stop_with_savepoint(
        self,
        target_dir: str,
        drain: bool,
        end_state: JobState,
        explicit_target: bool,
        trigger: Trigger,
    ) -> str:
        return f"{target_dir}/savepoint-stop"

    def trigger_savepoint(self, target_dir: str, explicit_target: bool) -> str:
        self.savepoints.append((target_dir, explicit_target))
        if self.failure is not None:
            raise self.failure
        if self.hold:
            self.taking.set()
            assert self.release.wait(TIMEOUT)
        return f"{target_dir}/savepoint-1"

    def wait_for_checkpoint(self, timeout: float) -> dict[str, int]:
        return {"counts": 4}

    def request_rescale(self, parallelism: int, reason: str) -> str | None:
        return None

    def describe_ending(self) -> str:
        return f"Job {JOB} is already ending (CANCELLING)."

    @property
    def checkpoint_dir(self) -> str:
        return self._checkpoint_dir


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="counts", state=JobState.RUNNING))
    return registry


@contextlib.contextmanager
def serving(registry: JobRegistry, job: JobDouble) -> Iterator[ControlServer]:
    """The server, polled from a thread as the driver's loop polls it."""
    server = ControlServer(ControlChannel(registry, JOB), job)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            server.poll()
            stop.wait(0.02)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        job.release.set()
        stop.set()
        thread.join(TIMEOUT)
        server.shutdown()


def _ask(registry: JobRegistry, command: protocol.Command) -> ControlResponse:
    return ask(registry, JOB, command, TIMEOUT, pause=0.02)


def test_a_cancel_ends_the_job_at_once(registry: JobRegistry, tmp_path: Path) -> None:
    job = JobDouble(str(tmp_path / "cp"))
    with serving(registry, job):
        response = _ask(registry, protocol.Cancel())
    assert response.ok and response.error is None
    assert job.ends == [(JobState.CANCELED, "Canceled by user.", False)]


def test_an_end_the_job_refuses_is_answered_with_its_reason(
    registry: JobRegistry, tmp_path: Path
) -> None:
    job = JobDouble(str(tmp_path / "cp"))
    job.accept_end = False
    with serving(registry, job):
        response = _ask(registry, protocol.Stop("Stopped by its supervisor."))
    assert not response.ok
    assert response.error == f"Job {JOB} is already ending (CANCELLING)."
    assert job.ends == [(JobState.CANCELED, "Stopped by its supervisor.", True)]


def test_a_cancel_is_answered_while_a_savepoint_is_being_taken(
    registry: JobRegistry, tmp_path: Path
) -> None:
    job = JobDouble(str(tmp_path / "cp"))
    job.hold = True
    with serving(registry, job):
        answers: list[ControlResponse] = []
        savepoint = threading.Thread(
            target=lambda: answers.append(_ask(registry, protocol.TriggerSavepoint("/sp")))
        )
        savepoint.start()
        assert job.taking.wait(TIMEOUT), "the savepoint never started"
        cancelled = _ask(registry, protocol.Cancel())
        assert cancelled.ok and not answers  # answered while the savepoint still runs
        job.release.set()
        savepoint.join(TIMEOUT)
    assert answers and answers[0].ok
    assert protocol.SavepointDone.from_result(answers[0].result).path == "/sp/savepoint-1"


def test_the_jobs_error_is_the_answer(registry: JobRegistry, tmp_path: Path) -> None:
    job = JobDouble(str(tmp_path / "cp"))
    job.failure = SavepointError("The savepoint directory /sp is not writable.")
    with serving(registry, job):
        response = _ask(registry, protocol.TriggerSavepoint("/sp"))
    assert not response.ok
    assert response.error == "The savepoint directory /sp is not writable."


def test_a_request_that_is_no_command_is_refused_with_its_reason(
    registry: JobRegistry, tmp_path: Path
) -> None:
    job = JobDouble(str(tmp_path / "cp"))
    channel = ControlChannel(registry, JOB)
    request = channel.send(ControlRequest("explode", expires=time.time() + TIMEOUT))
    with serving(registry, job):
        deadline = time.monotonic() + TIMEOUT
        while (response := channel.response(request.request_id)) is None:
            assert time.monotonic() < deadline, "no answer"
            time.sleep(0.02)
    assert not response.ok and response.error == "Unknown 'explode'."
    assert job.ends == [] and job.savepoints == []
