"""What travels between ``flinkish web`` and flinkish's REST job client besides the bodies
of the routes (:mod:`.messages` declares them): two request headers, an upgrade's events,
and errors.

Flink's routes (``/jobs/overview``, ``PATCH /jobs/:jobid``, ``POST /jobs/:jobid/stop``...)
keep Flink's messages, which Flink's own CLI reads. What flinkish's CLI needs beyond them
lives under ``/flinkish/registry/`` and ``/flinkish/jars/`` (never a path of Flink's):

- ``GET  /flinkish/registry/jobs`` every job's status document without its queries'
  recent progress (a job list shows none of it), newest first, and the unreadable jobs;
- ``GET  /flinkish/registry/jobs/:jobid`` the job's status document, as the registry has it;
- ``GET  /flinkish/registry/jobs/:jobid/control/:triggerid`` the job's answer to a request
  (``response``: null while it has none) and whether its driver has ``claimed`` it;
  ``POST .../withdraw`` takes the request back unless the driver claimed it first
  (``withdrawn``); ``DELETE`` forgets an answered request;
- ``GET  /flinkish/registry/jobs/:jobid/log`` the driver's log as text (``follow``,
  ``lines``), streamed;
- ``GET  /flinkish/registry/jobs/:jobid/savepoints`` and ``/flinkish/registry/savepoints``
  the savepoint history of a job's lineage, and of every job, as records;
  ``GET /flinkish/registry/last-savepoints?jobs=<JobID>,...`` each job's last savepoint.

- ``POST /flinkish/jars/upload`` a program (``{"name": ..., "archive": <base64 zip>}``,
  JSON as every POST here must be; Flink's ``/jars/upload`` takes a multipart jar) answers
  ``{"filename": <upload id>, "status": "success"}``; ``POST /flinkish/jars/:id/run`` starts
  it (Flink's ``JarRunRequestBody`` fields, flinkish's meaning:
  :class:`~flinkish_cli.submission.upload.UploadedRun`) and answers Flink's ``{"jobid":
  ...}``. Both only with ``web.submit.enable``.
- ``POST /flinkish/jars/:id/upgrade`` carries out ``flinkish upgrade`` on the server with
  the uploaded program (:meth:`~flinkish_cli.client.upgrade.outcome.UpgradeRequest.to_json`)
  and answers, as it goes, with events (:func:`event`, one JSON object a line):
  ``savepoint``, ``submitted`` and ``notice`` (what the CLI shows while the upgrade goes
  on), then ``outcome`` (the whole outcome) or ``error`` (the job client's error, as the
  header holds one). An empty line every :data:`HEARTBEAT_SECONDS` says the server is
  still at it. Only with ``web.submit.enable``, as the upload.

Headers:

- ``Flinkish-Error`` on an error answer: the error the job client raised on the server,
  whole (its class, message, hint and plain fields), while Flink's body stays
  ``{"errors": [message]}``. flinkish's CLI raises that same error, so it prints the same
  lines and exits with the same status as when it reads the registry itself.
- ``Flinkish-Request-Timeout`` on a trigger (savepoint, stop, checkpoint): the seconds its
  sender waits for the job. The request expires then, as a request a waiting CLI writes to
  storage does, so a command that gave up (or was killed) never has it carried out later.
  Without it a trigger keeps Flink's detached meaning (a day:
  :data:`~flinkish_cli.registry.control.DETACHED_TTL`).
"""

from __future__ import annotations

import json
from typing import Any

from flinkish_cli.errors import FlinkishError

ERROR_HEADER = "Flinkish-Error"
TIMEOUT_HEADER = "Flinkish-Request-Timeout"


#: How often an upgrade's answer says its server is still at it (an empty line).
HEARTBEAT_SECONDS = 5.0
#: The events of an upgrade's answer (see the module's description).
EVENTS = ("savepoint", "submitted", "notice", "outcome", "error")


def event(kind: str, value: Any) -> bytes:
    """One event of an upgrade's answer, as its line."""
    assert kind in EVENTS, kind
    return json.dumps({"event": kind, "value": value}, separators=(",", ":")).encode() + b"\n"


def read_event(line: bytes) -> tuple[str, Any] | None:
    """An event's kind and value; None for a heartbeat; ValueError for a line that is
    neither."""
    if not line.strip():
        return None
    document = json.loads(line)
    if not isinstance(document, dict) or document.get("event") not in EVENTS:
        raise ValueError("not an upgrade event")
    return document["event"], document.get("value")


# -- errors ----------------------------------------------------------------------------------
def error_header(error: FlinkishError) -> str:
    """``error`` as the ``Flinkish-Error`` header's value (ASCII JSON on one line)."""
    fields = {
        name: value
        for name, value in vars(error).items()
        if name not in ("message", "hint")
        and not name.startswith("_")
        and (value is None or isinstance(value, (str, int, float, bool)))
    }
    kinds = [f"{c.__module__}.{c.__qualname__}" for c in type(error).__mro__]
    document = {
        "type": [k for k in kinds if k.startswith("flinkish_cli.")],
        "message": error.message,
        "hint": error.hint,
        "fields": fields,
    }
    return json.dumps(document, ensure_ascii=True, separators=(",", ":"))


def error_from_header(value: str | None) -> FlinkishError | None:
    """The error a ``Flinkish-Error`` header carries, of its class (else of the nearest
    class of flinkish's this process knows); None for a header that is not one."""
    if not value:
        return None
    try:
        document = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return error_from_document(document)


def error_from_document(document: Any) -> FlinkishError | None:
    """:func:`error_from_header` of a document already parsed (kept in the registry too)."""
    if not isinstance(document, dict) or not isinstance(document.get("message"), str):
        return None
    kinds = document.get("type")
    known = _classes()
    cls = next(
        (known[k] for k in kinds if isinstance(k, str) and k in known),
        FlinkishError,
    ) if isinstance(kinds, list) else FlinkishError  # fmt: skip
    hint = document.get("hint")
    error = cls.__new__(cls)
    FlinkishError.__init__(error, document["message"], hint if isinstance(hint, str) else None)
    fields = document.get("fields")
    for name, value in (fields if isinstance(fields, dict) else {}).items():
        if (
            isinstance(name, str)
            and name.isidentifier()
            and not name.startswith("_")
            and name not in ("message", "hint", "args", "exit_code")
        ):
            setattr(error, name, value)
    return error


def error_document(error: FlinkishError) -> dict[str, Any]:
    """``error`` as a JSON document (what the header holds), to keep it in the registry."""
    document: dict[str, Any] = json.loads(error_header(error))
    return document


def _classes() -> dict[str, type[FlinkishError]]:
    """flinkish's error classes this process has loaded (the registry's and the storage's
    included), by module and name."""

    found: dict[str, type[FlinkishError]] = {}
    pending: list[type[FlinkishError]] = [FlinkishError]
    while pending:
        cls = pending.pop()
        found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        pending.extend(cls.__subclasses__())
    return found
