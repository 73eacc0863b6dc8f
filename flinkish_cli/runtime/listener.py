"""Spark's streaming query events, turned into the job's status."""

from __future__ import annotations

import json
from typing import Any, Protocol

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
