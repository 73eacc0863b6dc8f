"""Stopping a streaming query between two micro-batches (a graceful stop: ``stop``,
``cancel --withSavepoint``, a rescale, an upgrade), and what a query's handle says of it: is it
active, which batch it completed last.
"""

from __future__ import annotations

import time
from typing import Any

#: How long a graceful stop waits for a running micro-batch before stopping it anyway.
GRACEFUL_STOP_TIMEOUT = 120.0


def is_active(query: Any) -> bool:
    """Whether the query runs (False when the session or the JVM is going away)."""
    try:
        return bool(query.isActive)
    except Exception:
        return False


def stop_between_batches(
    query: Any, timeout: float = GRACEFUL_STOP_TIMEOUT, poll: float = 0.02
) -> None:
    """Stop ``query`` between two batches: while it waits for its next trigger, or the moment
    the batch it was running has ended.

    Spark has no "stop after this batch"; flinkish watches the query and stops it as soon as
    no trigger is active. A query behind its input is never seen so: Spark starts its next
    batch the instant the last one commits. So the query is also stopped as soon as its last
    progress names a newer batch than when the stop began: the batch that was running has
    committed and the next one has only begun. Spark aborts a batch stopped that early (or
    begun in the instant between a check and the stop) and it is replayed from the offset log
    on resume, so no data is lost or duplicated. After ``timeout`` the query is stopped
    regardless (a batch that runs that long is aborted wherever it is).
    """
    deadline = time.monotonic() + timeout
    running = last_batch_id(query)
    while query.isActive and time.monotonic() < deadline:
        if not query.status.get("isTriggerActive") or last_batch_id(query) != running:
            break
        time.sleep(poll)
    query.stop()


def last_batch_id(query: Any) -> int | None:
    """The id of the query's last completed batch (its last progress), or None."""
    try:
        progress = query.lastProgress
    except Exception:
        return None
    if progress is None:
        return None
    batch = getattr(progress, "batchId", None)
    if batch is None and isinstance(progress, dict):
        batch = progress.get("batchId")
    return batch if isinstance(batch, int) else None
