"""Test streams of transactions, built with the generator's functions."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generate_events import (
    DEFAULT_START,
    add_duplicates,
    format_time,
    generate_transactions,
    parse_time,
)

Event = dict[str, Any]


def transaction_files(
    files: int,
    *,
    seed: int,
    per_file: int = 40,
    jitter_ms: int = 1500,
    late_from: int | None = None,
    late_fraction: float = 0.2,
    late_seconds: float = 300.0,
    duplicate_fraction: float = 0.0,
) -> list[list[Event]]:
    """``files`` files of transactions; files from ``late_from`` on have late events.

    The first files have none, so that no row's fate depends on how Spark lags the
    watermark of its first batches. Duplicates copy events of the same or the previous file.
    """
    batches: list[list[Event]] = []
    for seq in range(files):
        rng = random.Random(f"test:{seed}:{seq}")
        late = late_fraction if late_from is not None and seq >= late_from else 0.0
        events = generate_transactions(
            rng,
            per_file,
            first_index=seq * per_file,
            jitter_ms=jitter_ms,
            late_fraction=late,
            late_seconds=late_seconds,
        )
        previous = batches[-1] if batches else []
        batches.append(add_duplicates(rng, events, previous, duplicate_fraction))
    return batches


def flush_files(batches: list[list[Event]], minutes: int = 10) -> list[list[Event]]:
    """Two files of one event each, ``minutes`` after the last event, at the same time.

    The first moves the watermark past every window of the real events; the second runs a
    batch with that watermark (so those windows are written) without moving it again.
    """
    last = max(parse_time(e["event_time"]) for batch in batches for e in batch)
    when = format_time(max(last, DEFAULT_START) + timedelta(minutes=minutes))
    return [
        [
            {
                "transaction_id": f"flush-{n}",
                "account_id": "acct-flush",
                "customer_id": "cust-flush",
                "amount": 0.01,
                "event_time": when,
                "type": "deposit",
            }
        ]
        for n in (1, 2)
    ]
