"""The status of a job as its driver records it, and the states it moves through.

States follow Flink's: CREATED → RUNNING → FINISHED | CANCELED | FAILED, with RESTARTING
while a restart strategy waits, and CANCELLING / FAILING while the driver winds down.
:meth:`JobStatus.effective_state` turns a RUNNING job whose heartbeat stopped into FAILED,
so a killed driver never stays RUNNING for longer than ``heartbeat.timeout``.

A status file is read back by other processes (and hosts), so :meth:`JobStatus.from_json`
trusts nothing in it: the JobID must be one, and every query name must be a safe query
identity (:mod:`flinkish_cli.registry.names`), the rule names from scripts follow, since a
query's name becomes a checkpoint directory (a restarted driver deletes and restores them).
Anything else is a :class:`ValueError` saying what is wrong.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flinkish_cli.registry.batch_figures import BatchFigures, kafka_lag
from flinkish_cli.registry.footprint import Footprint
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.registry.names import is_query_name


class JobState(str, enum.Enum):
    """Flink's job states."""

    CREATED = "CREATED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    CANCELLING = "CANCELLING"
    FAILING = "FAILING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        """A job in a terminal state will never run again (it may be resumed as a new job)."""
        return self in (JobState.FINISHED, JobState.CANCELED, JobState.FAILED)

    @property
    def is_scheduled(self) -> bool:
        """Flink's "scheduled": accepted but not running yet."""
        return self is JobState.CREATED


#: Progress samples kept per query in the status file (what ``run`` follows and shows).
RECENT_PROGRESS = 30
#: Time a submitted job's driver has to report for the first time (a JVM starting on a busy
#: machine, a cluster finding resources) before the job shows FAILED.
STARTUP_GRACE = 180.0


@dataclass
class Progress:
    """The figures of one completed micro-batch (one Flink checkpoint)."""

    batch_id: int
    timestamp: str
    input_rows: int = 0
    input_rows_per_second: float = 0.0
    processed_rows_per_second: float = 0.0
    duration_ms: int = 0
    state_rows: int = 0
    watermark: str | None = None
    #: bytes of the query's state in memory after the batch (Spark's memoryUsedBytes)
    state_bytes: int = 0
    #: records the query is behind its sources' latest offsets over all their partitions,
    #: where they report it (Kafka: Flink's ``pendingRecords``)
    lag: float | None = None
    #: each stateful operator's ``[Spark's name, state rows, state bytes in memory]``, in
    #: the order Spark reports them (its operator ids' order)
    operators: list[list[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.operators = _operators(self.operators)

    def line(self, query: str) -> str:
        """The batch in one line of the job's log."""
        text = (
            f"Query '{query}' batch {self.batch_id}: {self.input_rows} rows in "
            f"{self.duration_ms} ms ({self.input_rows_per_second:.1f} in/s, "
            f"{self.processed_rows_per_second:.1f} processed/s)"
        )
        if self.state_rows:
            text += f", state {self.state_rows} rows"
        if self.watermark:
            text += f", watermark {self.watermark}"
        return text + "."

    @classmethod
    def from_spark(cls, progress: dict[str, Any]) -> Progress:
        """Build from a Spark ``StreamingQueryProgress`` JSON document."""
        operators = progress.get("stateOperators") or []
        watermark = (progress.get("eventTime") or {}).get("watermark")
        behind = [
            lag
            for source in progress.get("sources") or []
            if isinstance(source, dict) and (lag := _records_behind(source)) is not None
        ]
        return cls(
            batch_id=int(progress.get("batchId", -1)),
            timestamp=str(progress.get("timestamp", "")),
            input_rows=int(progress.get("numInputRows") or 0),
            input_rows_per_second=_finite(progress.get("inputRowsPerSecond")),
            processed_rows_per_second=_finite(progress.get("processedRowsPerSecond")),
            duration_ms=int((progress.get("durationMs") or {}).get("triggerExecution") or 0),
            state_rows=sum(int(op.get("numRowsTotal") or 0) for op in operators),
            watermark=None if watermark in (None, "1970-01-01T00:00:00.000Z") else watermark,
            state_bytes=sum(int(op.get("memoryUsedBytes") or 0) for op in operators),
            lag=sum(behind) if behind else None,
            operators=[
                [
                    str(op.get("operatorName") or ""),
                    int(op.get("numRowsTotal") or 0),
                    int(op.get("memoryUsedBytes") or 0),
                ]
                for op in operators
                if isinstance(op, dict)
            ],
        )


def _records_behind(source: dict[str, Any]) -> float | None:
    """The records a source is behind its latest offsets after the batch, over all its
    partitions (Flink's ``pendingRecords``): for Kafka's, from its end and latest offsets,
    else from Spark's ``avgOffsetsBehindLatest`` times its partitions; for a source that
    reports only ``maxOffsetsBehindLatest``, that; None when it reports none."""
    lag = kafka_lag(source.get("endOffset"), source.get("latestOffset"))
    if lag is not None:
        return float(lag.pending)
    metrics = source.get("metrics") or {}
    if "maxOffsetsBehindLatest" not in metrics:
        return None
    return _finite(metrics.get("maxOffsetsBehindLatest"))


def _operators(value: Any) -> list[list[Any]]:
    """``[name, rows, bytes]`` entries of a progress as read (a damaged entry is dropped)."""
    if not isinstance(value, list):
        return []
    return [
        [str(entry[0]), int(entry[1]), int(entry[2])]
        for entry in value
        if isinstance(entry, list)
        and len(entry) == 3
        and all(isinstance(n, int) and not isinstance(n, bool) for n in entry[1:])
    ]


def parse_timestamp(text: str) -> int:
    """Spark's progress timestamp (ISO 8601, UTC) as epoch ms; 0 when unreadable."""
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and number not in (float("inf"), float("-inf")) else 0.0


@dataclass
class QueryStatus:
    """One streaming query of a job: its stable name and where it has got to."""

    name: str
    checkpoint: str
    query_id: str | None = None
    run_id: str | None = None
    active: bool = False
    last_committed_batch: int | None = None
    recent: list[Progress] = field(default_factory=list)
    exception: str | None = None
    #: Spark reported the query idle (its last trigger found no new input) since its last
    #: batch with input
    idle: bool = False
    #: The first batch this job committed for the query. Batch ids continue the query's
    #: checkpoint (a job resumed from a savepoint at batch 100 commits 101 first), so the
    #: job's own batches are counted from here (:meth:`committed_batches`).
    first_batch: int | None = None
    #: What the query's checkpoint takes on storage, by part, as the driver last measured it
    #: (:mod:`flinkish_cli.registry.footprint`); None until then.
    footprint: Footprint | None = None
    #: The query's processing-time trigger interval (ms), None when it has none (a batch as
    #: soon as the last one ends, availableNow): what its task time is measured against
    #: (:mod:`flinkish_cli.registry.task_time`).
    trigger_ms: int | None = None
    #: The latest batch's figures per node of the query's graph (its sources, stateful
    #: operators and sink: :mod:`flinkish_cli.registry.batch_figures`); None until then.
    figures: BatchFigures | None = None

    def record(self, progress: Progress) -> None:
        """Add a completed batch, keeping the last :data:`RECENT_PROGRESS`."""
        if progress.input_rows:
            self.idle = False
        if self.first_batch is None:
            self.first_batch = progress.batch_id
        self.last_committed_batch = progress.batch_id
        self.recent.append(progress)
        del self.recent[:-RECENT_PROGRESS]

    def committed_batches(self) -> int:
        """How many micro-batches this job committed for the query: from its first batch
        (:attr:`first_batch`) to its last, both included, so batch ``n`` of a fresh query
        is its ``n + 1``-th. The batches of the job it was resumed from (a savepoint's, a
        checkpoint location the script reuses) are not this job's and are not counted.
        A status written before :attr:`first_batch` was kept counts from batch 0."""
        if self.last_committed_batch is None:
            return 0
        first = self.first_batch if self.first_batch is not None else 0
        return max(0, self.last_committed_batch - first + 1)

    def latest(self) -> Progress | None:
        """The query's newest completed batch (the last one recorded), if it has one."""
        return self.recent[-1] if self.recent else None


@dataclass
class JobStatus:
    """Everything the registry knows of one job; serialised as ``status.json``."""

    job_id: str
    name: str
    state: JobState = JobState.CREATED
    start_time: float = field(default_factory=time.time)
    end_time: float | None = None
    heartbeat: float = field(default_factory=time.time)
    heartbeat_timeout: float = 50.0
    queries: dict[str, QueryStatus] = field(default_factory=dict)
    failure_cause: str | None = None
    host: str | None = None
    pid: int | None = None
    supervisor_pid: int | None = None
    #: a session cluster job's Spark Connect session (its queries live there, not in the
    #: client: the supervisor stops them when the client died)
    connect_session: str | None = None
    #: a yarn-application job's YARN application (its driver runs in the ApplicationMaster)
    yarn_application: str | None = None
    #: that application's attempt whose driver writes this status (YARN's 1, 2, ...)
    yarn_attempt: int | None = None
    log_path: str | None = None
    master: str | None = None
    mode: str = "STREAMING"
    restored_from: str | None = None
    parallelism: int | None = None
    restarts: int = 0
    #: When each failure the restart strategy judged happened (epoch seconds), in order: a
    #: restarted driver or its supervisor replays them, so the strategy spans processes.
    failure_times: list[float] = field(default_factory=list)
    #: The job's last failures, oldest first (see :meth:`remember_failure`).
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    #: The program reached its first wait (``awaitTermination`` and the like, or its end):
    #: the queries it has started are all of the job's (an upgrade's readiness needs it).
    queries_started: bool = False
    #: ``flinkish upgrade``: the job this one replaced, and the job that replaced it; a
    #: rollback is the job that replaced a failed upgrade (``rolled_back``).
    upgraded_from: str | None = None
    upgraded_to: str | None = None
    rolled_back: bool = False
    version: int = 1

    def remember_failure(
        self, cause: str, now: float, limit: int, query: str | None = None
    ) -> None:
        """Keep a failure in the job's exception history (Flink's: time in ms, the attempt
        that failed, the query that failed when one did, the cause), the last ``limit``."""
        entry = {
            "timestamp": int(now * 1000),
            "attempt": self.restarts,
            "query": query,
            "cause": cause,
        }
        self.exceptions = [*self.exceptions, entry][-max(1, limit) :]

    def latest_batches(self) -> dict[str, Progress]:
        """Each query's newest completed batch (:meth:`QueryStatus.latest`), for the queries
        that have completed one: what a view of the job's current figures shows."""
        latest = {name: query.latest() for name, query in self.queries.items()}
        return {name: progress for name, progress in latest.items() if progress is not None}

    def completed_checkpoints(self) -> int:
        """Flink's count of completed checkpoints: the micro-batches this job has committed,
        every query's (:meth:`QueryStatus.committed_batches`). As in Flink, the count is the
        job's own: a job resumed from a savepoint starts from 0 (its batch ids go on from
        the savepoint's), and a restarted query's batches add to those before the restart.
        """
        return sum(query.committed_batches() for query in self.queries.values())

    @property
    def driver_reported(self) -> bool:
        """The job's driver has written this status (not only the CLI that submitted it)."""
        return self.pid is not None

    def allowed_silence(self) -> float:
        """How old the heartbeat may be before the job counts as lost."""
        if self.driver_reported:
            return self.heartbeat_timeout
        return self.heartbeat_timeout + STARTUP_GRACE

    def effective_state(self, now: float | None = None) -> JobState:
        """The state to show: a live state with a stale heartbeat is shown FAILED."""
        if self.state.is_terminal:
            return self.state
        now = time.time() if now is None else now
        if now - self.heartbeat > self.allowed_silence():
            return JobState.FAILED
        return self.state

    def effective_failure_cause(self, now: float | None = None) -> str | None:
        """The failure cause, including a lost heartbeat."""
        if self.effective_state(now) is JobState.FAILED and not self.state.is_terminal:
            age = (time.time() if now is None else now) - self.heartbeat
            if not self.driver_reported:
                return (
                    f"The job's driver never reported, {age:.0f} s after submission: it could "
                    "not start (see its log)."
                )
            return (
                f"The job's driver stopped sending heartbeats {age:.0f} s ago "
                f"(heartbeat.timeout is {self.heartbeat_timeout:.0f} s): it was killed or lost."
            )
        return self.failure_cause

    # -- serialisation -------------------------------------------------------------------
    def to_json(self) -> str:
        """The status as a JSON document (it never holds secrets)."""
        data = dataclasses.asdict(self)
        data["state"] = self.state.value
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobStatus:
        """Parse ``status.json``; unknown fields (from newer versions) are ignored.

        Raises :class:`ValueError` (naming the problem) for anything that is not a job status:
        not a JSON object, no valid JobID, a query name that is not a safe query identity.
        """
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: Any) -> JobStatus:
        """:meth:`from_json` of a document already parsed (the same checks)."""
        if not isinstance(data, dict):
            raise ValueError(f"it holds a JSON {type(data).__name__}, not a job status object")
        if not is_job_id(str(data.get("job_id", ""))):
            raise ValueError(f"its job_id {_shown(data.get('job_id'))} is not a JobID")
        raw_queries = data.get("queries") or {}
        if not isinstance(raw_queries, dict):
            raise ValueError("its 'queries' is not a JSON object")
        queries = {}
        for name, q in raw_queries.items():
            if not is_query_name(name):
                raise ValueError(
                    f"it names a query {_shown(name)}, which cannot be a query identity "
                    "(letters, digits, '_', '-' and '.', starting with a letter or digit)"
                )
            if not isinstance(q, dict) or q.get("name", name) != name:
                raise ValueError(f"its entry for query '{name}' is damaged")
            recent = q.get("recent") or []
            if not isinstance(recent, list) or not all(isinstance(p, dict) for p in recent):
                raise ValueError(f"the progress of query '{name}' is damaged")
            queries[name] = QueryStatus(
                **{
                    **_known(QueryStatus, q),
                    "name": name,
                    "recent": [Progress(**_known(Progress, p)) for p in recent],
                    "footprint": Footprint.from_dict(q.get("footprint")),
                    "figures": BatchFigures.from_dict(q.get("figures")),
                }
            )
        fields = _known(cls, data)
        fields["job_id"] = str(data["job_id"]).lower()
        fields["state"] = JobState(data.get("state", "CREATED"))
        fields["queries"] = queries
        for link in ("upgraded_from", "upgraded_to"):  # a link is a JobID, or none
            value = fields.get(link)
            fields[link] = str(value).lower() if value and is_job_id(str(value)) else None
        return cls(**fields)

    def summary(self, now: float | None = None) -> dict[str, Any]:
        """A JSON-friendly summary for ``list --output json``."""
        return {
            "jid": self.job_id,
            "name": self.name,
            "state": self.effective_state(now).value,
            "start-time": int(self.start_time * 1000),
            "end-time": int(self.end_time * 1000) if self.end_time else -1,
            "failure-cause": self.effective_failure_cause(now),
            "queries": {
                name: {"last-committed-batch": q.last_committed_batch, "active": q.active}
                for name, q in self.queries.items()
            },
            "restored-from": self.restored_from,
            "restarts": self.restarts,
            "exceptions": list(self.exceptions),
            "upgraded_from": self.upgraded_from,
            "upgraded_to": self.upgraded_to,
            "rolled_back": self.rolled_back,
            "yarn-application-id": self.yarn_application,
        }


def without_progress(data: dict[str, Any]) -> dict[str, Any]:
    """A status document (``status.json`` parsed) without each query's recent progress: what
    a job list needs of it (its lines and ``list --output json`` show none of the progress,
    which is most of the document). :meth:`JobStatus.from_dict` reads it back."""
    queries = data.get("queries")
    if not isinstance(queries, dict):
        return data
    kept = {
        name: {k: v for k, v in q.items() if k != "recent"} if isinstance(q, dict) else q
        for name, q in queries.items()
    }
    return {**data, "queries": kept}


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}
