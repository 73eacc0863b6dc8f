"""The savepoint actions as the CLI calls them: trigger, stop, cancel with a savepoint,
checkpoint, dispose, info.

Each takes the effective configuration and plain arguments, and returns plain results. A
local savepoint directory given relative (``./sp``) is resolved against the caller's working
directory before the request leaves this process: the job's driver runs elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from flinkish_cli.errors import JobError, SavepointError, UsageError
from flinkish_cli.registry.actions import (
    ask,
    refused_end,
    require_running,
    send_detached,
    wait_for_end,
)
from flinkish_cli.registry.control import ControlRequest
from flinkish_cli.registry.jobid import parse_job_id
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import registry_for
from flinkish_cli.storage import open_for_config

#: How long the CLI waits for a savepoint (Flink's client waits ``client.timeout``; a
#: savepoint of large state takes longer, so flinkish waits up to an hour).
SAVEPOINT_TIMEOUT = 3600.0
#: How long the CLI waits for the next checkpoint (the driver gives up after 600 s).
CHECKPOINT_TIMEOUT = 660.0
#: How long a stopped job has to reach its final state once its savepoint is complete.
END_TIMEOUT = 120.0

SCHEMES = ("file://", "s3://", "s3a://", "hdfs://")


def resolve_local(path: str) -> str:
    """``path`` as the caller means it: a local path relative to the working directory (or
    starting with ``~``) made absolute; URIs unchanged."""
    if "://" in path:
        return path
    if path.startswith("file:") and not path.startswith("file:/"):
        path = path[len("file:") :]  # file:relative/dir
    return os.path.abspath(os.path.expanduser(path))


def savepoint_target(config: Any, given: str | None) -> str:
    """The directory a savepoint goes to: the one given, else the configured default, with a
    relative local path resolved against the caller's working directory."""
    target = given or config.get("execution.checkpointing.savepoint-dir")
    if not target:
        raise UsageError(
            "No savepoint directory given and execution.checkpointing.savepoint-dir is not set.",
            "Pass a target directory, or set execution.checkpointing.savepoint-dir.",
        )
    target = str(target)
    if "://" in target and not target.startswith(SCHEMES):
        raise UsageError(
            f"{target} is not on a supported storage.",
            "Use a local path, file://, s3://, s3a:// or hdfs:// URI.",
        )
    resolved = resolve_local(target)
    return resolved.rstrip("/") or resolved


def trigger(config: Any, job_id: str, target: str | None, format_type: str = "CANONICAL") -> str:
    """Take a savepoint of a running job; its path."""
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "take a savepoint of")
    directory = savepoint_target(config, target)
    request = ControlRequest("savepoint", {"target": directory, "format_type": format_type})
    response = ask(registry, status.job_id, request, SAVEPOINT_TIMEOUT)
    if not response.ok:
        raise SavepointError(f"Savepoint of job {status.job_id} failed: {response.error}")
    return _path_of(response.result, status.job_id)


def trigger_detached(
    config: Any, job_id: str, target: str | None, format_type: str = "CANONICAL"
) -> str:
    """Ask a running job for a savepoint without waiting; the trigger id."""
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "take a savepoint of")
    directory = savepoint_target(config, target)
    request = ControlRequest(
        "savepoint", {"target": directory, "format_type": format_type, "detached": True}
    )
    return send_detached(registry, status.job_id, request)


@dataclass
class StopOutcome:
    """What became of a job stopped (or cancelled) with a savepoint."""

    job_id: str
    path: str
    state: JobState
    cause: str | None

    def ended_as(self, expected: JobState) -> JobError | None:
        """An error when the job did not end ``expected`` once its savepoint was taken."""
        if self.state is expected:
            return None
        if not self.state.is_terminal:
            return JobError(
                f"Job {self.job_id} is still {self.state.value} {END_TIMEOUT:.0f} s after its "
                f"savepoint {self.path} completed.",
                "See 'flinkish list -a' and the job's log ('flinkish logs').",
            )
        detail = f": {self.cause.splitlines()[0]}" if self.cause else ""
        return JobError(
            f"Job {self.job_id} ended {self.state.value} after its savepoint {self.path}{detail}."
        )


def _stop_request(
    config: Any, job_id: str, target: str | None, drain: bool, end_state: JobState, fmt: str
) -> tuple[Any, str, ControlRequest]:
    action = "cancel" if end_state is JobState.CANCELED else "stop"
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), action)
    args: dict[str, Any] = {
        "savepoint": True,
        "target": savepoint_target(config, target),
        "drain": drain,
        "format_type": fmt,
    }
    if end_state is JobState.CANCELED:
        args["end_state"] = JobState.CANCELED.value
    return registry, status.job_id, ControlRequest("stop", args)


def stop(
    config: Any,
    job_id: str,
    target: str | None,
    drain: bool,
    format_type: str = "CANONICAL",
    end_state: JobState = JobState.FINISHED,
) -> StopOutcome:
    """Stop a job gracefully with a savepoint (``end_state`` CANCELED: Flink's deprecated
    cancel with a savepoint); the savepoint's path and the state the job ended in."""
    action = "cancel" if end_state is JobState.CANCELED else "stop"
    registry, job_id, request = _stop_request(config, job_id, target, drain, end_state, format_type)
    response = ask(registry, job_id, request, SAVEPOINT_TIMEOUT)
    if not response.ok:
        if response.result.get("unreadable"):
            raise SavepointError(f"Stopping job {job_id} failed: {response.error}")
        raise refused_end(registry, job_id, action, response)
    path = _path_of(response.result, job_id)
    final = wait_for_end(registry, job_id, END_TIMEOUT)
    return StopOutcome(job_id, path, final.effective_state(), final.effective_failure_cause())


def stop_detached(
    config: Any, job_id: str, target: str | None, drain: bool, format_type: str = "CANONICAL"
) -> str:
    """Ask a running job to stop with a savepoint without waiting; the trigger id."""
    registry, job_id, request = _stop_request(
        config, job_id, target, drain, JobState.FINISHED, format_type
    )
    request.args["detached"] = True
    return send_detached(registry, job_id, request)


def checkpoint(config: Any, job_id: str) -> dict[str, Any]:
    """Wait for the job's next completed checkpoint (a committed batch of every query).

    ``id`` is the checkpoint's number as Flink counts them: the job's highest committed
    micro-batch id plus one (batch 0 is the first checkpoint).
    """
    registry = registry_for(config)
    status = require_running(registry, parse_job_id(job_id), "checkpoint")
    response = ask(registry, status.job_id, ControlRequest("checkpoint"), CHECKPOINT_TIMEOUT)
    if not response.ok:
        raise SavepointError(f"Checkpoint of job {status.job_id} failed: {response.error}")
    result = dict(response.result)
    batches = result.get("batches")
    if not isinstance(batches, dict) or not all(isinstance(b, int) for b in batches.values()):
        raise SavepointError(
            f"Checkpoint of job {status.job_id}: its answer names no committed batches."
        )
    result["id"] = max(batches.values()) + 1 if batches else 0
    return result


def _path_of(result: dict[str, Any], job_id: str) -> str:
    path = result.get("path")
    if not isinstance(path, str) or not path:
        raise SavepointError(f"Job {job_id} answered without a savepoint path.")
    return path


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
