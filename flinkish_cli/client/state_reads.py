"""Reading a job's state for a long-lived process (``flinkish web``), in child processes.

The web server must never start a JVM inside itself, so each read runs in
``python -m flinkish_cli.state`` (:mod:`flinkish_cli.state.__main__`), with the request on
its standard input, and this module waits for its answer:

- **one at a time per job**: a second request for a job waits for the first, and then
  usually finds its answer in the cache; at most :data:`MAX_CHILDREN` reads run at once
  over all jobs (each is a JVM);
- **cached by batch**: an answer is kept with the committed batch of each of the job's
  queries when it was asked; the same request is answered from the cache as long as the
  job has committed no batch since (a finished or idle job is read once);
- **bounded in time**: a read that takes longer than :data:`READ_TIMEOUT` is killed (its
  whole process group, JVM included) and answered with a :class:`StateError`.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.plan.child import run_child

#: Seconds a read may take, Spark's start included.
READ_TIMEOUT = 300.0
#: Reads running at once, over all jobs.
MAX_CHILDREN = 2
#: Answers kept (the oldest used is dropped first).
CACHE_SIZE = 64


class StateReads:
    """The state reads of one long-lived job client."""

    def __init__(self, config: Any, timeout: float = READ_TIMEOUT) -> None:
        self.config = config
        self.timeout = timeout
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._children = threading.BoundedSemaphore(MAX_CHILDREN)
        self._cache: OrderedDict[str, tuple[dict[str, int | None], dict[str, Any]]] = OrderedDict()

    def _lock(self, job_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(job_id, threading.Lock())

    def read(
        self, job_id: str, batches: dict[str, int | None], request: dict[str, Any]
    ) -> dict[str, Any]:
        """The answer to ``request`` (``action`` "ls" or "show" and its options) for the
        job, whose queries are at ``batches`` now: from the cache, or from a child."""
        key = json.dumps({"job": job_id, **request}, sort_keys=True)
        with self._lock(job_id):
            with self._guard:
                cached = self._cache.get(key)
                if cached is not None and cached[0] == batches:
                    self._cache.move_to_end(key)
                    return cached[1]
            document = self._run({**request, "source": job_id}, job_id)
            with self._guard:
                self._cache[key] = (dict(batches), document)
                self._cache.move_to_end(key)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            return document

    def _run(self, request: dict[str, Any], job_id: str) -> dict[str, Any]:
        payload = {**request, "conf": self.config.to_flat(include_secrets=True)}
        with self._children:  # its JVM too is killed with its process group
            ended = run_child("flinkish_cli.state", payload, self.timeout)
        if ended.timed_out:
            raise StateError(
                f"Reading the state of job {job_id} took longer than {self.timeout:.0f} s "
                "and was stopped.",
                "Read it with 'flinkish state ls|show <JobID>', which has no time limit.",
            )
        answer = ended.answer
        if answer is None:
            last = ended.last_line() or "no answer"
            raise StateError(
                f"Reading the state of job {job_id} failed (exit status "
                f"{ended.returncode}): {last[:300]}"
            )
        if not answer.get("ok"):
            error = StateNotFoundError if answer.get("not-found") else StateError
            raise error(str(answer.get("error")), answer.get("hint"))
        return dict(answer["document"])
