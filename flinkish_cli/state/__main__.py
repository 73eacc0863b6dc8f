"""``python -m flinkish_cli.state``: one state read in a process of its own.

``flinkish web`` is a long-lived server and never starts a JVM in its own process; the job
client runs each read it asks for here (:mod:`flinkish_cli.client.state_reads`). The request
is one JSON object on standard input (never on the command line, which every user of the
machine can read: it carries the configuration, secrets included)::

    {"conf": {<Flink key>: <value>}, "action": "ls" | "show", "source": "<JobID or path>",
     "query": ..., "operator": ..., "store": ..., "key": ..., "limit": ...}

The answer is one JSON object on standard output: ``{"ok": true, "document": ...}`` (the
document ``state ls`` or ``state show --output json`` prints: :mod:`.model` owns it) or
``{"ok": false, "error": ..., "hint": ..., "not-found": ...}``. Anything else the process
or Spark prints goes to standard error (:func:`flinkish_cli.plan.child.serve`). Exit status
0 either way; another means it crashed.
"""

from __future__ import annotations

from typing import Any

from flinkish_cli.plan.child import serve


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Carry out one request; its answer document."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.errors import FlinkishError, StateNotFoundError
    from flinkish_cli.state.api import list_state, show_state

    try:
        config = Configuration.from_flat(request.get("conf") or {})
        source = str(request["source"])
        if request.get("action") == "ls":
            listing = list_state(source, config, request.get("query"), request.get("operator"))
            return {"ok": True, "document": listing.summary()}
        if request.get("action") == "show":
            shown = show_state(
                source,
                config,
                request.get("query"),
                request.get("operator"),
                request.get("store"),
                request.get("key"),
                int(request.get("limit") or 20),
            )
            return {"ok": True, "document": {"stores": [s.summary() for s in shown]}}
        return {"ok": False, "error": f"Unknown action {request.get('action')!r}."}
    except FlinkishError as error:
        return {
            "ok": False,
            "error": error.message,
            "hint": error.hint,
            "not-found": isinstance(error, StateNotFoundError),
        }


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()
