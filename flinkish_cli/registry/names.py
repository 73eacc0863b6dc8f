"""Query identities that become directory names: the one rule for what is safe.

A streaming query's identity (its ``queryName``, or the identity flinkish generates for an
unnamed query) names its checkpoint directory and its entry in savepoint manifests and status
files. Names read back from those files are checked with the same rule as names from scripts,
so a damaged or hostile file can never point a path outside the job's directory.
"""

from __future__ import annotations

import re

from flinkish_cli.errors import JobError

#: Letters, digits, '_', '-' and '.', starting with a letter or digit; at most 128 characters.
QUERY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def is_query_name(name: object) -> bool:
    """True when ``name`` can be a query's checkpoint directory."""
    return isinstance(name, str) and bool(QUERY_NAME.match(name)) and name not in (".", "..")


def check_query_name(name: object, where: str) -> str:
    """``name`` if it is a safe query identity; a :class:`JobError` naming ``where`` otherwise."""
    if not is_query_name(name):
        shown = (
            repr(name) if not isinstance(name, str) or len(name) <= 80 else repr(name[:77] + "...")
        )
        raise JobError(
            f"{where} names a query {shown}, which cannot be a checkpoint directory.",
            "Query identities are letters, digits, '_', '-' and '.', starting with a letter or "
            "digit (at most 128 characters); the file may be damaged or not flinkish's.",
        )
    return name  # type: ignore[return-value]
