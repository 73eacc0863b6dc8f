"""Ground truth for the jobs' tests, computed in plain Python from the generated events.

Streaming semantics are modelled per micro-batch: ``batches[k]`` holds the events of the
k-th file, which the tests make the k-th micro-batch. The watermark in effect during batch
``k`` is the highest event time of the batches before ``k`` minus the delay. Spark filters
late rows against the watermark of batch ``k`` or of batch ``k - 1`` depending on whether a
no-data batch ran in between (``lag`` 0 or 1); the tests compute both and require their
data to make the two agree, so the expected output does not depend on that timing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from generate_events import parse_time

Event = dict[str, Any]


def ms(text: str) -> int:
    """Epoch milliseconds of an ISO-8601 time."""
    return round(parse_time(text).timestamp() * 1000)


def cents(value: float | Decimal) -> Decimal:
    """An amount as an exact decimal with two places."""
    return Decimal(str(value)).quantize(Decimal("0.01"))


def watermarks(batches: Sequence[Sequence[Event]], field: str, delay_ms: int) -> list[int | None]:
    """The watermark in effect during each batch (``None`` before any event)."""
    result: list[int | None] = []
    highest: int | None = None
    for batch in batches:
        result.append(None if highest is None else highest - delay_ms)
        for event in batch:
            time = ms(event[field])
            highest = time if highest is None else max(highest, time)
    return result


def late_threshold(marks: Sequence[int | None], k: int, lag: int) -> int | None:
    """The watermark that filters late rows of batch ``k``."""
    return marks[k - lag] if k - lag >= 0 else None


def window_starts(time_ms: int, size_ms: int, slide_ms: int) -> list[int]:
    """Starts of the windows of ``size_ms`` every ``slide_ms`` that contain ``time_ms``."""
    last = time_ms - time_ms % slide_ms
    return [s for s in range(last - size_ms + slide_ms, last + 1, slide_ms) if s <= time_ms]


def windows(
    batches: Sequence[Sequence[Event]],
    size_ms: int,
    slide_ms: int,
    delay_ms: int,
    lag: int,
) -> dict[tuple[str, int], tuple[int, Decimal]]:
    """Per (account, window start): (count, sum) of the windows a streaming query emits.

    A row is dropped from a window whose end is at or before the late-row watermark of its
    batch; a window is emitted when the watermark of the last batch has passed its end.
    """
    marks = watermarks(batches, "event_time", delay_ms)
    acc: dict[tuple[str, int], tuple[int, Decimal]] = {}
    for k, batch in enumerate(batches):
        threshold = late_threshold(marks, k, lag)
        for event in batch:
            for start in window_starts(ms(event["event_time"]), size_ms, slide_ms):
                if threshold is not None and start + size_ms <= threshold:
                    continue
                key = (event["account_id"], start)
                count, total = acc.get(key, (0, Decimal("0.00")))
                acc[key] = (count + 1, total + cents(event["amount"]))
    final = marks[-1]
    assert final is not None
    highest = max(ms(event["event_time"]) for batch in batches for event in batch)
    assert highest - delay_ms == final, "the last batch must not move the watermark"
    return {key: value for key, value in acc.items() if key[1] + size_ms <= final}


def all_windows(
    events: Iterable[Event], size_ms: int, slide_ms: int
) -> dict[tuple[str, int], tuple[int, Decimal]]:
    """Per (account, window start): (count, sum) over all events (batch semantics)."""
    acc: dict[tuple[str, int], tuple[int, Decimal]] = {}
    for event in events:
        for start in window_starts(ms(event["event_time"]), size_ms, slide_ms):
            count, total = acc.get((event["account_id"], start), (0, Decimal("0.00")))
            acc[(event["account_id"], start)] = (count + 1, total + cents(event["amount"]))
    return acc


def sessions(
    events: Iterable[Event], gap_ms: int
) -> dict[tuple[str, int], tuple[int, int, Decimal]]:
    """Per (customer, session start): (session end, count, sum), batch semantics.

    A session ends ``gap_ms`` after its last event; the test data must have no two events of
    a customer exactly ``gap_ms`` apart (the one case where the merge rule would matter).
    """
    per_customer: dict[str, list[tuple[int, Decimal]]] = defaultdict(list)
    for event in events:
        per_customer[event["customer_id"]].append((ms(event["event_time"]), cents(event["amount"])))
    result: dict[tuple[str, int], tuple[int, int, Decimal]] = {}
    for customer, items in per_customer.items():
        items.sort()
        start, end, count, total = items[0][0], items[0][0] + gap_ms, 0, Decimal("0.00")
        for time, amount in items:
            assert time != end, "test data has two events exactly one gap apart"
            if time > end:
                result[(customer, start)] = (end, count, total)
                start, count, total = time, 0, Decimal("0.00")
            end = max(end, time + gap_ms)
            count += 1
            total += amount
        result[(customer, start)] = (end, count, total)
    return result


def dedup(batches: Sequence[Sequence[Event]], delay_ms: int, lag: int) -> list[Event]:
    """The rows ``dropDuplicatesWithinWatermark(transaction_id)`` emits, batch by batch.

    A row is late (dropped) when its event time is at or before the late-row watermark; a
    row whose id is in the state is a duplicate. An id stays in the state until the eviction
    watermark reaches its first event time plus the delay.
    """
    marks = watermarks(batches, "event_time", delay_ms)
    state: dict[str, int] = {}
    emitted: list[Event] = []
    for k, batch in enumerate(batches):
        threshold = late_threshold(marks, k, lag)
        for event in batch:
            time = ms(event["event_time"])
            if threshold is not None and time <= threshold:
                continue
            if event["transaction_id"] in state:
                continue
            state[event["transaction_id"]] = time + delay_ms
            emitted.append(event)
        evict = marks[k]
        if evict is not None:
            state = {key: expiry for key, expiry in state.items() if expiry > evict}
    return emitted
