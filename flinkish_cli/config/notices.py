"""Configuration warnings, collected in linear time and shown once each.

A warning is a text and the places it applies to (``conf/flink-conf.yaml:3``, ``-D``). The
same text at many places is one warning that names the first place and counts the others,
so a file repeating a deprecated key 10,000 times gives one line, not 10,000. At most
:data:`MAX_WARNINGS` distinct warnings are shown; one more line counts the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_WARNINGS", "WarningLog", "shown_value"]

#: Distinct warnings shown; the rest are counted in one last line.
MAX_WARNINGS = 100
_SHOWN_PLACES = 3  # further places named after the first one


#: Longest value quoted in a message; longer ones are cut.
MAX_SHOWN = 120


def shown_value(text: str, limit: int | None = MAX_SHOWN) -> str:
    """``text`` for a one-line message: stripped, control characters escaped, cut at
    ``limit`` characters (None: not cut)."""
    text = text.strip()
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


@dataclass
class _Entry:
    places: list[str] = field(default_factory=list)
    count: int = 0


class WarningLog:
    """Warnings in the order they first occurred, each text once (see the module doc)."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def add(self, text: str, where: object = None) -> None:
        """Record ``text`` at ``where`` (anything printable, or None for no place)."""
        entry = self._entries.get(text)
        if entry is None:
            entry = self._entries[text] = _Entry()
        entry.count += 1
        place = "" if where is None else str(where)
        if place and len(entry.places) <= _SHOWN_PLACES and place not in entry.places:
            entry.places.append(place)

    def extend(self, other: WarningLog) -> None:
        """Add every warning of ``other`` (with its places and counts)."""
        for text, theirs in other._entries.items():
            entry = self._entries.get(text)
            if entry is None:
                entry = self._entries[text] = _Entry()
            entry.count += theirs.count
            for place in theirs.places:
                if len(entry.places) <= _SHOWN_PLACES and place not in entry.places:
                    entry.places.append(place)

    def __len__(self) -> int:
        return len(self._entries)

    def messages(self) -> list[str]:
        """One line per distinct warning, at most :data:`MAX_WARNINGS` and a count of the rest."""
        lines = [_render(text, entry) for text, entry in list(self._entries.items())[:MAX_WARNINGS]]
        hidden = len(self._entries) - MAX_WARNINGS
        if hidden > 0:
            lines.append(
                f"... and {hidden:,} more configuration warnings; "
                "'flinkish config' shows every key in effect."
            )
        return lines


def _render(text: str, entry: _Entry) -> str:
    if not entry.places:
        return text if entry.count == 1 else f"{text} ({entry.count:,} times)"
    first, others = entry.places[0], entry.places[1:]
    if entry.count == 1:
        return f"{first}: {text}"
    if not others:
        return f"{first}: {text} ({entry.count:,} times)"
    shown = [_short(first, place) for place in others]
    more = entry.count - 1 - len(shown)
    if more > 0:
        shown.append(f"{more:,} more")
    also = ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]
    return f"{first}: {text} (also at {also})"


def _short(first: str, place: str) -> str:
    """``conf/x.yaml:7`` after ``conf/x.yaml:3`` is just ``line 7``."""
    file, sep, line = first.rpartition(":")
    other_file, other_sep, other_line = place.rpartition(":")
    if sep and other_sep and file == other_file and line.isdigit() and other_line.isdigit():
        return f"line {other_line}"
    return place
