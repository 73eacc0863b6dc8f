#!/usr/bin/env python3
"""Event generator for flinkish's example jobs: orders and bank transactions as JSON lines.

Writes files of JSON lines into a directory that a streaming job reads with Spark's JSON file
source. Every file is written atomically: first to a hidden temporary name in the same
directory (``.tmp-...``, which Spark's file source ignores), flushed and fsync'ed, then renamed
to ``part-<seq>.json``. A running job therefore never sees a half-written file.

Everything is deterministic for a given ``--seed`` and options: file ``seq`` is generated from
its own random stream, so the files of one run of 10 files are the same as two runs of 5. Event
times come from a simulated clock (``--start-time`` plus ``--time-step-ms`` per event), not from
the wall clock, unless ``--start-time now`` is given. ``--rate`` only paces the writing.

Kinds:

* ``orders``: ``order_id, customer_id, order_status, total_price, order_time``.
* ``transactions``: ``transaction_id, account_id, customer_id, amount, event_time, type``.
  Optional late events (``--late-fraction``: shifted back by ``--late-seconds`` to twice
  that) and duplicates (``--duplicate-fraction``: exact copies of an event of the same or the
  previous file) exercise watermarks and de-duplication. Account activity rotates: at any
  moment only a few accounts are active, so per-customer sessions have real gaps.

``--static DIR`` also writes the tables of the enrichment join, ``DIR/customers/customers.json``
and ``DIR/accounts/accounts.json``; account ``acct-NNNN`` belongs to customer
``cust-(NNNN mod --customers)``, the same owner the transactions carry.

Examples::

    python scripts/generate_events.py --kind orders --out data/orders --files 10 --rate 0
    python scripts/generate_events.py --kind transactions --out data/transactions \\
        --static data/static --rate 20 --duration 60 --late-fraction 0.05 \\
        --duplicate-fraction 0.05

The module is importable (no pyspark import): ``generate_orders``, ``generate_transactions``,
``file_events``, ``write_batch``, ``write_static`` and friends are used by tests and benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

Event = dict[str, Any]

DEFAULT_START = datetime(2025, 1, 1, tzinfo=timezone.utc)
ORDER_STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
TRANSACTION_TYPES = ("deposit", "withdrawal", "payment", "transfer")
ACCOUNT_TYPES = ("checking", "savings", "credit")
CURRENCIES = ("EUR", "USD", "GBP", "CHF")
COUNTRIES = ("FR", "DE", "NL", "ES", "IT", "BE", "PT", "IE")
SEGMENTS = ("retail", "business", "private")
FIRST_NAMES = (
    "Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
    "Karin", "Luca", "Maya", "Nils", "Olga", "Pablo", "Quentin", "Rosa", "Sami", "Tove",
)  # fmt: skip
LAST_NAMES = (
    "Aalto", "Berger", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hansen", "Ivanova",
    "Jansen", "Keller", "Larsen", "Moreau", "Novak", "Ortiz", "Petit", "Rossi", "Schmidt",
)  # fmt: skip
# Account activity: ACTIVE_ACCOUNTS consecutive accounts are active; the window moves by
# ACTIVE_SHIFT accounts every ACTIVE_PERIOD events.
ACTIVE_ACCOUNTS = 8
ACTIVE_SHIFT = 4
ACTIVE_PERIOD = 60
PART_NAME = re.compile(r"^part-(\d+)\.json$")


def customer_id(index: int) -> str:
    """The id of customer ``index`` (0-based)."""
    return f"cust-{index:04d}"


def account_id(index: int) -> str:
    """The id of account ``index`` (0-based)."""
    return f"acct-{index:04d}"


def account_owner(index: int, customers: int) -> str:
    """The customer who owns account ``index``."""
    return customer_id(index % customers)


def format_time(moment: datetime) -> str:
    """ISO-8601 in UTC with milliseconds, as Spark's JSON source parses it by default."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_time(text: str) -> datetime:
    """Parse ``format_time``'s output (or any ISO-8601 time; naive times are UTC)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def generate_orders(
    rng: random.Random,
    n: int,
    *,
    start: datetime = DEFAULT_START,
    first_index: int = 0,
    time_step_ms: int = 500,
    customers: int = 20,
) -> list[Event]:
    """``n`` orders; order ``first_index + i`` happens at ``start + (first_index + i) * step``."""
    events = []
    for i in range(first_index, first_index + n):
        events.append(
            {
                "order_id": f"ord-{i:08d}",
                "customer_id": customer_id(rng.randrange(customers)),
                "order_status": rng.choice(ORDER_STATUSES),
                "total_price": round(rng.uniform(5.0, 250.0), 2),
                "order_time": format_time(start + timedelta(milliseconds=i * time_step_ms)),
            }
        )
    return events


def active_account(rng: random.Random, index: int, accounts: int) -> int:
    """The account of event ``index``: one of the accounts active at that moment."""
    first = (index // ACTIVE_PERIOD) * ACTIVE_SHIFT
    return (first + rng.randrange(min(ACTIVE_ACCOUNTS, accounts))) % accounts


def generate_transactions(
    rng: random.Random,
    n: int,
    *,
    start: datetime = DEFAULT_START,
    first_index: int = 0,
    time_step_ms: int = 500,
    jitter_ms: int = 0,
    customers: int = 20,
    accounts: int = 50,
    late_fraction: float = 0.0,
    late_seconds: float = 120.0,
) -> list[Event]:
    """``n`` transactions, numbered from ``first_index``.

    Transaction ``i`` happens at ``start + i * step`` minus up to ``jitter_ms`` (mild disorder).
    With probability ``late_fraction`` an event is late: its time is moved back by
    ``late_seconds`` to ``2 * late_seconds``.
    """
    events = []
    for i in range(first_index, first_index + n):
        offset_ms = i * time_step_ms - (rng.randrange(jitter_ms + 1) if jitter_ms > 0 else 0)
        if late_fraction > 0 and rng.random() < late_fraction:
            offset_ms -= int(late_seconds * 1000 * (1 + rng.random()))
        account = active_account(rng, i, accounts)
        events.append(
            {
                "transaction_id": f"tx-{i:08d}",
                "account_id": account_id(account),
                "customer_id": account_owner(account, customers),
                "amount": round(rng.uniform(1.0, 500.0), 2),
                "event_time": format_time(start + timedelta(milliseconds=offset_ms)),
                "type": rng.choice(TRANSACTION_TYPES),
            }
        )
    return events


def add_duplicates(
    rng: random.Random, events: Sequence[Event], earlier: Sequence[Event], fraction: float
) -> list[Event]:
    """``events`` with exact copies inserted: after each event, with probability ``fraction``,
    a copy of an event already seen (in ``earlier`` or before it in ``events``)."""
    result: list[Event] = []
    seen = list(earlier)
    for event in events:
        result.append(event)
        seen.append(event)
        if fraction > 0 and rng.random() < fraction:
            result.append(dict(rng.choice(seen)))
    return result


def _file_rng(seed: int, kind: str, seq: int, part: str = "") -> random.Random:
    return random.Random(f"{seed}:{kind}:{seq}:{part}")


def file_events(
    kind: str,
    seq: int,
    *,
    seed: int = 0,
    events_per_file: int = 50,
    start: datetime = DEFAULT_START,
    time_step_ms: int = 500,
    jitter_ms: int = 0,
    customers: int = 20,
    accounts: int = 50,
    late_fraction: float = 0.0,
    late_seconds: float = 120.0,
    duplicate_fraction: float = 0.0,
) -> list[Event]:
    """The events of file ``seq`` of a generated stream (deterministic in all arguments).

    Duplicates (transactions only) copy events of this file or of file ``seq - 1``.
    """
    first = seq * events_per_file
    if kind == "orders":
        return generate_orders(
            _file_rng(seed, kind, seq),
            events_per_file,
            start=start,
            first_index=first,
            time_step_ms=time_step_ms,
            customers=customers,
        )
    if kind != "transactions":
        raise ValueError(f"unknown kind {kind!r}: use 'orders' or 'transactions'")

    def originals(number: int) -> list[Event]:
        return generate_transactions(
            _file_rng(seed, kind, number),
            events_per_file,
            start=start,
            first_index=number * events_per_file,
            time_step_ms=time_step_ms,
            jitter_ms=jitter_ms,
            customers=customers,
            accounts=accounts,
            late_fraction=late_fraction,
            late_seconds=late_seconds,
        )

    events = originals(seq)
    if duplicate_fraction <= 0:
        return events
    previous = originals(seq - 1) if seq > 0 else []
    return add_duplicates(_file_rng(seed, kind, seq, "dup"), events, previous, duplicate_fraction)


def next_sequence(out_dir: str | os.PathLike[str]) -> int:
    """One more than the highest ``part-<seq>.json`` in ``out_dir`` (0 when there is none)."""
    highest = -1
    directory = Path(out_dir)
    if directory.is_dir():
        for entry in directory.iterdir():
            match = PART_NAME.match(entry.name)
            if match:
                highest = max(highest, int(match.group(1)))
    return highest + 1


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_lines(path: str | os.PathLike[str], rows: Iterable[Event]) -> Path:
    """Write ``rows`` as JSON lines to ``path`` atomically (hidden temp file, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".tmp-{target.name}-{os.getpid()}"
    try:
        with open(temp, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, separators=(",", ":")))
                handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target


def write_batch(
    out_dir: str | os.PathLike[str], events: Iterable[Event], seq: int | None = None
) -> Path:
    """Write one file of events to ``out_dir/part-<seq>.json`` atomically and return its path.

    ``seq`` defaults to :func:`next_sequence`; an existing file is never replaced.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    number = next_sequence(directory) if seq is None else seq
    target = directory / f"part-{number:06d}.json"
    if target.exists():
        raise FileExistsError(f"{target} exists already; files of a stream are never replaced")
    return write_lines(target, events)


def customers_table(customers: int, seed: int = 0) -> list[Event]:
    """The customers table: ``customer_id, name, country, segment``."""
    rng = random.Random(f"{seed}:customers")
    return [
        {
            "customer_id": customer_id(i),
            "name": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "country": rng.choice(COUNTRIES),
            "segment": rng.choice(SEGMENTS),
        }
        for i in range(customers)
    ]


def accounts_table(accounts: int, customers: int, seed: int = 0) -> list[Event]:
    """The accounts table: ``account_id, customer_id, account_type, currency``."""
    rng = random.Random(f"{seed}:accounts")
    return [
        {
            "account_id": account_id(i),
            "customer_id": account_owner(i, customers),
            "account_type": rng.choice(ACCOUNT_TYPES),
            "currency": rng.choice(CURRENCIES),
        }
        for i in range(accounts)
    ]


def write_static(
    static_dir: str | os.PathLike[str], customers: int, accounts: int, seed: int = 0
) -> tuple[Path, Path]:
    """Write ``customers/customers.json`` and ``accounts/accounts.json`` under ``static_dir``."""
    base = Path(static_dir)
    return (
        write_lines(base / "customers" / "customers.json", customers_table(customers, seed)),
        write_lines(base / "accounts" / "accounts.json", accounts_table(accounts, customers, seed)),
    )


def _start_time(text: str) -> datetime:
    if text == "now":
        return datetime.now(timezone.utc).replace(microsecond=0)
    try:
        return parse_time(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"invalid time {text!r}: use ISO-8601 (e.g. 2025-01-01T00:00:00Z) or 'now'"
        ) from error


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The generator's command line."""
    parser = argparse.ArgumentParser(
        description="Write JSON-lines event files (orders or bank transactions) for "
        "flinkish's example jobs, atomically, at a given rate.",
    )
    parser.add_argument("--kind", choices=("orders", "transactions"), required=True)
    parser.add_argument("--out", required=True, help="directory the job reads")
    parser.add_argument(
        "--rate",
        type=float,
        default=10.0,
        help="events per second of wall-clock time (default 10; 0 writes as fast as possible)",
    )
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--files", type=int, help="stop after writing this many files")
    stop.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.add_argument("--events-per-file", type=_positive, default=50)
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--start-time",
        type=_start_time,
        default=DEFAULT_START,
        help="event time of event 0: ISO-8601 or 'now' (default 2025-01-01T00:00:00Z)",
    )
    parser.add_argument(
        "--time-step-ms",
        type=int,
        default=500,
        help="event time between consecutive events, in ms (default 500)",
    )
    parser.add_argument(
        "--jitter-ms",
        type=int,
        default=0,
        help="transactions: move each event back by up to this many ms (default 0)",
    )
    parser.add_argument("--late-fraction", type=_fraction, default=0.0)
    parser.add_argument(
        "--late-seconds",
        type=float,
        default=120.0,
        help="late events are this many to twice this many seconds late (default 120)",
    )
    parser.add_argument("--duplicate-fraction", type=_fraction, default=0.0)
    parser.add_argument("--customers", type=_positive, default=20)
    parser.add_argument("--accounts", type=_positive, default=50)
    parser.add_argument(
        "--static", help="also write the customers and accounts tables under this directory"
    )
    parser.add_argument(
        "--first-seq",
        type=int,
        help="sequence number of the first file (default: after the last part file in --out)",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing per file")
    args = parser.parse_args(argv)
    if args.rate < 0:
        parser.error("--rate must be >= 0")
    if args.files is not None and args.files < 0:
        parser.error("--files must be >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the generator; returns the exit code."""
    args = parse_args(argv)
    if args.static:
        customers_path, accounts_path = write_static(
            args.static, args.customers, args.accounts, args.seed
        )
        if not args.quiet:
            print(f"wrote {customers_path} and {accounts_path}", flush=True)
    seq = next_sequence(args.out) if args.first_seq is None else args.first_seq
    began = time.monotonic()
    written = 0
    seconds_per_file = args.events_per_file / args.rate if args.rate > 0 else 0.0
    try:
        while True:
            if args.files is not None and written >= args.files:
                break
            if args.duration is not None and time.monotonic() - began >= args.duration:
                break
            events = file_events(
                args.kind,
                seq,
                seed=args.seed,
                events_per_file=args.events_per_file,
                start=args.start_time,
                time_step_ms=args.time_step_ms,
                jitter_ms=args.jitter_ms,
                customers=args.customers,
                accounts=args.accounts,
                late_fraction=args.late_fraction,
                late_seconds=args.late_seconds,
                duplicate_fraction=args.duplicate_fraction,
            )
            path = write_batch(args.out, events, seq)
            written += 1
            seq += 1
            if not args.quiet:
                print(f"wrote {path} ({len(events)} events)", flush=True)
            if seconds_per_file > 0:
                wait = began + written * seconds_per_file - time.monotonic()
                if args.duration is not None:
                    wait = min(wait, began + args.duration - time.monotonic())
                if wait > 0:
                    time.sleep(wait)
    except KeyboardInterrupt:
        pass
    except FileExistsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{written} file(s) written to {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
