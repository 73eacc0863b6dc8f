"""``flinkish savepoint info``: what a savepoint holds, from its manifest.

The state row counts ``savepoint info`` adds are read by :mod:`flinkish_cli.state` (Spark's
state data source, in a local Spark session started only for them), the one reader of state.
"""

from __future__ import annotations

from typing import Any

from flinkish_cli.savepoints.manifest import Manifest


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
