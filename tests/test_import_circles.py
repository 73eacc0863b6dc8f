"""No import circle between files: the package's, the benchmarks', the jobs', the scripts'
and the tests' own.

import-linter (scripts/test.sh) keeps the packages in layers, so no circle runs between
packages; a circle between two files of one package it does not see. This scan reads every
``import`` with :mod:`ast`: at the top of a file, inside a function (a lazy import hides a
circle at run time, it does not remove it) and under ``TYPE_CHECKING`` (a type the other
file needs is a dependency all the same). A file depends on the module it names; ``from
package import module`` names that module.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Container, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = ("flinkish_cli", "benchmarks", "jobs", "scripts", "tests")


def _modules(tree: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((ROOT / tree).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _named(name: str, path: Path, node: ast.AST, modules: Container[str]) -> Iterator[str]:
    """The modules among ``modules`` that one import statement in module ``name`` (the file
    ``path``) names: ``from a import b`` names the module ``a.b`` when there is one, else
    ``a`` (``b`` is a name defined in it); relative imports resolved."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, *([node.module] if node.module else [])])
        targets = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
            for alias in node.names
        ]
    else:
        return
    yield from (target for target in targets if target in modules and target != name)


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Each module's dependencies among ``modules``, with the line of the first import."""
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _named(name, path, node, modules):
                graph[name].setdefault(target, getattr(node, "lineno", 0))
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm,
    iterative), each as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(_circle_through(graph, set(component)))
    return found


def _circle_through(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """One circle inside ``component``, from its first module (by name) back to it."""
    first = min(component)
    paths = {first: [first]}
    queue = [first]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node]):
            if child == first:
                return [*paths[node], first]
            if child in component and child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError(f"no circle in {sorted(component)}")  # a component always has one


def _shown(graph: dict[str, dict[str, int]], modules: dict[str, Path], circle: list[str]) -> str:
    steps = [
        f"{modules[a].relative_to(ROOT)}:{graph[a][b]} imports {b}"
        for a, b in itertools.pairwise(circle)
    ]
    return " -> ".join(circle) + "\n    " + "\n    ".join(steps)


@functools.cache
def _ours() -> tuple[dict[str, Path], dict[str, dict[str, int]], list[list[str]]]:
    modules = {name: path for tree in TREES for name, path in _modules(tree).items()}
    graph = import_graph(modules)
    return modules, graph, circles(graph)


@pytest.mark.parametrize("tree", TREES)
def test_no_import_circle_between_files(tree: str) -> None:
    modules, graph, found_all = _ours()
    found = [c for c in found_all if c[0].split(".")[0] == tree]
    assert not found, "import circles (cut one import of each):\n" + "\n".join(
        _shown(graph, modules, c) for c in found
    )


def test_the_scan_finds_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    """The scan itself: a circle closed by an import inside a function is one."""
    graph = {
        "pkg.a": {"pkg.b": 3},
        "pkg.b": {"pkg.c": 5},
        "pkg.c": {"pkg.a": 9},
        "pkg.d": {"pkg.a": 1},
    }
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    (tmp_path / "pkg").mkdir()
    files = {
        "pkg": "",
        "pkg.a": "from pkg.b import run\n",
        "pkg.b": "import os\n\n\ndef run():\n    from pkg import a\n",
    }
    modules = {}
    for name, source in files.items():
        path = tmp_path / (name.replace(".", "/") + ("/__init__.py" if name == "pkg" else ".py"))
        path.write_text(source)
        modules[name] = path
    graph = import_graph(modules)
    assert graph == {"pkg": {}, "pkg.a": {"pkg.b": 1}, "pkg.b": {"pkg.a": 5}}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
