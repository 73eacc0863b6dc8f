"""The whole of ``flinkish run``: prepare, start, and follow or detach.

The presentation is a :class:`Presenter` handed in by the caller (the CLI), so that this
module decides *what* happens and never *how it looks*.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, Protocol

from flinkish_cli.errors import JobCanceledError, JobError, JobFailedError
from flinkish_cli.registry.control import ControlChannel
from flinkish_cli.registry.protocol import Cancel, Stop, to_request
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.submission import launcher, submit
from flinkish_cli.submission.follow import Update, follow, pass_output


class Presenter(Protocol):
    """What ``run`` tells its user."""

    def notice(self, message: str) -> None: ...
    def submitted(self, job_id: str) -> None: ...
    def output_line(self, line: str) -> None: ...
    def update(self, update: Update) -> None: ...
    def ended(self, status: JobStatus, detached: bool) -> None: ...
    def interrupted(self, job_id: str, signum: int, hard: bool) -> None: ...
    def close(self) -> None: ...


def submit_and_follow(request: submit.RunRequest, config: Any, presenter: Presenter) -> JobStatus:
    """Run the job; returns its final (attached) or RUNNING (detached; a yarn-application's
    CREATED once YARN accepted it) status.

    Raises :class:`JobFailedError` when the job fails and :class:`JobCanceledError` when an
    attached job is cancelled, so that the exit status tells scripts what happened.
    """
    if request.detached:
        status = launch_detached(request, config, presenter.notice)
        if status.state is JobState.FAILED:
            raise started_failed(status)
        presenter.submitted(status.job_id)
        presenter.ended(status, detached=True)
        return status
    prepared = submit.prepare(request, config, restore_plan(request, config, presenter.notice))
    for message in prepared.notices:
        presenter.notice(message)
    launched = submit.start(prepared, watch_cli=request.shutdown_on_attached_exit)
    job_id = prepared.plan.job_id
    presenter.submitted(job_id)
    if launched.process.stdout is not None:
        pass_output(launched.process.stdout, launched.log_path, presenter.output_line)
    interrupts = _Interrupts(prepared.registry, job_id, presenter)
    status: JobStatus | None = None
    try:
        with interrupts:
            for update in follow(prepared.registry, job_id, launched):
                presenter.update(update)
                status = update.status
    finally:
        presenter.close()
    assert status is not None
    presenter.ended(status, detached=False)
    return attached_end(status, str(prepared.log_path), str(prepared.plan.job_dir))


def attached_end(status: JobStatus, log_path: str, job_dir: str) -> JobStatus:
    """An attached job's final status; :class:`JobFailedError` or :class:`JobCanceledError`
    when it failed or was cancelled (the exit status tells scripts)."""
    job_id = status.job_id
    state = status.state if status.state.is_terminal else status.effective_state()
    if state is JobState.FAILED:
        raise JobFailedError(
            f"Job {job_id} failed: {status.effective_failure_cause()}",
            f"The full log is {log_path} ('flinkish logs {job_id}').",
        )
    if state is JobState.CANCELED:
        raise JobCanceledError(
            f"Job {job_id} was canceled: {status.failure_cause or 'by user'}",
            f"Its checkpoints are under {job_dir}; resume it with 'flinkish run -s {job_dir} ...'.",
        )
    return status


def started_failed(status: JobStatus) -> JobFailedError:
    """A detached job that failed at start-up, as ``run -d`` reports it."""
    return JobFailedError(
        f"Job {status.job_id} failed at start-up: {status.failure_cause}",
        f"The full log is {status.log_path} ('flinkish logs {status.job_id}').",
    )


def launch_detached(
    request: submit.RunRequest, config: Any, notice: Callable[[str], None]
) -> JobStatus:
    """Start the job and wait until it runs: its status, RUNNING, or FAILED when it failed
    at start-up (a :class:`JobError` when it could not be started at all); a yarn-application
    returns CREATED once YARN has accepted its application (Flink's ``run -d``: a failure
    after that reaches ``list`` and ``logs``). ``notice`` gets what the user should know of
    how it was placed."""
    prepared = submit.prepare(request, config, restore_plan(request, config, notice))
    for message in prepared.notices:
        notice(message)
    launched = submit.start(prepared)
    try:
        return launcher.wait_until_running(
            prepared.registry, prepared.plan.job_id, launched, accepted=True
        )
    except JobError:
        prepared.discard()
        raise


def restore_plan(
    request: submit.RunRequest,
    config: Any,
    notice: Callable[[str], None] | None = None,
    environment: dict[str, str] | None = None,
) -> Any:
    """Where the job starts from (``-s``), checked, and the program checked against its
    state (:mod:`.restore_check`, its planning process with ``environment``, else this one's;
    what it says goes to ``notice``): a RestorePlan, or None. A request whose
    ``leave_out`` is set was checked already (``upgrade``)."""
    if not request.from_savepoint:
        return None
    from flinkish_cli.savepoints.restore import open_restore
    from flinkish_cli.submission import restore_check

    plan, source, storage = open_restore(request, config)
    if request.leave_out is not None:
        plan.leave_out = dict(request.leave_out)
        return plan
    if source is None or storage is None:
        return plan  # on HDFS: the driver checks it
    submit.check_program(request)  # the cheap checks of the program first
    program = request.script or request.module
    verdict = restore_check.check_restore(
        request,
        config,
        restore_check.of_source(source, storage),
        notice or (lambda _message: None),
        f"The program {program}",
        "Nothing was started.",
        environment=environment,
    )
    plan.leave_out = verdict.leave_out
    return plan


class _Interrupts:
    """Ctrl-C / SIGTERM while attached: first a graceful stop, then a cancel."""

    def __init__(self, registry: Any, job_id: str, presenter: Presenter) -> None:
        self.channel = ControlChannel(registry, job_id)
        self.job_id = job_id
        self.presenter = presenter
        self.count = 0
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupts:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.count += 1
        hard = self.count > 1
        self.presenter.interrupted(self.job_id, signum, hard)
        if hard:
            self.channel.send(to_request(Cancel()))
        else:
            name = signal.Signals(signum).name
            self.channel.send(to_request(Stop(f"Stopped by {name}.")))
