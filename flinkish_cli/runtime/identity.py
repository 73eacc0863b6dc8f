"""A query's stable identity: the name that becomes its checkpoint directory.

A query is known by its ``queryName``. The name must be stable across runs (it is how a
resumed job finds each query's checkpoint and how a savepoint matches state to queries),
so flinkish requires one on every streaming query and never invents one.
"""

from __future__ import annotations

import re

from flinkish_cli.errors import JobError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def validate_query_name(name: str | None, index: int) -> str:
    """Return ``name`` if it can identify a query's checkpoint; otherwise explain the fix."""
    if name is None or not str(name).strip():
        raise JobError(
            f"Streaming query #{index} has no name, so flinkish cannot give it a stable "
            "checkpoint.",
            "Name every query with .queryName('...') before .start() (letters, digits, '_', '-', "
            "'.'); the name must stay the same across runs for the job to resume.",
        )
    if not _NAME.match(name) or name in (".", ".."):
        raise JobError(
            f"Streaming query name '{name}' cannot be used as a checkpoint directory.",
            "Use letters, digits, '_', '-' and '.', starting with a letter or digit "
            "(at most 128 characters).",
        )
    return name
