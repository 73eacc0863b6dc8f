"""A job's figures over time, for charts: a bounded series of completed micro-batches per
query, longer than the status file's recent batches::

    <root>/<JobID>/_flinkish/series.json
    {"fields": ["time", "batch", ...], "queries": {"<query>": [[<one value per field>], ...]},
     "operators": {"<query>": {"names": [<Spark's operator name>, ...],
                               "points": [[time, [rows, bytes], [rows, bytes], ...], ...]}}}

Each point is one completed micro-batch (one Flink checkpoint): its time (epoch ms), batch
id, input and processing rate (rows/s), duration (ms), rows read, state rows and bytes, and
the sources' lag (null where the source does not report one). ``operators`` holds, for a
query with stateful operators, each operator's state rows and bytes per batch (in the order
Spark reports its operators, which is their ids' order), for the dashboard's State tab; a
series written before it was kept has none. At most :data:`SERIES_POINTS`
points per query, oldest dropped first: with Spark's default trigger of a batch as soon as the
last one ends, and a batch every few seconds, that is the last hour or so.

The driver's status keeper folds the status's recent batches into it (points newer than the
last one kept), so the series survives restarts and attempts of the same job; the status file
stays small for ``list``. Reading is forgiving: a damaged or foreign file is an empty series,
so one bad file never takes the dashboard down.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.errors import StorageError
from flinkish_cli.registry.names import is_query_name
from flinkish_cli.registry.status import JobStatus, Progress, parse_timestamp
from flinkish_cli.registry.store import JobRegistry

SERIES_FILE = "series.json"
#: Points kept per query.
SERIES_POINTS = 720
#: The columns of a point, in order.
FIELDS = (
    "time",
    "batch",
    "input_rows_per_second",
    "processed_rows_per_second",
    "duration_ms",
    "input_rows",
    "state_rows",
    "state_bytes",
    "lag",
)


def point(progress: Progress) -> list[Any]:
    """One micro-batch as a point (its columns in :data:`FIELDS`' order)."""
    return [
        parse_timestamp(progress.timestamp),
        progress.batch_id,
        progress.input_rows_per_second,
        progress.processed_rows_per_second,
        progress.duration_ms,
        progress.input_rows,
        progress.state_rows,
        progress.state_bytes,
        progress.lag,
    ]


def _valid(entry: Any) -> bool:
    if not isinstance(entry, list) or len(entry) != len(FIELDS):
        return False
    numbers = entry[:-1]
    lag = entry[-1]
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for v in numbers
    ) and (lag is None or (isinstance(lag, (int, float)) and math.isfinite(lag)))


def _valid_operators(entry: Any) -> bool:
    """``{"names": [...], "points": [[time, [rows, bytes], ...], ...]}``."""
    if not isinstance(entry, dict) or not isinstance(entry.get("names"), list):
        return False
    points = entry.get("points")
    return isinstance(points, list) and all(
        isinstance(p, list)
        and len(p) == len(entry["names"]) + 1
        and isinstance(p[0], int)
        and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(n, int) for n in v)
            for v in p[1:]
        )
        for p in points
    )


@dataclass
class Series:
    """Per query, its points, oldest first (and its stateful operators' sizes)."""

    queries: dict[str, list[list[Any]]] = field(default_factory=dict)
    #: per query, ``{"names": [...], "points": [[time, [rows, bytes], ...], ...]}``
    operators: dict[str, dict[str, Any]] = field(default_factory=dict)

    def merge(self, status: JobStatus) -> bool:
        """Add the status's recent batches newer than the last point of their query; True
        when a point was added."""
        added = False
        for name, query in status.queries.items():
            points = self.queries.setdefault(name, [])
            last = points[-1][0] if points else -1
            for progress in query.recent:
                entry = point(progress)
                if entry[0] > last:
                    points.append(entry)
                    last = entry[0]
                    added = True
                    self._add_operators(name, entry[0], progress)
            del points[:-SERIES_POINTS]
        return added

    def _add_operators(self, query: str, time: int, progress: Progress) -> None:
        if not progress.operators:
            return
        names = [op[0] for op in progress.operators]
        kept = self.operators.get(query)
        if kept is None or kept["names"] != names:  # a new query, or a changed program
            kept = self.operators[query] = {"names": names, "points": []}
        kept["points"].append([time, *[[op[1], op[2]] for op in progress.operators]])
        del kept["points"][:-SERIES_POINTS]

    def with_recent(self, status: JobStatus) -> Series:
        """A copy with the status's newest batches folded in (the series file lags them)."""
        copy = Series(
            {name: list(points) for name, points in self.queries.items()},
            {
                name: {"names": list(kept["names"]), "points": list(kept["points"])}
                for name, kept in self.operators.items()
            },
        )
        copy.merge(status)
        return copy

    def to_json(self) -> str:
        document = {"fields": list(FIELDS), "queries": self.queries, "operators": self.operators}
        return json.dumps(document, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Series:
        """The series in ``text``; an empty one when it is not a series (damaged, foreign)."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(data, dict) or data.get("fields") != list(FIELDS):
            return cls()
        queries = data.get("queries")
        if not isinstance(queries, dict):
            return cls()
        operators = data.get("operators")
        return cls(
            {
                name: [p for p in points if _valid(p)][-SERIES_POINTS:]
                for name, points in queries.items()
                if is_query_name(name) and isinstance(points, list)
            },
            {
                name: entry
                for name, entry in (operators if isinstance(operators, dict) else {}).items()
                if is_query_name(name) and _valid_operators(entry)
            },
        )


def _path(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), SERIES_FILE)


def read(registry: JobRegistry, job_id: str) -> Series:
    """The job's series; empty when it has none or the file cannot be read."""
    try:
        return Series.from_json(registry.storage.read_text(_path(registry, job_id)))
    except (OSError, ValueError, StorageError):  # missing, not text, storage down: no chart
        return Series()


def write(registry: JobRegistry, job_id: str, series: Series) -> None:
    """Replace the job's series file."""
    registry.storage.write_text(_path(registry, job_id), series.to_json())
