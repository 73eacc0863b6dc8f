"""Results of operations that belong to no job: a savepoint disposed of through the REST API
(``POST /savepoint-disposal``), whose result its caller polls by trigger id later, possibly
from another ``flinkish web`` process::

    <root>/_flinkish/operations/<trigger id>.json     {"ok": bool, "error": str | null,
                                                       "failure": {...} | null}

``failure`` is the error whole (its class, message and hint, as the job client's transport
writes errors: :mod:`flinkish_cli.rest.wire`), kept so that flinkish's CLI disposing
through ``flinkish web`` says exactly what it says disposing itself.

Kept in the registry, so that the web endpoint itself holds no state; for
:data:`RESULT_TTL` after the operation (Flink's ``rest.async.store-duration`` is shorter:
5 minutes). Each new result deletes those past it, so the directory holds a day's at most.
"""

from __future__ import annotations

import json
import time
from typing import Any

from flinkish_cli.registry.control import made
from flinkish_cli.registry.store import META_DIR, JobRegistry

OPERATIONS_DIR = "operations"
#: How long an operation's result can be asked for (seconds after its trigger id was made).
RESULT_TTL = 24 * 3600.0
#: Results kept at most (the oldest go first): a client asking for disposals without end
#: cannot fill the registry.
MAX_RESULTS = 1000
SUFFIX = ".json"


def _dir(registry: JobRegistry) -> str:
    from flinkish_cli.storage import join

    return join(registry.root, META_DIR, OPERATIONS_DIR)


def _path(registry: JobRegistry, trigger_id: str) -> str:
    from flinkish_cli.storage import join

    return join(_dir(registry), f"{trigger_id}{SUFFIX}")


def record(
    registry: JobRegistry,
    trigger_id: str,
    ok: bool,
    error: str | None,
    failure: dict[str, Any] | None = None,
) -> None:
    """Keep the outcome of the operation ``trigger_id`` (``failure``: the error as a JSON
    document), and forget those past :data:`RESULT_TTL`."""
    document = {"ok": ok, "error": error, "failure": failure}
    registry.storage.write_text(_path(registry, trigger_id), json.dumps(document))
    expire(registry)


def expire(registry: JobRegistry, now: float | None = None) -> int:
    """Delete the results written more than :data:`RESULT_TTL` ago, and the oldest beyond
    :data:`MAX_RESULTS`; how many."""
    now = time.time() if now is None else now
    expired = 0
    kept = []
    for info in registry.storage.list(_dir(registry)):
        if info.is_dir or not info.name.endswith(SUFFIX):
            continue
        if now - made(info) > RESULT_TTL:
            registry.storage.delete(info.path)
            expired += 1
        else:
            kept.append(info)
    for info in sorted(kept, key=made)[: max(len(kept) - MAX_RESULTS, 0)]:
        registry.storage.delete(info.path)
        expired += 1
    return expired


def result(
    registry: JobRegistry, trigger_id: str
) -> tuple[bool, str | None, dict[str, Any] | None] | None:
    """The outcome of ``trigger_id``: (ok, error, failure), or None when there is none (or
    it is damaged: an unreadable result is no result)."""
    try:
        data = json.loads(registry.storage.read_text(_path(registry, trigger_id)))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    error, failure = data.get("error"), data.get("failure")
    return (
        data["ok"],
        error if isinstance(error, str) else None,
        failure if isinstance(failure, dict) else None,
    )
