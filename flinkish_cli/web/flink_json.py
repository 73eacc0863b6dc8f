"""flinkish's jobs in the JSON of Flink's REST API (v1): field names, states and shapes as
Flink's own server writes them, so that Flink's CLI, its Web UI's clients and scripts read
them unchanged.

How flinkish maps onto Flink's model:

- a job is a job (same JobID, name and states); each of its streaming queries is a *vertex*
  (a task of parallelism ``parallelism.default``), with a stable id derived from the JobID and
  the query's name;
- the job's *plan* is its graph: a node per operator of each query (sources, watermarks,
  stateful operators, joins, the sink), the exchanges between them its inputs' ship
  strategies (:func:`plan`); a node names its query's vertex (``job_vertex_id``);
- a committed micro-batch is a completed *checkpoint* (its id the batch id, its duration the
  batch's, its size the bytes of the query's state, with the state rows and the sources' lag
  beside); the history lists each query's recent batches, newest first;
- the job's failures (its exception history) are Flink's exception history entries;
- a job's Spark driver is its JobManager (as in Flink's application mode) and the executors
  that run its tasks are its TaskManagers, with Spark's task slots (:class:`JobCluster`).

Every function takes plain data and returns plain JSON-ready dicts: nothing here reads the
registry or knows HTTP. The job's documents are here (overview, details, plan, config);
:mod:`.flink_cluster` writes the cluster's (overview, dashboard configuration) and
:mod:`.flink_checkpoints` a job's checkpoints and exceptions.
"""

from __future__ import annotations

import hashlib
import html
import time
from typing import Any

from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.registry.graph import JobGraph, node_id
from flinkish_cli.registry.history import SavepointRecord
from flinkish_cli.registry.status import JobState, JobStatus

#: Flink's job states (JobStatus), in the order Flink's ``timestamps`` lists them.
FLINK_JOB_STATES = (
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
)
#: Flink's task states (ExecutionState).
EXECUTION_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
)


def ms(seconds: float | None) -> int:
    """Epoch seconds as Flink's epoch milliseconds (-1 for none)."""
    return int(seconds * 1000) if seconds else -1


def vertex_id(job_id: str, query: str) -> str:
    """A stable 32-hex id for a query of a job (Flink's JobVertexID form)."""
    return hashlib.md5(f"{job_id}/{query}".encode(), usedforsecurity=False).hexdigest()


def _duration(status: JobStatus, now: float) -> int:
    end = status.end_time if status.state.is_terminal and status.end_time else now
    return max(0, int((end - status.start_time) * 1000))


def _task_state(status: JobStatus, state: JobState, active: bool) -> str:
    """A query's task state, from its activity and the job's state."""
    if active:
        return "RUNNING"
    if state is JobState.CREATED:
        return "SCHEDULED"
    if state in (JobState.FAILED, JobState.FAILING):
        return "FAILED"
    if state in (JobState.CANCELED, JobState.CANCELLING):
        return "CANCELED"
    if state is JobState.RESTARTING:
        return "SCHEDULED"
    return "FINISHED"


def _task_counts(status: JobStatus, state: JobState) -> dict[str, int]:
    counts = dict.fromkeys(EXECUTION_STATES, 0)
    for query in status.queries.values():
        counts[_task_state(status, state, query.active)] += 1
    return counts


def job_overview(status: JobStatus, now: float | None = None) -> dict[str, Any]:
    """One job of ``GET /jobs/overview`` (Flink's JobDetails)."""
    now = time.time() if now is None else now
    state = status.effective_state(now)
    counts = _task_counts(status, state)
    tasks = {name.lower(): count for name, count in counts.items()}
    tasks["total"] = len(status.queries)
    return {
        "jid": status.job_id,
        "name": status.name,
        "start-time": ms(status.start_time),
        "end-time": ms(status.end_time) if state.is_terminal else -1,
        "duration": _duration(status, now),
        "state": state.value,
        "last-modification": ms(status.end_time or status.heartbeat),
        "tasks": tasks,
        "pending-operators": 0,
    }


def job_details(
    status: JobStatus,
    now: float | None = None,
    last_savepoint: SavepointRecord | None = None,
    graph: JobGraph | None = None,
) -> dict[str, Any]:
    """``GET /jobs/:jobid`` (Flink's JobDetailsInfo): one vertex per query, the job's
    :func:`plan`; with flinkish's own fields beside, ``last-savepoint`` (the history's newest
    completed) among them."""
    now = time.time() if now is None else now
    state = status.effective_state(now)
    parallelism = int(status.parallelism or 1)
    timestamps = dict.fromkeys(FLINK_JOB_STATES, 0)
    timestamps["CREATED"] = timestamps["INITIALIZING"] = ms(status.start_time)
    if state is not JobState.CREATED:
        timestamps["RUNNING"] = ms(status.start_time)
    if state.is_terminal:
        timestamps[state.value] = ms(status.end_time or status.heartbeat)
    vertices = []
    for name, query in status.queries.items():
        task_state = _task_state(status, state, query.active)
        tasks = dict.fromkeys(EXECUTION_STATES, 0)
        tasks[task_state] = 1
        rows = sum(p.input_rows for p in query.recent)
        vertices.append(
            {
                "id": vertex_id(status.job_id, name),
                "slotSharingGroupId": vertex_id(status.job_id, ""),
                "name": name,
                "maxParallelism": parallelism,
                "parallelism": parallelism,
                "status": task_state,
                "start-time": ms(status.start_time),
                "end-time": ms(status.end_time) if state.is_terminal else -1,
                "duration": _duration(status, now),
                "tasks": tasks,
                "metrics": {
                    "read-bytes": 0,
                    "read-bytes-complete": True,
                    "write-bytes": 0,
                    "write-bytes-complete": True,
                    "read-records": rows,
                    "read-records-complete": True,
                    "write-records": 0,
                    "write-records-complete": True,
                    "accumulated-backpressured-time": 0,
                    "accumulated-idle-time": 0,
                    "accumulated-busy-time": 0,
                },
            }
        )
    return {
        "jid": status.job_id,
        "name": status.name,
        "isStoppable": state is JobState.RUNNING,
        "state": state.value,
        "job-type": "BATCH" if status.mode == "BATCH" else "STREAMING",
        "start-time": ms(status.start_time),
        "end-time": ms(status.end_time) if state.is_terminal else -1,
        "duration": _duration(status, now),
        "maxParallelism": parallelism,
        "now": ms(now),
        "timestamps": timestamps,
        "vertices": vertices,
        "status-counts": _task_counts(status, state),
        "plan": plan(status, graph),
        "pending-operators": 0,
        # flinkish's own, which Flink's clients ignore
        "restored-from": status.restored_from,
        "restarts": status.restarts,
        "upgraded_from": status.upgraded_from,
        "upgraded_to": status.upgraded_to,
        "last-savepoint": last_savepoint.summary() if last_savepoint else None,
        "failure-cause": status.effective_failure_cause(now),
    }


def plan(status: JobStatus, graph: JobGraph | None = None) -> dict[str, Any]:
    """Flink's JSON plan (``GET /jobs/:jobid/plan``, and ``plan`` in ``GET /jobs/:jobid``):
    a node per operator of each query's graph (:mod:`flinkish_cli.registry.graph`), its
    inputs the edges into it with their ship strategy (``HASH`` for Spark's hash exchange,
    ``FORWARD`` without one...). Its ``parallelism`` is a stateful operator's state partitions,
    or the job's parallelism; ``operator`` is what a user calls it, ``operator_strategy``
    Spark's physical operator, ``description`` (HTML, as Flink's) both with its details.
    Beside Flink's fields, each node names its query's vertex (``job_vertex_id``, as Flink 2's
    stream graph does). A query whose graph is not recorded yet is one node, its vertex."""
    parallelism = int(status.parallelism or 1)
    graphs = graph.queries if graph else {}
    nodes: list[dict[str, Any]] = []
    for name in status.queries:
        vertex = vertex_id(status.job_id, name)
        query = graphs.get(name)
        if query is None or not query.nodes:
            nodes.append(_plan_node(vertex, parallelism, name, "", html.escape(name), [], vertex))
            continue
        ids = {node.key: node_id(status.job_id, name, node.key) for node in query.nodes}
        for node in query.nodes:
            inputs = [
                {
                    "num": number,
                    "id": ids[edge.source],
                    "ship_strategy": edge.ship_strategy,
                    "exchange": "pipelined_bounded",
                }
                for number, edge in enumerate(e for e in query.edges if e.target == node.key)
            ]
            described = f"{name}: {node.label}"
            if node.description:
                described += f"\n{node.description}"
            nodes.append(
                _plan_node(
                    ids[node.key],
                    node.partitions or parallelism,
                    node.label,
                    node.operator,
                    html.escape(described).replace("\n", "<br/>"),
                    inputs,
                    vertex,
                )
            )
    return {
        "jid": status.job_id,
        "name": status.name,
        "type": "BATCH" if status.mode == "BATCH" else "STREAMING",
        "nodes": nodes,
    }


def _plan_node(
    node: str,
    parallelism: int,
    operator: str,
    strategy: str,
    description: str,
    inputs: list[dict[str, Any]],
    vertex: str,
) -> dict[str, Any]:
    return {
        "id": node,
        "parallelism": parallelism,
        "operator": operator,
        "operator_strategy": strategy,
        "description": description,
        "inputs": inputs,
        "optimizer_properties": "{}",
        "job_vertex_id": vertex,
    }


def job_ids(statuses: list[JobStatus], now: float | None = None) -> dict[str, Any]:
    """``GET /jobs``."""
    return {"jobs": [{"id": s.job_id, "status": s.effective_state(now).value} for s in statuses]}


def job_config(status: JobStatus, conf: dict[str, str]) -> dict[str, Any]:
    """``GET /jobs/:jobid/config`` (Flink's JobConfigInfo); a secret key's value (there
    should be none: the kept configuration leaves them out) is shown redacted."""
    conf = {key: REDACTED if is_secret(key) else value for key, value in conf.items()}
    return {
        "jid": status.job_id,
        "name": status.name,
        "execution-config": {
            "execution-mode": "PIPELINED",
            "restart-strategy": conf.get("restart-strategy.type", "default"),
            "job-parallelism": int(status.parallelism or 1),
            "object-reuse-mode": False,
            "user-config": dict(sorted(conf.items())),
        },
    }
