"""No module of flinkish_cli is over :data:`LIMIT` lines but the option table: a module that
grows past it holds more than one concern, and is split by concern (each part a module of its
own, named in its package's docstring)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "flinkish_cli"
LIMIT = 500
#: the option table: one declaration per Flink and flinkish key, and nothing else
EXEMPT = {PACKAGE / "config" / "options.py"}


def too_long(root: Path = PACKAGE, limit: int = LIMIT) -> dict[str, int]:
    """The modules under ``root`` longer than ``limit`` lines, by path, with their length."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if path in EXEMPT or "__pycache__" in path.parts:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[str(path.relative_to(root.parent))] = lines
    return found


def test_no_module_is_over_the_limit_but_the_option_table() -> None:
    assert too_long() == {}, f"split these by concern (at most {LIMIT} lines each)"


def test_a_module_over_the_limit_is_found(tmp_path: Path) -> None:
    package = tmp_path / "flinkish_cli"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * LIMIT)
    (package / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    assert too_long(package) == {"flinkish_cli/long.py": LIMIT + 1}
