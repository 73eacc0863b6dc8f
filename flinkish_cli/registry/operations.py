"""Results of operations that belong to no job: a savepoint disposed of through the REST API
(``POST /savepoint-disposal``), whose result its caller polls by trigger id later, possibly
from another ``flinkish web`` process::

    <root>/_flinkish/operations/<trigger id>.json     {"ok": bool, "error": str | null}

Kept in the registry, so that the web endpoint itself holds no state.
"""

from __future__ import annotations

import json

from flinkish_cli.registry.store import META_DIR, JobRegistry

OPERATIONS_DIR = "operations"


def _path(registry: JobRegistry, trigger_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.root, META_DIR, OPERATIONS_DIR, f"{trigger_id}.json")


def record(registry: JobRegistry, trigger_id: str, ok: bool, error: str | None) -> None:
    """Keep the outcome of the operation ``trigger_id``."""
    registry.storage.write_text(_path(registry, trigger_id), json.dumps({"ok": ok, "error": error}))


def result(registry: JobRegistry, trigger_id: str) -> tuple[bool, str | None] | None:
    """The outcome of ``trigger_id``: (ok, error), or None when there is none (or it is
    damaged: an unreadable result is no result)."""
    try:
        data = json.loads(registry.storage.read_text(_path(registry, trigger_id)))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    error = data.get("error")
    return data["ok"], error if isinstance(error, str) else None
