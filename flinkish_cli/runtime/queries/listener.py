"""Spark's streaming query events, turned into the job's status.

In a classic driver, pyspark delivers each event to a Python listener by building it from
its JVM object field by field: a py4j round trip per field, some fifty for a progress event
of a stateful query, a few milliseconds of both processes' CPU on every micro-batch of a job
that runs for months. :class:`StatusListener` takes the events through :class:`JsonUpcalls`
instead: each event's own JSON (``event.json``, what Spark Connect's listener bus sends),
one round trip. In Spark Connect the events already arrive as JSON (pyspark's
``fromJson``), and the listener's ordinary methods run.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Protocol

from pyspark.sql.streaming import StreamingQueryListener


class QueryEvents(Protocol):
    """What receives the events (the job's runtime)."""

    def on_started(self, name: str | None, query_id: str, run_id: str) -> None: ...

    def on_progress(self, progress: dict[str, Any]) -> None: ...

    def on_idle(self, query_id: str, run_id: str) -> None: ...

    def on_terminated(self, query_id: str, exception: str | None) -> None: ...


class StatusListener(StreamingQueryListener):
    """Forwards query progress, idleness (a trigger that found no new input) and
    termination to the job's runtime."""

    def __init__(self, runtime: QueryEvents) -> None:
        self.runtime = runtime

    def onQueryStarted(self, event: Any) -> None:
        self.runtime.on_started(event.name, str(event.id), str(event.runId))

    def onQueryProgress(self, event: Any) -> None:
        self.runtime.on_progress(json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        self.runtime.on_idle(str(event.id), str(event.runId))

    def onQueryTerminated(self, event: Any) -> None:
        self.runtime.on_terminated(str(event.id), event.exception)

    @property
    def _jlistener(self) -> Any:
        """What a classic ``StreamingQueryManager.addListener`` registers (pyspark reads
        this property): Spark's Python listener wrapper around :class:`JsonUpcalls`."""
        if not hasattr(self, "_jlistenerobj"):
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            assert jvm is not None, "a classic listener needs the driver's JVM"
            wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper
            self._jlistenerobj = wrapper(JsonUpcalls(self.runtime))
        return self._jlistenerobj


class JsonUpcalls:
    """Spark's ``PythonStreamingQueryListener`` implemented over py4j: each event is read
    as its JSON, in one call (the fields are Spark's ``StreamingQueryListener`` events')."""

    def __init__(self, runtime: QueryEvents) -> None:
        self.runtime = runtime

    def onQueryStarted(self, jevent: Any) -> None:
        event = json.loads(jevent.json())
        self.runtime.on_started(event.get("name"), event["id"], event["runId"])

    def onQueryProgress(self, jevent: Any) -> None:
        self.runtime.on_progress(json.loads(jevent.json())["progress"])

    def onQueryIdle(self, jevent: Any) -> None:
        event = json.loads(jevent.json())
        self.runtime.on_idle(event["id"], event["runId"])

    def onQueryTerminated(self, jevent: Any) -> None:
        event = json.loads(jevent.json())
        self.runtime.on_terminated(event["id"], event.get("exception"))

    class Java:
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
        ]
