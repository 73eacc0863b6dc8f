"""A file source's backlog: the rows of the input files it has not taken yet.

Kafka's source tells how far behind it is (``offsetsBehindLatest``); Spark's file source
tells nothing, so flinkish measures it after a batch, as the autoscaler and ``/metrics``
need it (it becomes the batch's ``lag``, :attr:`~flinkish_cli.registry.status.Progress.lag`):

- the batch's end offset (``{"logOffset": N}``) names the entry of the source's log in the
  query's checkpoint (``sources/<i>/N``, or ``N.compact`` when batch N was a compaction)
  that lists the files the batch took, each with its modification time;
- Spark takes new files oldest first (``latestFirst`` false, its default), so the files of
  the source's directory modified after the newest it took are the backlog (those modified
  at that same moment count unless the batch took them);
- in rows: those files times the rows per file of the batch (its rows over its files).

A listing of the directory per measure, so one source is measured at most every
:data:`EVERY` seconds (the last figure stands between). A source read through a glob, a
directory that cannot be listed, a log entry that cannot be read: unknown (None), never an
error of the job.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.runtime.explain.spark_plan import path_of

log = logging.getLogger("flinkish.runtime")

#: Seconds between two listings of one source's directory.
EVERY = 5.0
_GLOB = set("*?[{")


@dataclass
class FileBacklog:
    """Measures the backlog of a query's file sources from its checkpoint's source log."""

    #: opens the storage of a path (local disk, S3, HDFS)
    open_storage: Callable[[str], Any]
    _last: dict[tuple[str, int], tuple[float, float | None]] = field(default_factory=dict)

    def of(self, checkpoint: str, progress: dict[str, Any]) -> float | None:
        """The rows behind of the query's file sources after ``progress``'s batch; None when
        it has none or none can be measured."""
        total, known = 0.0, False
        for index, source in enumerate(progress.get("sources") or []):
            if not isinstance(source, dict):
                continue
            directory = _local(path_of(str(source.get("description") or "")))
            if directory is None or _GLOB & set(directory):
                continue
            behind = self._measured(checkpoint, index, directory, source)
            if behind is not None:
                total, known = total + behind, True
        return total if known else None

    def _measured(
        self, checkpoint: str, index: int, directory: str, source: dict[str, Any]
    ) -> float | None:
        key, now = (checkpoint, index), time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last[0] < EVERY:
            return last[1]
        try:
            behind = self._behind(checkpoint, index, directory, source)
        except Exception as error:  # unknown, never a failure of the job
            log.debug("The backlog of %s could not be measured: %s", directory, error)
            behind = None
        self._last[key] = (now, behind)
        return behind

    def _behind(
        self, checkpoint: str, index: int, directory: str, source: dict[str, Any]
    ) -> float | None:
        offset = (
            (source.get("endOffset") or {}) if isinstance(source.get("endOffset"), dict) else {}
        )
        batch = offset.get("logOffset")
        if not isinstance(batch, int) or batch < 0:
            return None
        taken = self._taken(checkpoint, index, batch)
        if taken is None:
            return None
        paths, newest = taken
        storage = self.open_storage(directory)
        waiting = [
            item
            for item in storage.list(directory)
            if not item.is_dir
            and not item.name.startswith((".", "_"))
            and item.mtime is not None
            and item.mtime * 1000 >= newest
            and item.path not in paths
            and _uri(item.path) not in paths
        ]
        rows = int(source.get("numInputRows") or 0)
        per_file = rows / len(paths) if paths else 0.0
        return len(waiting) * per_file

    def _taken(self, checkpoint: str, index: int, batch: int) -> tuple[set[str], float] | None:
        """The files batch ``batch`` took, and the newest one's modification time (ms)."""
        from flinkish_cli.storage import join

        storage = self.open_storage(checkpoint)
        log_dir = join(checkpoint, "sources", str(index))
        text = None
        for name in (str(batch), f"{batch}.compact"):
            try:
                text = storage.read_text(join(log_dir, name))
                break
            except Exception:
                continue
        if text is None:
            return None
        entries = [json.loads(line) for line in text.splitlines()[1:] if line.strip()]
        mine = [e for e in entries if e.get("batchId") == batch] or entries
        if not mine:
            return None
        return {str(e["path"]) for e in mine}, max(float(e["timestamp"]) for e in mine)


def _local(path: str | None) -> str | None:
    """A ``file:`` URI as the local path it names (other schemes as they are)."""
    if path is None or not path.startswith("file:"):
        return path
    return "/" + path.removeprefix("file:").lstrip("/")


def _uri(path: str) -> str:
    """A local path as Spark's source log writes it (``file:///...``)."""
    return path if "://" in path else f"file://{path}"
