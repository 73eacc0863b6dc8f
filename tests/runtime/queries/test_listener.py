"""The job's query listener at its seam: Spark's events, as the JVM hands them over (their
JSON, in the shapes Spark 4 writes), become the runtime's calls, one py4j round trip each;
events delivered as pyspark objects (Spark Connect's listener bus) give the same calls."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
)

from flinkish_cli.runtime.queries.listener import JsonUpcalls, StatusListener

QUERY = "49c837cc-93ce-49f8-8c36-2de256a0ef09"
RUN = "18e7d47a-673e-4459-b659-8ce284755c05"
STARTED = {"id": QUERY, "runId": RUN, "name": "counts", "timestamp": "2026-11-26T06:38:41.800Z",
           "jobTags": []}  # fmt: skip
PROGRESS = {
    "id": QUERY, "runId": RUN, "name": None, "timestamp": "2026-11-26T06:38:43.400Z",
    "batchId": 3, "batchDuration": 412, "numInputRows": 7, "inputRowsPerSecond": 3.5,
    "processedRowsPerSecond": 17.0, "durationMs": {"triggerExecution": 412},
    "eventTime": {}, "stateOperators": [],
    "sources": [{"description": "RateStreamV2", "startOffset": 1, "endOffset": 2,
                 "latestOffset": 2, "numInputRows": 7, "inputRowsPerSecond": 3.5,
                 "processedRowsPerSecond": 17.0}],
    "sink": {"description": "noop", "numOutputRows": -1},
}  # fmt: skip
IDLE = {"id": QUERY, "runId": RUN, "timestamp": "2026-11-26T06:38:50.000Z"}
FAILED = {"id": QUERY, "runId": RUN, "exception": "ValueError: boom",
          "errorClassOnException": None}  # fmt: skip


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_started(self, name: str | None, query_id: str, run_id: str) -> None:
        self.calls.append(("started", name, query_id, run_id))

    def on_progress(self, progress: dict[str, Any]) -> None:
        self.calls.append(("progress", progress["batchId"], progress["numInputRows"]))

    def on_idle(self, query_id: str, run_id: str) -> None:
        self.calls.append(("idle", query_id, run_id))

    def on_terminated(self, query_id: str, exception: str | None) -> None:
        self.calls.append(("terminated", query_id, exception))


class JvmEvent:
    """A JVM event as py4j hands it over; counts the round trips made on it."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.calls = 0

    def json(self) -> str:
        self.calls += 1
        return json.dumps(self.body)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a field read over py4j: {name}")


EXPECTED = [
    ("started", "counts", QUERY, RUN),
    ("progress", 3, 7),
    ("idle", QUERY, RUN),
    ("terminated", QUERY, "ValueError: boom"),
]


def test_each_jvm_event_is_read_as_its_json_in_one_round_trip() -> None:
    runtime = Recorder()
    upcalls = JsonUpcalls(runtime)
    events = [
        JvmEvent(STARTED),
        JvmEvent({"progress": PROGRESS}),
        JvmEvent(IDLE),
        JvmEvent(FAILED),
    ]
    upcalls.onQueryStarted(events[0])
    upcalls.onQueryProgress(events[1])
    upcalls.onQueryIdle(events[2])
    upcalls.onQueryTerminated(events[3])
    assert runtime.calls == EXPECTED
    assert [event.calls for event in events] == [1, 1, 1, 1]
    assert JsonUpcalls.Java.implements == [
        "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
    ]


def test_an_unnamed_query_and_a_clean_end() -> None:
    runtime = Recorder()
    upcalls = JsonUpcalls(runtime)
    upcalls.onQueryStarted(JvmEvent({**STARTED, "name": None}))
    upcalls.onQueryTerminated(JvmEvent({**FAILED, "exception": None}))
    assert runtime.calls == [("started", None, QUERY, RUN), ("terminated", QUERY, None)]


def test_events_delivered_as_pyspark_objects_give_the_same_calls() -> None:
    runtime = Recorder()
    listener = StatusListener(runtime)
    listener.onQueryStarted(QueryStartedEvent.fromJson(STARTED))
    listener.onQueryProgress(QueryProgressEvent.fromJson({"progress": PROGRESS}))
    listener.onQueryIdle(QueryIdleEvent.fromJson(IDLE))
    listener.onQueryTerminated(QueryTerminatedEvent.fromJson(FAILED))
    assert runtime.calls == EXPECTED
