"""``flinkish savepoint info``: what a savepoint holds, with state row counts.

Row counts come from Spark's state data source (``format("statestore")``), which reads a
query's checkpoint directly; it needs a local Spark session, started only for this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flinkish_cli.savepoints.manifest import Manifest


@dataclass
class OperatorRows:
    """State rows of one stateful operator (per store for joins)."""

    query: str
    operator_id: int
    partitions: int
    rows: dict[str, int] = field(default_factory=dict)


def count_state_rows(
    path: str, manifest: Manifest, spark_conf: dict[str, str]
) -> list[OperatorRows]:
    """Count the state rows of every stateful operator in the savepoint at ``path``."""
    from flinkish_cli.errors import SavepointError
    from flinkish_cli.spark.failures import short_cause
    from flinkish_cli.spark.local import local_session
    from flinkish_cli.storage import join

    results = []
    with local_session("local[1]", spark_conf) as spark:
        for query in manifest.queries:
            for operator in query.operators:
                counts: dict[str, int] = {}
                for store in operator.stores or ["default"]:
                    reader = (
                        spark.read.format("statestore")
                        .option("batchId", query.last_committed_batch)
                        .option("operatorId", operator.operator_id)
                    )
                    if store != "default":
                        reader = reader.option("storeName", store)
                    try:
                        counts[store] = reader.load(join(path, query.name)).count()
                    except Exception as error:
                        raise SavepointError(
                            f"Spark could not read the state of query '{query.name}' "
                            f"(operator {operator.operator_id}): {short_cause(error)}"
                        ) from error
                results.append(
                    OperatorRows(query.name, operator.operator_id, operator.partitions, counts)
                )
    return results


def describe(manifest: Manifest) -> dict[str, Any]:
    """The manifest as a JSON-friendly summary (no per-file list)."""
    return {
        "kind": manifest.kind,
        "job-id": manifest.job_id,
        "job-name": manifest.job_name,
        "created": manifest.created,
        "flinkish-version": manifest.flinkish_version,
        "spark-version": manifest.spark_version,
        "files": len(manifest.files),
        "bytes": manifest.total_bytes,
        "queries": [
            {
                "name": q.name,
                "last-committed-batch": q.last_committed_batch,
                "source-offsets": q.source_offsets,
                "watermark-ms": q.watermark_ms,
                "shuffle-partitions": q.shuffle_partitions,
                "state-store-provider": q.state_store_provider,
                "stateful-operators": [
                    {"id": o.operator_id, "partitions": o.partitions, "stores": o.stores}
                    for o in q.operators
                ],
            }
            for q in manifest.queries
        ],
    }
