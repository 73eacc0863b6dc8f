"""A setting as the user wrote it, where it came from, and how the effective configuration
shows it: :class:`Setting`, :class:`Source` (a file and line, ``-D``, a flag, the default)
and :class:`ConfigEntry`. Secrets and referenced values never show in a ``repr``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.config.valuetypes import Raw


def fix_hint(source: Source, key: str) -> str:
    """How to fix a bad value of ``key``, by where it came from."""
    if source.kind == "dynamic":
        return f"Fix the value given with -D {key}=..."
    if source.kind == "flag":
        return f"Fix the value of {source}."
    if source.kind == "file" and source.file:
        return f"Fix the value in {source.file}, or override it with -D {key}=..."
    return "Fix the value."


@dataclass(frozen=True)
class Source:
    """Where a value came from: ``default``, a file and line, ``-D`` or a command flag."""

    kind: str
    file: str | None = None
    line: int | None = None
    flag: str | None = None
    reference: str | None = None  # the ${env:...}/${file:...} the value was read from

    def __str__(self) -> str:
        via = f" via {self.reference}" if self.reference else ""
        if self.kind == "file":
            if self.file is None:
                return "configuration" + via
            return (f"{self.file}:{self.line}" if self.line else self.file) + via
        if self.kind == "dynamic":
            return "-D" + via
        if self.kind == "flag":
            return (f"flag {self.flag}" if self.flag else "flag") + via
        return "default"


DEFAULT = Source("default")


@dataclass(frozen=True)
class Setting:
    """One key and value as the user wrote it (a YAML list stays a tuple), and its source."""

    key: str
    value: Raw
    source: Source

    def __repr__(self) -> str:
        hidden = is_secret(self.key) or self.source.reference is not None
        value = REDACTED if hidden else repr(self.value)
        return f"Setting({self.key!r}, {value}, {self.source})"


@dataclass(frozen=True)
class ConfigEntry:
    """One key of the effective configuration, ready for display (secrets redacted)."""

    key: str
    value: Any
    text: str
    source: Source
    status: str
    spark: dict[str, str]
    description: str
    secret: bool

    def __repr__(self) -> str:
        value = REDACTED if self.secret else repr(self.value)
        return f"ConfigEntry({self.key!r}, value={value}, text={self.text!r}, source={self.source})"


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when below it, else absolute."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return absolute
    return absolute if relative.startswith("..") else relative
