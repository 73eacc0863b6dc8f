"""Flink's value syntax: durations, memory sizes, booleans and numbers, parsed and formatted.

The parsers accept exactly what Flink's own parsers accept (``TimeUtils.parseDuration`` and
``MemorySize.parse``): a non-negative whole number, optional whitespace, and an optional
unit label in any case. A bare number is milliseconds for a duration and bytes for a memory
size. The formatters write the largest unit that represents the value exactly, as Flink
prints values (``10 s``, ``1 min``, ``128 mb``), so that ``parse(format(x)) == x``.

Every parser raises :class:`ValueProblem` (a ``ValueError``) naming what is wrong and the
expected form; the configuration layer adds the file, line and key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

__all__ = [
    "DURATION_EXPECTED",
    "DURATION_UNITS",
    "MAX_BYTES",
    "MEMORY_EXPECTED",
    "MEMORY_UNITS",
    "PORTS_EXPECTED",
    "Ports",
    "ValueProblem",
    "format_duration",
    "format_memory",
    "human_bytes",
    "parse_bool",
    "parse_duration",
    "parse_float",
    "parse_int",
    "parse_memory",
    "parse_ports",
]

#: Java's Long.MAX_VALUE: the largest memory size Flink can express ("infinite").
MAX_BYTES = 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1

_NS = 1
_US = 1_000
_MS = 1_000_000
_S = 1_000_000_000
_MIN = 60 * _S
_H = 60 * _MIN
_D = 24 * _H

#: Duration unit label (lower case) -> nanoseconds, as Flink's TimeUtils recognises them
#: (plus ``us`` and the Greek ``μs``, other spellings of ``µs``).
DURATION_UNITS: dict[str, int] = {
    "ns": _NS,
    "nano": _NS,
    "nanos": _NS,
    "nanosecond": _NS,
    "nanoseconds": _NS,
    "µs": _US,
    "μs": _US,
    "us": _US,
    "micro": _US,
    "micros": _US,
    "microsecond": _US,
    "microseconds": _US,
    "ms": _MS,
    "milli": _MS,
    "millis": _MS,
    "millisecond": _MS,
    "milliseconds": _MS,
    "s": _S,
    "sec": _S,
    "secs": _S,
    "second": _S,
    "seconds": _S,
    "min": _MIN,
    "m": _MIN,
    "minute": _MIN,
    "minutes": _MIN,
    "h": _H,
    "hour": _H,
    "hours": _H,
    "d": _D,
    "day": _D,
    "days": _D,
}

#: The label each duration unit is printed with, largest unit first.
_DURATION_FORMAT = (("d", _D), ("h", _H), ("min", _MIN), ("s", _S), ("ms", _MS), ("µs", _US))

#: Memory unit label (lower case) -> bytes, as Flink's MemorySize recognises them (1024-based).
MEMORY_UNITS: dict[str, int] = {
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}

_MEMORY_FORMAT = (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10))

DURATION_EXPECTED = (
    "e.g. 10 s, 500 ms, 1 min (units: ns, µs, ms, s, min, h, d; a bare number is milliseconds)"
)
MEMORY_EXPECTED = "e.g. 128 mb, 1 gb, 64 kb (units: b, kb, mb, gb, tb; a bare number is bytes)"

# Flink reads the leading ASCII digits as the number and the rest (trimmed) as the unit.
_NUMBER_AND_UNIT = re.compile(r"([0-9]*)(.*)", re.DOTALL)
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class ValueProblem(ValueError):
    """A value that does not parse: what is wrong with it and the form that was expected."""

    def __init__(self, problem: str, expected: str) -> None:
        super().__init__(f"{problem}; expected {expected}")
        self.problem = problem
        self.expected = expected


def _split(text: str, what: str, expected: str) -> tuple[int, str]:
    trimmed = text.strip()
    if not trimmed:
        raise ValueProblem(f"is empty, not {what}", expected)
    match = _NUMBER_AND_UNIT.fullmatch(trimmed)
    assert match is not None  # the pattern matches any string
    number, unit = match.group(1), match.group(2).strip().lower()
    if not number:
        raise ValueProblem(f"is not {what}", expected)
    return int(number), unit


def parse_duration(text: str) -> timedelta:
    """``10 s``, ``500ms``, ``1 min``, ``2h``, ``1d``; a bare number is milliseconds."""
    amount, unit = _split(text, "a duration", DURATION_EXPECTED)
    if unit and unit not in DURATION_UNITS:
        raise ValueProblem("is not a duration", DURATION_EXPECTED)
    nanos = amount * DURATION_UNITS[unit] if unit else amount * _MS
    if nanos % _US:
        raise ValueProblem("is finer than a microsecond", "a duration of whole microseconds")
    try:
        return timedelta(microseconds=nanos // _US)
    except OverflowError:
        raise ValueProblem("is too long a duration", "at most 999999999 d") from None


def format_duration(value: timedelta) -> str:
    """The largest unit that is exact, as Flink prints durations: ``10 s``, ``1 min``, ``0 ms``."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if micros < 0:
        raise ValueError(f"negative duration {value}")
    if micros == 0:
        return "0 ms"
    nanos = micros * _US
    for label, size in _DURATION_FORMAT:
        if nanos % size == 0:
            return f"{nanos // size} {label}"
    raise AssertionError("unreachable: every timedelta is whole microseconds")


def parse_memory(text: str) -> int:
    """Bytes of ``128mb``, ``128 m``, ``2 gb``, ``1g``, ``64k``, ``1t``; a bare number is bytes."""
    amount, unit = _split(text, "a memory size", MEMORY_EXPECTED)
    if unit and unit not in MEMORY_UNITS:
        raise ValueProblem("is not a memory size", MEMORY_EXPECTED)
    size = amount * (MEMORY_UNITS[unit] if unit else 1)
    if size > MAX_BYTES:
        raise ValueProblem("is too large a memory size", "at most 8388607 tb")
    return size


def format_memory(size: int) -> str:
    """The largest unit that is exact, as Flink prints sizes: ``128 mb``, ``1 gb``, ``5 bytes``."""
    if size < 0:
        raise ValueError(f"negative memory size {size}")
    if size == 0:
        return "0 bytes"
    for label, unit in _MEMORY_FORMAT:
        if size % unit == 0:
            return f"{size // unit} {label}"
    return f"{size} bytes"


def parse_bool(text: str) -> bool:
    """``true`` or ``false``, in any case (Flink accepts nothing else)."""
    lowered = text.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueProblem("is not a boolean", "true or false")


def parse_int(text: str) -> int:
    """A whole number that fits Java's int, as Flink's integer options hold."""
    trimmed = text.strip()
    if not _INT.fullmatch(trimmed):
        raise ValueProblem("is not an integer", "a whole number, e.g. 4")
    value = int(trimmed)
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueProblem("is too large an integer", f"at most {_INT_MAX}")
    return value


def parse_float(text: str) -> float:
    """A finite decimal number, e.g. ``0.1``, ``1.5``, ``2e-3``."""
    trimmed = text.strip()
    if not _FLOAT.fullmatch(trimmed):
        raise ValueProblem("is not a number", "a decimal number, e.g. 0.5")
    value = float(trimmed)
    if not math.isfinite(value):
        raise ValueProblem("is not a finite number", "a decimal number, e.g. 0.5")
    return value


PORTS_EXPECTED = "a port, a list or a range of ports, e.g. 8081, 50100,50101 or 50100-50200"
_PORT_RANGE = re.compile(r"(\d{1,5})(?:\s*-\s*(\d{1,5}))?")


@dataclass(frozen=True)
class Ports:
    """Flink's port specification (``NetUtils.getPortRangeFromString``): ports and ranges
    separated by commas, tried in order; ``0`` is any free port."""

    ranges: tuple[tuple[int, int], ...]

    @property
    def first(self) -> int:
        """The port a client reaches when the specification names several."""
        return self.ranges[0][0]

    def __iter__(self) -> Iterator[int]:
        for low, high in self.ranges:
            yield from range(low, high + 1)

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)


def parse_ports(text: str) -> Ports:
    """``8081``, ``50100,50101``, ``50100-50200`` or a mix, each port 0 to 65535."""
    ranges: list[tuple[int, int]] = []
    parts = text.split(",")
    for part in parts:
        match = _PORT_RANGE.fullmatch(part.strip())
        if not match:
            problem = "is not a port" if len(parts) == 1 else f"has {part.strip()!r}, not a port"
            raise ValueProblem(problem, PORTS_EXPECTED)
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high > 65535:
            raise ValueProblem(f"has {high}, above the highest port 65535", PORTS_EXPECTED)
        if high < low:
            raise ValueProblem(
                f"has the range {low}-{high}, which ends below its start", PORTS_EXPECTED
            )
        ranges.append((low, high))
    return Ports(tuple(ranges))


def human_bytes(size: int) -> str:
    """A size for people: ``512 B``, ``1.5 KiB``, ``3.2 MiB``, ``1.0 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
