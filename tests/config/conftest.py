"""Shared helpers: an isolated working directory and configuration directories to fill."""

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory, with no FLINK_CONF_DIR and a private home."""
    monkeypatch.delenv("FLINK_CONF_DIR", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def conf_dir(tmp_path: Path) -> Callable[..., Path]:
    """``conf_dir(name, text)`` writes ``text`` to ``<dir>/<name>`` and returns the directory."""
    counter = iter(range(1000))

    def make(name: str | None = None, text: str = "", directory: Path | None = None) -> Path:
        target = directory or tmp_path / f"conf{next(counter)}"
        target.mkdir(parents=True, exist_ok=True)
        if name is not None:
            (target / name).write_text(text, encoding="utf-8")
        return target

    return make
