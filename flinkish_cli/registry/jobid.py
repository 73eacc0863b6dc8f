"""JobIDs: 32 lower-case hex characters, as Flink prints them.

A JobID becomes a directory name, so anything read from a user is validated here before it
reaches a path.
"""

from __future__ import annotations

import re
import uuid

from flinkish_cli.errors import JobError

_JOB_ID = re.compile(r"^[0-9a-f]{32}$")


def new_job_id() -> str:
    """A fresh random JobID."""
    return uuid.uuid4().hex


def is_job_id(text: str) -> bool:
    """True when ``text`` is a well-formed JobID (lower-case or not)."""
    return bool(_JOB_ID.match(text.strip().lower()))


def parse_job_id(text: str) -> str:
    """Validate a JobID given by a user and return it in canonical (lower-case) form."""
    candidate = text.strip().lower()
    if not _JOB_ID.match(candidate):
        shown = text if len(text) <= 64 else text[:61] + "..."
        raise JobError(
            f"'{shown}' is not a valid JobID.",
            "A JobID is 32 hexadecimal characters, as printed by 'flinkish run' and "
            "'flinkish list'.",
        )
    return candidate
