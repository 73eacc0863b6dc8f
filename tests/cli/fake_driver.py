"""A job's driver reduced to its control channel, for CLI tests that need no Spark.

:class:`FakeDriver` writes a RUNNING job's status into a real registry and answers control
requests from a thread the way flinkish's driver does (a savepoint directory and its path, a
stop that ends the job FINISHED or as ``end_state`` asks, a cancel, a checkpoint with each
query's batch), so the real ``flinkish`` command line can be driven against it end to end.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from flinkish_cli.registry.control import ControlChannel, ControlRequest, ControlResponse
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry

BATCHES = {"counts": 4, "raw": 7}


class FakeDriver:
    """Answers a job's control requests from a thread until :meth:`close`."""

    def __init__(self, registry: JobRegistry, job_id: str, answer: bool = True) -> None:
        self.registry = registry
        self.job_id = job_id
        self.channel = ControlChannel(registry, job_id)
        self.requests: list[ControlRequest] = []
        #: When set, end requests (stop, cancel) are refused as "already ending" and the job
        #: ends in this state, as when another stop or cancel won the race.
        self.other_end: JobState | None = None
        #: The refusal's text (the driver says "already ending", or "it is CANCELLING").
        self.refusal = "Job {job} is already ending (RUNNING)."
        #: When set, the response file is written with this text instead (a damaged answer).
        self.damaged_response: str | None = None
        self.status = JobStatus(
            job_id=job_id, name="counts_job", state=JobState.RUNNING, pid=os.getpid()
        )
        self.status.start_time = time.time() - 60
        for name, batch in BATCHES.items():
            query = QueryStatus(name=name, checkpoint=f"{registry.root}/{job_id}/{name}")
            query.last_committed_batch = batch
            self.status.queries[name] = query
        self.registry.write(self.status)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if answer:
            self.start()

    def start(self) -> FakeDriver:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def end(self, state: JobState, cause: str | None = None) -> None:
        self.status.state = state
        self.status.end_time = time.time()
        self.status.failure_cause = cause
        self.registry.write(self.status)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self.status.state.is_terminal:
                self.status.heartbeat = time.time()
                self.registry.write(self.status)
            for request in self.channel.pending():
                self.requests.append(request)
                self._answer(request)
            time.sleep(0.02)

    def _answer(self, request: ControlRequest) -> None:
        args, job = request.args, self.job_id
        end_state: JobState | None = None
        if request.action in ("stop", "cancel") and self.other_end is not None:
            error = self.refusal.format(job=job)
            response = ControlResponse(request.request_id, ok=False, error=error)
            end_state = self.other_end
        elif request.action == "savepoint" or (request.action == "stop" and args["savepoint"]):
            path = f"{args['target']}/savepoint-{job[:6]}-{len(self.requests):012x}"
            if "://" not in path:
                Path(path).mkdir(parents=True)
            response = ControlResponse(request.request_id, ok=True, result={"path": path})
            if request.action == "stop":
                end_state = JobState(args.get("end_state") or "FINISHED")
        elif request.action in ("stop", "cancel"):
            response = ControlResponse(request.request_id, ok=True)
            end_state = JobState.CANCELED
        elif request.action == "checkpoint":
            result = {"path": f"{self.registry.root}/{job}", "batches": dict(BATCHES)}
            response = ControlResponse(request.request_id, ok=True, result=result)
        else:
            response = ControlResponse(request.request_id, ok=False, error="Unknown action.")
        if self.damaged_response is not None:
            self.registry.storage.write_text(
                self.channel._path(request.request_id, "response.json"), self.damaged_response
            )
        else:
            self.channel.respond(response)
        if end_state is not None:
            self.end(end_state, "Canceled by user." if end_state is JobState.CANCELED else None)
