"""The value types of configuration options: how a value is parsed, checked and printed.

Each type turns what the user wrote (a string, or a list of strings from a YAML sequence)
into a typed value and back into display text. Types raise
:class:`~flinkish_cli.config.units.ValueProblem`; the configuration layer adds where the
value came from. Range checks (:class:`Check`) are separate so one type serves many options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import flinkish_cli.config.units as units
from flinkish_cli.config.units import ValueProblem

Raw = str | Sequence[str]

__all__ = [
    "Bool",
    "Check",
    "Duration",
    "Enum",
    "Float",
    "Int",
    "List",
    "Memory",
    "Nested",
    "Raw",
    "Str",
    "Uri",
    "ValueType",
    "at_least",
    "at_most",
    "between",
    "nested_item",
    "raw_text",
]


class Nested(str):
    """A list item that is itself a list or a map in ``config.yaml``, as flow-style text.

    No option takes those; :func:`nested_item` finds them so that they are refused.
    """

    kind: str

    def __new__(cls, text: str, kind: str) -> Nested:
        item = super().__new__(cls, text)
        item.kind = kind
        return item


def nested_item(raw: Raw) -> tuple[int, Nested] | None:
    """The first item of a list value that is a nested list or map (1-based), if any."""
    if isinstance(raw, str):
        return None
    for index, item in enumerate(raw, start=1):
        if isinstance(item, Nested):
            return index, item
    return None


def raw_text(raw: Raw, separator: str = ",") -> str:
    """The raw value as one string (a YAML list is joined with ``separator``)."""
    return raw if isinstance(raw, str) else separator.join(raw)


def _scalar(raw: Raw) -> str:
    if not isinstance(raw, str):
        raise ValueProblem("is a list", "a single value")
    return raw


class ValueType:
    """Base of the value types: ``parse`` raw text to a value, ``format`` a value to text."""

    name = "str"

    def parse(self, raw: Raw) -> Any:
        raise NotImplementedError

    def format(self, value: Any) -> str:
        return str(value)

    def describe(self) -> str:
        """The type as the reference page shows it."""
        return self.name


class Str(ValueType):
    name = "str"

    def parse(self, raw: Raw) -> str:
        return _scalar(raw).strip()


class Uri(ValueType):
    """A path or URI. A local path (no scheme) has ``~`` expanded and is made absolute."""

    name = "uri"
    _SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

    def parse(self, raw: Raw) -> str:
        text = _scalar(raw).strip()
        if not text:
            raise ValueProblem("is empty", "a path or URI, e.g. /data/checkpoints or s3://b/p")
        if text.startswith("file://"):
            return text
        if self._SCHEME.match(text):
            return text
        return os.path.abspath(os.path.expanduser(text))


class Bool(ValueType):
    name = "bool"

    def parse(self, raw: Raw) -> bool:
        return units.parse_bool(_scalar(raw))

    def format(self, value: Any) -> str:
        return "true" if value else "false"


class Int(ValueType):
    name = "int"

    def parse(self, raw: Raw) -> int:
        return units.parse_int(_scalar(raw))


class PortList(ValueType):
    """Flink's ports: one, a list or a range (:class:`~flinkish_cli.config.units.Ports`)."""

    name = "ports"

    def parse(self, raw: Raw) -> units.Ports:
        return units.parse_ports(raw_text(raw))

    def describe(self) -> str:
        return "ports (8081, a list 50100,50101 or a range 50100-50200)"


class Float(ValueType):
    name = "float"

    def parse(self, raw: Raw) -> float:
        return units.parse_float(_scalar(raw))

    def format(self, value: Any) -> str:
        return repr(float(value))


class Duration(ValueType):
    name = "duration"

    def parse(self, raw: Raw) -> timedelta:
        return units.parse_duration(_scalar(raw))

    def format(self, value: Any) -> str:
        return units.format_duration(value)


class Schedule(ValueType):
    """A duration (``10 min``: every 10 minutes), a cron expression (``0 */6 * * *``, five
    fields, checked by croniter, imported only for such a value), or ``0`` (never)."""

    name = "duration or cron"

    def parse(self, raw: Raw) -> timedelta | str:
        text = _scalar(raw).strip()
        if len(text.split()) < 5:
            return units.parse_duration(text)
        from croniter import croniter

        if not croniter.is_valid(text):
            raise ValueProblem(
                "is not a valid cron expression",
                "a duration (10 min) or five cron fields (0 */6 * * *)",
            )
        return text

    def format(self, value: Any) -> str:
        return value if isinstance(value, str) else units.format_duration(value)

    def describe(self) -> str:
        return self.name


class Memory(ValueType):
    name = "memory"

    def parse(self, raw: Raw) -> int:
        return units.parse_memory(_scalar(raw))

    def format(self, value: Any) -> str:
        return "infinite" if value == units.MAX_BYTES else units.format_memory(value)


@dataclass
class Enum(ValueType):
    """One of ``values`` (case-insensitive); ``synonyms`` map other spellings to a value.

    ``deprecated`` spellings are accepted like synonyms, with a warning.
    """

    values: tuple[str, ...]
    synonyms: Mapping[str, str] = field(default_factory=dict)
    deprecated: Mapping[str, str] = field(default_factory=dict)
    name: str = "enum"

    def parse(self, raw: Raw) -> str:
        text = _scalar(raw).strip().lower()
        for value in self.values:
            if value.lower() == text:
                return value
        for spelling, value in {**self.synonyms, **self.deprecated}.items():
            if spelling.lower() == text:
                return value
        raise ValueProblem("is not a valid value", f"one of {', '.join(self.values)}")

    def deprecated_spelling(self, raw: Raw) -> str | None:
        """The canonical value when ``raw`` is a deprecated spelling, else None."""
        text = raw.strip().lower() if isinstance(raw, str) else ""
        for spelling, value in self.deprecated.items():
            if spelling.lower() == text:
                return value
        return None

    def describe(self) -> str:
        spellings = list(self.values) + list(self.synonyms)
        return "enum: " + " | ".join(spellings)


@dataclass
class List(ValueType):
    """A list of strings: a YAML sequence, or text split at any of ``separators``."""

    separators: str = ";,"
    name: str = "list"

    def parse(self, raw: Raw) -> list[str]:
        items = [raw] if isinstance(raw, str) else list(raw)
        result: list[str] = []
        for item in items:
            result += [p.strip() for p in re.split(f"[{re.escape(self.separators)}]", item)]
        return [p for p in result if p]

    def format(self, value: Any) -> str:
        return self.separators[0].join(value)

    def describe(self) -> str:
        return f"list (separated by {' or '.join(repr(s) for s in self.separators)})"


@dataclass(frozen=True)
class Check:
    """A range check on a parsed value: ``test(value)`` is true for allowed values."""

    test: Callable[[Any], bool]
    expected: str


def at_least(low: float, what: str = "a value", shown: str | None = None) -> Check:
    """Allowed: ``value >= low``; the message shows ``shown`` (default: ``low``)."""
    return Check(lambda v: v >= low, f"{what} ≥ {shown or low}")


def at_most(high: float, what: str = "a value", shown: str | None = None) -> Check:
    """Allowed: ``value <= high``."""
    return Check(lambda v: v <= high, f"{what} ≤ {shown or high}")


def between(
    low: float,
    high: float,
    what: str = "a value",
    high_open: bool = False,
    shown: tuple[str, str] | None = None,
) -> Check:
    """Allowed: ``low <= value <= high`` (``< high`` when ``high_open``)."""
    lo, hi = shown or (str(low), str(high))
    if high_open:
        return Check(lambda v: low <= v < high, f"{what} from {lo} up to (excluding) {hi}")
    return Check(lambda v: low <= v <= high, f"{what} from {lo} to {hi}")
