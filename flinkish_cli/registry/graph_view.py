"""The job graph with its figures: the one document ``flinkish info <JobID> --output json``
(under each query's ``graph``) and the dashboard (``GET /flinkish/jobs/:jobid/plan``) show.

It joins what the registry keeps apart: each query's graph, recorded when the query started
(:mod:`flinkish_cli.registry.graph`), and its latest batch as the status records it (its
figures per node, :mod:`flinkish_cli.registry.batch_figures`, and its recent batches, from
which :mod:`flinkish_cli.registry.task_time` computes Flink's busy, back-pressured and idle
time). Per query::

    {"query", "run-id", "batch" (the plan's), "complete", "plan" (Spark's explain),
     "figures": {"batch", "time", "duration-ms", "trigger-ms", "input-rows-per-second",
                 "processed-rows-per-second", "watermark", "busy-time-ms-per-second",
                 "backpressured-time-ms-per-second", "idle-time-ms-per-second", "busy-share"},
     "nodes": [{"id", "key", "kind", "label", "operator", "description", "chain",
                "operator-id", "partitions", "stores", "state-variables", "metrics": {...}}],
     "edges": [{"source", "target", "ship-strategy", "keys", "partitions", "side"}]}

Every node's ``metrics`` hold the query's watermark and task time (a query is one task: all
its operators work in the same micro-batch) and input and processing rate (a source's own,
the query's for the other nodes), and what is the node's own: a source's rows and offsets, a
stateful operator's state rows total, updated and removed, state memory and rows dropped by
the watermark, the sink's rows written. A figure Spark did not report is null. A query with no
graph recorded yet (its first batch has not completed) has ``"nodes": []``.

:func:`job_summary` is the other view of a status those two show: every query's checkpoint
footprint (:class:`~flinkish_cli.registry.footprint.Footprint`).
"""

from __future__ import annotations

from typing import Any

from flinkish_cli.registry.batch_figures import BatchFigures
from flinkish_cli.registry.graph import SINK, SOURCE, STATEFUL, JobGraph, Node, QueryGraph, node_id
from flinkish_cli.registry.status import JobStatus, QueryStatus, parse_timestamp
from flinkish_cli.registry.task_time import task_time


def job_view(status: JobStatus, graph: JobGraph) -> dict[str, Any]:
    """``GET /flinkish/jobs/:jobid/plan``: every query's graph with its figures."""
    return {
        "jid": status.job_id,
        "name": status.name,
        "state": status.effective_state().value,
        "queries": {
            name: query_view(status.job_id, name, query, graph.queries.get(name))
            for name, query in status.queries.items()
        },
    }


def job_summary(status: JobStatus) -> dict[str, Any]:
    """Every query's footprint as ``flinkish info <JobID> --output json`` and the dashboard's
    document show it: per query its checkpoint and
    :meth:`~flinkish_cli.registry.footprint.Footprint.summary` (None until the driver first
    measured it)."""
    return {
        "jid": status.job_id,
        "name": status.name,
        "state": status.effective_state().value,
        "queries": {
            name: {
                "checkpoint": query.checkpoint,
                "footprint": query.footprint.summary() if query.footprint else None,
            }
            for name, query in status.queries.items()
        },
    }


def query_view(
    job_id: str, name: str, query: QueryStatus, graph: QueryGraph | None
) -> dict[str, Any]:
    """One query's graph with its latest figures (see the module's docstring)."""
    common = _query_figures(query)
    per_node = {
        key: common[key]
        for key in (
            "input-rows-per-second",
            "processed-rows-per-second",
            "watermark",
            "busy-time-ms-per-second",
            "backpressured-time-ms-per-second",
            "idle-time-ms-per-second",
        )
    }
    figures = query.figures
    if graph is not None and graph.run_id and query.run_id and graph.run_id != query.run_id:
        figures = None  # the figures of another run than the graph's
    nodes = [] if graph is None else graph.nodes
    ids = {node.key: node_id(job_id, name, node.key) for node in nodes}
    return {
        "query": name,
        "run-id": graph.run_id if graph else None,
        "batch": graph.batch if graph else None,
        "complete": graph.complete if graph else False,
        "figures": common,
        "nodes": [
            {
                "id": ids[node.key],
                "key": node.key,
                "kind": node.kind,
                "label": node.label,
                "operator": node.operator,
                "description": node.description,
                "chain": list(node.chain),
                "operator-id": node.operator_id,
                "partitions": node.partitions,
                "stores": list(node.stores),
                "state-variables": list(node.state_variables),
                "metrics": {**per_node, **_node_metrics(node, figures)},
            }
            for node in nodes
        ],
        "edges": [
            {
                "source": ids[edge.source],
                "target": ids[edge.target],
                "ship-strategy": edge.ship_strategy,
                "keys": list(edge.keys),
                "partitions": edge.partitions,
                "side": edge.side,
            }
            for edge in ([] if graph is None else graph.edges)
        ],
        "plan": graph.plan if graph else None,
    }


def _query_figures(query: QueryStatus) -> dict[str, Any]:
    latest = query.latest()
    spent = task_time(query.recent, query.trigger_ms, query.idle)
    return {
        "batch": latest.batch_id if latest else None,
        "time": parse_timestamp(latest.timestamp) if latest else None,
        "duration-ms": latest.duration_ms if latest else None,
        "trigger-ms": query.trigger_ms,
        "input-rows-per-second": latest.input_rows_per_second if latest else None,
        "processed-rows-per-second": latest.processed_rows_per_second if latest else None,
        "watermark": latest.watermark if latest else None,
        "busy-time-ms-per-second": round(spent.busy, 1),
        "backpressured-time-ms-per-second": round(spent.backpressured, 1),
        "idle-time-ms-per-second": round(spent.idle, 1),
        "busy-share": round(spent.busy_share, 3),
    }


def _lag(source: Any) -> Any:
    return source.kafka_lag() if source is not None else None


def _node_metrics(node: Node, figures: BatchFigures | None) -> dict[str, Any]:
    """What the node's own figures are, from the latest batch (null where not reported)."""
    if node.kind == SOURCE:
        source = _at(figures.sources if figures else [], node.source)
        return {
            "input-rows": source.input_rows if source else None,
            "input-rows-per-second": source.input_rows_per_second if source else None,
            "processed-rows-per-second": source.processed_rows_per_second if source else None,
            "start-offset": source.start_offset if source else None,
            "end-offset": source.end_offset if source else None,
            "latest-offset": source.latest_offset if source else None,
            # Flink's Kafka source's: all its partitions' lag, and the most of one
            "pendingRecords": lag.pending if (lag := _lag(source)) else None,
            "records-lag-max": lag.most if lag else None,
        }
    if node.kind == STATEFUL:
        op = _at(figures.operators if figures else [], node.stateful)
        return {
            "state-rows": op.rows_total if op else None,
            "state-rows-updated": op.rows_updated if op else None,
            "state-rows-removed": op.rows_removed if op else None,
            "state-memory-bytes": op.memory_bytes if op else None,
            "rows-dropped-by-watermark": op.dropped_by_watermark if op else None,
            "state-store-instances": op.store_instances if op else None,
        }
    if node.kind == SINK:
        return {"output-rows": figures.sink_rows if figures else None}
    return {}


def _at(items: list[Any], index: int | None) -> Any:
    return items[index] if index is not None and 0 <= index < len(items) else None
