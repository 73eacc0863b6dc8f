"""A graceful stop (``stop``, ``cancel --withSavepoint``, a rescale, an upgrade) stops each
query between two batches, and never waits its whole timeout for a query that is behind its
input (Spark starts such a query's next batch the instant the last one commits, so it is
never seen waiting for a trigger).

At the seam: a double of Spark's ``StreamingQuery`` whose batches are driven by the test.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flinkish_cli.runtime.queries.stopping import last_batch_id, stop_between_batches


class LaggingQuery:
    """A query always running a batch: ``isTriggerActive`` never false; each call of
    ``next_batch`` commits the running batch (its progress names it) and starts the next.
    ``running_when_stopped`` is the batch that was running when ``stop()`` came."""

    def __init__(self, committed: int | None = 4, progress_as_dict: bool = False) -> None:
        self.committed, self.running = committed, (committed or 0) + 1
        self.progress_as_dict = progress_as_dict
        self.isActive = True
        self.status = {"isTriggerActive": True, "message": "Processing new data"}
        self.running_when_stopped: int | None = None
        self.stopped_at: float | None = None

    @property
    def lastProgress(self) -> Any:
        if self.committed is None:
            return None
        if self.progress_as_dict:  # pyspark's Connect client and older pysparks: a dict
            return {"batchId": self.committed, "numInputRows": 10}
        return type("StreamingQueryProgress", (), {"batchId": self.committed})()

    def next_batch(self) -> None:
        self.committed, self.running = self.running, self.running + 1

    def stop(self) -> None:
        self.running_when_stopped, self.stopped_at = self.running, time.monotonic()
        self.isActive = False


def _commit_later(query: LaggingQuery, after: float) -> threading.Thread:
    thread = threading.Timer(after, query.next_batch)
    thread.start()
    return thread


def test_a_query_behind_its_input_is_stopped_once_its_running_batch_has_committed() -> None:
    query = LaggingQuery(committed=4)
    started = time.monotonic()
    committer = _commit_later(query, 0.3)
    stop_between_batches(query, timeout=30, poll=0.01)
    committer.join()
    # batch 5 was running: it committed, and the stop came while batch 6 had just begun
    assert query.committed == 5 and query.running_when_stopped == 6
    assert query.stopped_at is not None and query.stopped_at - started < 5, "not the timeout"


def test_the_stop_waits_for_the_running_batch_never_cuts_it() -> None:
    query = LaggingQuery(committed=4)
    committer = _commit_later(query, 0.5)
    started = time.monotonic()
    stop_between_batches(query, timeout=30, poll=0.01)
    committer.join()
    assert query.stopped_at is not None and query.stopped_at - started >= 0.45
    assert query.committed == 5, "batch 5, running when the stop came, committed first"


def test_a_query_waiting_for_its_trigger_is_stopped_at_once() -> None:
    query = LaggingQuery(committed=4)
    query.status["isTriggerActive"] = False
    started = time.monotonic()
    stop_between_batches(query, timeout=30, poll=0.01)
    assert query.running_when_stopped == 5 and query.stopped_at - started < 1


def test_the_first_batch_of_a_new_query_counts_as_a_batch_that_ended() -> None:
    query = LaggingQuery(committed=None, progress_as_dict=True)  # no progress yet
    committer = _commit_later(query, 0.2)
    stop_between_batches(query, timeout=30, poll=0.01)
    committer.join()
    assert query.committed == 1 and query.running_when_stopped == 2


def test_a_batch_that_never_ends_is_stopped_after_the_timeout() -> None:
    query = LaggingQuery(committed=4)
    started = time.monotonic()
    stop_between_batches(query, timeout=0.3, poll=0.01)
    assert query.running_when_stopped == 5 and query.stopped_at - started >= 0.3


def test_the_last_batch_reads_both_forms_of_progress_and_nothing_else() -> None:
    assert last_batch_id(LaggingQuery(committed=7)) == 7
    assert last_batch_id(LaggingQuery(committed=7, progress_as_dict=True)) == 7
    assert last_batch_id(LaggingQuery(committed=None)) is None

    class Gone:
        @property
        def lastProgress(self) -> Any:
            raise RuntimeError("the JVM went away")

    assert last_batch_id(Gone()) is None
