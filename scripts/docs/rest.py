"""``docs/reference/rest-api.md``: every route of ``flinkish web`` from the application's own
route table (:func:`flinkish_cli.web.app.create_app`), with what its handler's docstring says
it returns and the statuses its source answers (:class:`~flinkish_cli.web.replies.FlinkError`
and ``ok(..., status)``, in the handler and the helpers it calls), and the refusals of the
guard in front of every route (:mod:`flinkish_cli.web.security`)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from flinkish_cli import __version__
from scripts.docs.common import ROOT, cell, code, header, prose, table

PAGE = "reference/rest-api.md"

_INTRO = """
`flinkish web` serves Apache Flink's REST API (v1) over the job registry, so Flink's own CLI
(`flink list -m 127.0.0.1:8081`), the dashboard and tools made for Flink's REST API work with
flinkish's jobs; beside it, documents of its own under `/flinkish/` (the dashboard's, and
those `flinkish <action> -m <endpoint>` reads), and `/metrics` (the
[metrics reference](metrics.md)).

Every Flink route is served with and without the `/v1` prefix, as Flink's own server serves
it. An error is Flink's body, `{"errors": ["<message>"]}`, with the status below; when a
flinkish error is behind it, the whole error also goes in the `Flinkish-Error` header.
Start the server with `flinkish web`; the [configuration reference](../configuration.md) has
its keys (`rest.*`, `web.*`, `flinkish.web.*`).
"""

_STATUS_NAMES = {
    200: "OK",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    421: "Misdirected Request",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def routes() -> list[tuple[str, str, Callable[..., Any]]]:
    """(method, path, handler) of every route of the application, in its order; a route
    mounted under ``/v1`` once, under its path without the prefix."""
    from starlette.routing import Mount, Route

    from flinkish_cli.web.app import create_app
    from flinkish_cli.web.settings import WebSettings

    guard: Any = create_app(None, WebSettings(version=__version__))  # type: ignore[arg-type]
    found: list[tuple[str, str, Callable[..., Any]]] = []
    seen: set[tuple[str, str]] = set()
    for route in guard.app.routes:
        if isinstance(route, Mount) and route.path == "/v1":
            continue  # the same routes as without the prefix
        if isinstance(route, Mount):
            found.append(("GET", route.path + "/{path}", route.app))
            continue
        assert isinstance(route, Route)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            if (method, route.path) not in seen:
                seen.add((method, route.path))
                found.append((method, route.path, route.endpoint))
    return found


def render() -> str:
    """The page's Markdown."""
    parts = [header("REST API reference", _INTRO)]
    groups: dict[str, list[list[str]]] = {}
    for method, path, handler in routes():
        group = _group(path)
        statuses = ", ".join(f"{s} {_STATUS_NAMES.get(s, '')}".strip() for s in _statuses(handler))
        groups.setdefault(group, []).append(
            [code(method), code(path), _returns(handler, path), statuses]
        )
    for title, rows in groups.items():
        parts.append(f"## {title}\n\n" + table(["Method", "Path", "Returns", "Statuses"], rows))
    parts.append(_guard())
    return "\n".join(parts)


def _group(path: str) -> str:
    if path.startswith("/flinkish/registry") or path.startswith("/flinkish/jars"):
        return "flinkish's CLI through an endpoint"
    if path.startswith("/flinkish/"):
        return "The dashboard's documents"
    if path in ("/metrics",):
        return "Prometheus"
    if path in ("/", "/index.html") or path.startswith("/assets"):
        return "The dashboard"
    return "Flink's REST API (also under /v1)"


def _returns(handler: Callable[..., Any], path: str) -> str:
    """The handler's docstring, without a leading ``METHOD /path:`` (the table has them)."""
    if path.startswith("/assets"):
        return "The dashboard's scripts and styles."
    doc = inspect.getdoc(handler) or ""
    if not doc:
        raise LookupError(
            f"The handler of {path} ({getattr(handler, '__qualname__', handler)}) has no "
            "docstring: say in one sentence what it returns (the REST reference shows it)."
        )
    text = " ".join(prose(doc.split("\n\n")[0]).split())
    if text.startswith("`") and "`:" in text[:80] and text[1:5] in ("POST", "GET ", "PUT "):
        text = text.split("`:", 1)[1].strip()
    return cell(text[0].upper() + text[1:])


def _statuses(handler: Callable[..., Any]) -> list[int]:
    """The statuses the handler answers: 200 unless ``ok(..., status)`` says otherwise, and
    every ``FlinkError(status, ...)`` of it and of the helpers it calls (its class's
    ``self._...`` methods, :mod:`flinkish_cli.web.parsing`'s functions)."""
    from flinkish_cli.web import parsing

    owner = getattr(handler, "__self__", None)
    function = getattr(handler, "__func__", handler)
    if not inspect.isfunction(function):
        return [200]
    found: set[int] = set()
    success: set[int] = set()
    seen: set[str] = set()
    todo: list[Callable[..., Any]] = [function]
    while todo:
        current = todo.pop()
        if current.__qualname__ in seen:
            continue
        seen.add(current.__qualname__)
        tree = ast.parse(textwrap.dedent(inspect.getsource(current)))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _called(node.func)
            if name == "FlinkError" and node.args and isinstance(node.args[0], ast.Constant):
                found.add(int(node.args[0].value))
            elif name in ("ok", "Response", "StreamingResponse", "FileResponse"):
                status = _status_argument(node)
                success.add(status if status is not None else 200)
            elif name.startswith("self.") and owner is not None:
                method = getattr(type(owner), name[5:], None)
                if inspect.isfunction(method):
                    todo.append(method)
            elif name.startswith("parsing."):
                helper = getattr(parsing, name[8:], None)
                if inspect.isfunction(helper):
                    todo.append(helper)
    return sorted(success or {200}) + sorted(found)


def _status_argument(node: ast.Call) -> int | None:
    for keyword in node.keywords:
        if keyword.arg in ("status", "status_code") and isinstance(keyword.value, ast.Constant):
            return int(keyword.value.value)
    if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        value = node.args[1].value
        return int(value) if isinstance(value, int) else None
    return None


def _called(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_called(node.value)}.{node.attr}"
    return ""


def _guard() -> str:
    """The refusals of the guard and the server in front of every route, with their
    messages as the code writes them."""
    rows = [[f"{status} {_STATUS_NAMES.get(status, '')}".strip(), message]
            for status, message in sorted(set(_refusals()))]  # fmt: skip
    return (
        "## Every route\n\n"
        "Before a route's handler, `flinkish web` checks each request (its host, its origin, "
        "its token, its size and how fast it arrives) and refuses, with Flink's error body:\n\n"
        + table(["Status", "Message"], rows)
        + "\nAny other path, or a method a path does not take, is `404 Not Found` (as Flink's "
        "router answers both); an unexpected failure is `500 Internal Server Error`, never a "
        "traceback.\n"
    )


def _refusals() -> Iterator[tuple[int, str]]:
    source = ROOT / "flinkish_cli" / "web" / "security.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func) == "Refused" and node.args:
            status = node.args[0]
            if isinstance(status, ast.Constant) and isinstance(status.value, int):
                yield status.value, _message(node.args[1]) if len(node.args) > 1 else ""


def _message(node: ast.expr) -> str:
    """A message as the code writes it, its computed parts as ``<...>``."""
    if isinstance(node, ast.Constant):
        return cell(node.value)
    if isinstance(node, ast.JoinedStr):
        return cell("".join(
            str(v.value) if isinstance(v, ast.Constant) else "<...>" for v in node.values
        ))  # fmt: skip
    if isinstance(node, ast.Call):
        return f"as {code(ast.unparse(node.func) + '()')} words it"
    return ""
