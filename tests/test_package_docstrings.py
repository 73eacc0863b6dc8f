"""Every package's docstring names what it holds: each module and sub-package of a package of
flinkish_cli is named in the package's docstring (``:mod:`.name``` or its full path), so that
the folder layout and its docstrings tell the architecture together."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "flinkish_cli"
PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def held(package: Path) -> list[str]:
    """The modules and sub-packages of ``package`` (``__main__`` and private ones aside)."""
    names = [p.stem for p in package.glob("*.py") if not p.stem.startswith("_")]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(names)


def unnamed(package: Path, root: Path = PACKAGE.parent) -> list[str]:
    """What ``package`` (under ``root``, the directory of the top package) holds that its
    docstring does not name."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    dotted = ".".join(package.relative_to(root).parts)
    return [
        name for name in held(package) if f".{name}`" not in doc and f"{dotted}.{name}" not in doc
    ]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_each_package_docstring_names_every_module_it_holds(package: Path) -> None:
    assert unnamed(package) == [], f"name them in {package / '__init__.py'}'s docstring"


def test_a_module_the_docstring_does_not_name_is_found(tmp_path: Path) -> None:
    package = tmp_path / "flinkish_cli" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""Demo.\n\n- :mod:`.named`: here."""\n')
    (package / "named.py").write_text("")
    (package / "forgotten.py").write_text("")
    assert unnamed(package, tmp_path) == ["forgotten"]
