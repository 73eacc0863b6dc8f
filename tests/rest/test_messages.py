"""The routes of ``flinkish web`` have one owner (:mod:`flinkish_cli.rest.messages`): the
server serves exactly its messages, and no path of them is written anywhere else in the
package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flinkish_cli.rest import messages
from flinkish_cli.rest.messages import Message

PACKAGE = Path(messages.__file__).resolve().parents[1]
#: how a route's path starts (Flink's and flinkish's); the option table's help texts, which
#: name routes in prose, are not paths the code sends or serves
PREFIXES = ("/flinkish/", "/jobs", "/savepoint-disposal", "/v1/")
EXACT = {"/config", "/overview", "/metrics", "/v1", "/index.html", "/assets"}


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings, with f-strings' first
    part."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings | parts
        ):
            found.append((node.lineno, node.value))
    return found


def _is_route(text: str) -> bool:
    return text in EXACT or text.startswith(PREFIXES)


def test_no_route_path_is_written_outside_the_catalogue() -> None:
    owner = Path(messages.__file__).resolve()
    stray = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.resolve() != owner and path.name != "options.py"
        for line, text in _literals(path)
        if _is_route(text)
    ]
    assert not stray, "route paths belong in flinkish_cli/rest/messages.py:\n" + "\n".join(stray)


def test_the_scan_sees_a_path_written_elsewhere(tmp_path: Path) -> None:
    module = tmp_path / "stray.py"
    module.write_text('"""/jobs in a docstring is prose."""\nPATH = f"/jobs/{1}/stop"\n')
    assert [text for _, text in _literals(module) if _is_route(text)] == ["/jobs/"]


def test_the_server_serves_every_message_and_no_other_route() -> None:
    pytest.importorskip("starlette")
    from starlette.routing import Mount, Route

    from flinkish_cli.web.app import WebSettings, create_app

    guard = create_app(None, WebSettings(version="2.3.0"))  # type: ignore[arg-type]
    served: set[tuple[str, str]] = set()
    for route in guard.app.routes:  # type: ignore[attr-defined]
        if isinstance(route, Route):
            served |= {(method, route.path) for method in route.methods or () if method != "HEAD"}
        else:
            assert isinstance(route, Mount)
            assert route.path in (messages.VERSION_PREFIX, messages.ASSETS)
    declared = {(message.method, message.path) for message in messages.catalogue().values()}
    assert served == declared


def test_a_message_fills_in_its_parameters_quoted() -> None:
    control = messages.CONTROL_WITHDRAW
    assert control.parameters == ("jobid", "triggerid")
    assert control.url(jobid="ab", triggerid="c/d") == (
        "/flinkish/registry/jobs/ab/control/c%2Fd/withdraw"
    )
    with pytest.raises(KeyError):
        control.url(jobid="ab")
    with pytest.raises(TypeError):
        Message("GET", "/jobs").url(jobid="ab")
