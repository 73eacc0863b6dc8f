"""The savepoint actions as the CLI calls them: trigger, stop, checkpoint, dispose, info.

Each takes the effective configuration and plain arguments, and returns plain results.
"""

from __future__ import annotations

from typing import Any

from flinkish_cli.errors import SavepointError, UsageError
from flinkish_cli.registry.actions import ask, require_running, wait_for_end
from flinkish_cli.registry.control import ControlRequest
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.store import registry_for
from flinkish_cli.storage import open_for_config

#: How long the CLI waits for a savepoint (Flink's client waits without limit by default).
SAVEPOINT_TIMEOUT = 3600.0


def savepoint_target(config: Any, given: str | None) -> str:
    """The directory a savepoint goes to: the one given, else the configured default."""
    target = given or config.get("execution.checkpointing.savepoint-dir")
    if not target:
        raise UsageError(
            "No savepoint directory given and execution.checkpointing.savepoint-dir is not set.",
            "Pass a target directory, or set execution.checkpointing.savepoint-dir.",
        )
    target = str(target).rstrip("/")
    if "://" in target and not target.startswith(("file://", "s3://", "s3a://", "hdfs://")):
        raise UsageError(
            f"{target} is not on a supported storage.",
            "Use a local path, file://, s3://, s3a:// or hdfs:// URI.",
        )
    return target


def trigger(config: Any, job_id: str, target: str | None) -> str:
    """Take a savepoint of a running job; its path."""
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "take a savepoint of")
    directory = savepoint_target(config, target)
    response = ask(
        registry,
        status.job_id,
        ControlRequest("savepoint", {"target": directory}),
        SAVEPOINT_TIMEOUT,
    )
    if not response.ok:
        raise SavepointError(f"Savepoint of job {status.job_id} failed: {response.error}")
    return str(response.result["path"])


def stop(config: Any, job_id: str, target: str | None, drain: bool) -> str:
    """Stop a job gracefully with a savepoint; the savepoint's path once the job FINISHED."""
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "stop")
    directory = savepoint_target(config, target)
    request = ControlRequest("stop", {"savepoint": True, "target": directory, "drain": drain})
    response = ask(registry, status.job_id, request, SAVEPOINT_TIMEOUT)
    if not response.ok:
        raise SavepointError(f"Stopping job {status.job_id} failed: {response.error}")
    wait_for_end(registry, status.job_id, 120.0)
    return str(response.result["path"])


def checkpoint(config: Any, job_id: str) -> dict[str, Any]:
    """Wait for the job's next completed checkpoint (a committed batch of every query)."""
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "checkpoint")
    response = ask(registry, status.job_id, ControlRequest("checkpoint"), 660.0)
    if not response.ok:
        raise SavepointError(f"Checkpoint of job {status.job_id} failed: {response.error}")
    return dict(response.result)


def dispose(config: Any, path: str) -> None:
    """Delete a savepoint (and refuse anything else)."""
    from flinkish_cli.savepoints.dispose import dispose as dispose_savepoint

    path = path.rstrip("/")
    dispose_savepoint(open_for_config(path, config), path)


def info(config: Any, path: str, rows: bool = True) -> dict[str, Any]:
    """What a savepoint (or retained checkpoint) holds, with state row counts."""
    from flinkish_cli.savepoints.inspect import count_state_rows, describe
    from flinkish_cli.savepoints.restore import open_source

    path = path.rstrip("/")
    source = open_source(open_for_config(path, config), path)
    summary = describe(source.manifest)
    summary["path"] = path
    if rows and any(q.stateful for q in source.manifest.queries):
        from flinkish_cli.config import to_spark

        conf = {k: v for k, v in to_spark(config).conf.items() if k.startswith("spark.hadoop.")}
        counts = count_state_rows(path, source.manifest, conf)
        by_query: dict[str, list[dict[str, Any]]] = {}
        for item in counts:
            by_query.setdefault(item.query, []).append({"id": item.operator_id, "rows": item.rows})
        for query in summary["queries"]:
            rows_of = {o["id"]: o["rows"] for o in by_query.get(query["name"], [])}
            for operator in query["stateful-operators"]:
                operator["rows"] = rows_of.get(operator["id"], {})
    return summary
