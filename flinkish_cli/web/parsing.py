"""Reading a request of Flink's REST API: the path's JobID, a JSON body as its message's
(:mod:`flinkish_cli.rest.bodies`), trigger ids and enumerated choices. Anything
that does not match is Flink's 400 (:class:`~.replies.FlinkError`)."""

from __future__ import annotations

import json
from typing import TypeVar

from starlette.requests import Request

from flinkish_cli.client.base import is_trigger_id
from flinkish_cli.registry.jobid import is_job_id
from flinkish_cli.rest.bodies import (
    BodyMismatch,
    CheckpointTriggerRequestBody,
    RequestBody,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
)
from flinkish_cli.web.replies import FlinkError

FORMAT_TYPES = ("CANONICAL", "NATIVE")
CHECKPOINT_TYPES = ("CONFIGURED", "FULL", "INCREMENTAL")

_Body = TypeVar("_Body", bound=RequestBody)


def job_id(request: Request) -> str:
    value = request.path_params["jobid"]
    if not is_job_id(value):
        raise FlinkError(
            400,
            "Bad request, could not parse parameters: Cannot resolve path parameter (jobid) "
            f'from value "{value[:64]}".',
        )
    return value.lower()


async def _document(request: Request, name: str) -> object:
    """The request's body as decoded JSON; Flink's 400 naming ``name`` when it is not JSON.
    An empty body is ``{}``, as Flink's clients send for no body."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise FlinkError(400, str(BodyMismatch(name))) from None


async def body(request: Request, message: type[_Body]) -> _Body:
    """The request's body as the message's (:mod:`flinkish_cli.rest.bodies`): each field
    declared and of its type; Flink's 400 otherwise."""
    try:
        return message.from_wire(await _document(request, message.NAME))
    except BodyMismatch as mismatch:
        raise FlinkError(400, str(mismatch)) from None


async def json_object(request: Request, name: str) -> dict:
    """The request's body as a JSON object of any fields; Flink's 400 naming ``name``
    otherwise (an empty body is ``{}``)."""
    data = await _document(request, name)
    if not isinstance(data, dict):
        raise FlinkError(400, str(BodyMismatch(name)))
    return data


def trigger_id(
    data: CheckpointTriggerRequestBody | StopWithSavepointRequestBody | SavepointTriggerRequestBody,
) -> str | None:
    """The trigger id the caller chose (lower case), None for none; Flink's 400 for one that
    is not 32 hexadecimal digits."""
    value, key = data.trigger_id, data.wire_names()["trigger_id"]
    if value is None:
        return None
    if not is_trigger_id(value.lower()):
        raise FlinkError(400, f"The {key} {value[:64]!r} is not 32 hexadecimal digits.")
    return value.lower()


def savepoint_request(
    data: StopWithSavepointRequestBody | SavepointTriggerRequestBody,
) -> tuple[str | None, str]:
    """A savepoint-taking request's (stop, savepoint) trigger id (the caller's, if any) and
    format type, its target checked."""
    savepoint_target(data.target_directory, data.wire_names()["target_directory"])
    return trigger_id(data), choice(data, "format_type", FORMAT_TYPES)


def savepoint_target(value: str | None, key: str) -> None:
    """Flink's 400 for a savepoint directory given over REST (in the field ``key``) that is
    relative (it would be resolved against the server's working directory, not the sender's)
    or holds a control character (a NUL, a line break)."""
    if value is None:
        return
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise FlinkError(
            400, f"The savepoint target ({key}) holds a control character: name a directory."
        )
    if "://" not in value and not value.startswith("/"):
        raise FlinkError(
            400,
            f"The savepoint target ({key}) {value[:64]!r} is a relative path, which would be "
            "resolved against flinkish web's working directory: give an absolute path or a "
            "URI (file://, s3://, hdfs://).",
        )


def request_timeout(request: Request) -> float:
    """How long a trigger's sender waits for the job (``Flinkish-Request-Timeout``, seconds):
    the trigger expires then; without the header, Flink's detached meaning (a day)."""
    from flinkish_cli.client.base import DETACHED_TTL
    from flinkish_cli.rest.wire import TIMEOUT_HEADER

    raw = request.headers.get(TIMEOUT_HEADER)
    if raw is None:
        return DETACHED_TTL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= DETACHED_TTL:
        raise FlinkError(
            400, f"{TIMEOUT_HEADER} must be seconds from 0 to {DETACHED_TTL:.0f}, not {raw[:32]!r}."
        )
    return value


def choice(data: RequestBody, field: str, choices: tuple[str, ...]) -> str:
    """An enumerated field's value (upper case; absent: the first choice, Flink's default);
    Flink's 400, naming the field as sent, for another."""
    value, key = (getattr(data, field) or choices[0]).upper(), data.wire_names()[field]
    if value not in choices:
        raise FlinkError(400, f"{key} must be one of {', '.join(choices)}, not {value[:32]!r}.")
    return value


#: ``?limit=`` of a state read: rows per store.
MAX_STATE_LIMIT = 1000


def state_rows_request(request: Request) -> tuple[str, int, str | None, str | None, int]:
    """``/flinkish/jobs/:jobid/state/:query/:operator?store=&key=&limit=``: the query, the
    operator id, the store and key (None when not given) and the limit (20 by default)."""
    query = request.path_params["query"]
    text = request.path_params["operator"]
    if not text.isdigit() or len(text) > 9:
        raise FlinkError(404, f"Query '{query[:64]}' has no stateful operator {text[:16]!r}.")
    params = request.query_params
    limit_text = params.get("limit", "20")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_STATE_LIMIT:
        raise FlinkError(
            400, f"limit must be a number from 1 to {MAX_STATE_LIMIT}, not {limit_text[:16]!r}."
        )
    return query, int(text), params.get("store") or None, params.get("key"), int(limit_text)
