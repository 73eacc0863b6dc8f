"""Spark's streaming query events, turned into the job's status."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StreamingQueryListener

if TYPE_CHECKING:
    from flinkish_cli.runtime.job import JobRuntime


class StatusListener(StreamingQueryListener):
    """Forwards query progress and termination to the :class:`JobRuntime`."""

    def __init__(self, runtime: JobRuntime) -> None:
        self.runtime = runtime

    def onQueryStarted(self, event: Any) -> None:
        self.runtime.on_started(event.name, str(event.id), str(event.runId))

    def onQueryProgress(self, event: Any) -> None:
        self.runtime.on_progress(json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        return None

    def onQueryTerminated(self, event: Any) -> None:
        self.runtime.on_terminated(str(event.id), event.exception)
