"""The event generator: determinism, atomic files, late and duplicate events, static tables."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import generate_events as gen
import pytest

SCRIPT = Path(gen.__file__).resolve()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def read_dir(path: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.name: [json.loads(line) for line in p.read_text().splitlines()]
        for p in sorted(path.iterdir())
    }


def test_cli_is_deterministic_and_resumable(tmp_path: Path) -> None:
    common = [
        *("--kind", "transactions", "--rate", "0", "--seed", "5", "--events-per-file", "20"),
        *("--late-fraction", "0.1", "--duplicate-fraction", "0.1", "--jitter-ms", "800"),
    ]
    one = run_cli(*common, "--out", str(tmp_path / "a"), "--files", "6")
    assert one.returncode == 0, one.stderr
    assert "6 file(s) written" in one.stdout
    for _ in range(2):  # the same stream, in two runs of three files
        two = run_cli(*common, "--out", str(tmp_path / "b"), "--files", "3", "--quiet")
        assert two.returncode == 0 and two.stdout == ""

    first, second = read_dir(tmp_path / "a"), read_dir(tmp_path / "b")
    assert list(first) == [f"part-{n:06d}.json" for n in range(6)]
    assert first == second
    other = run_cli(*common[:-1], "0", "--seed", "6", "--out", str(tmp_path / "c"), "--files", "1")
    assert other.returncode == 0
    assert read_dir(tmp_path / "c")["part-000000.json"] != first["part-000000.json"]


def test_orders_fields() -> None:
    events = gen.file_events("orders", 2, seed=1, events_per_file=100, time_step_ms=1000)
    assert [e["order_id"] for e in events] == [f"ord-{i:08d}" for i in range(200, 300)]
    assert {e["order_status"] for e in events} <= set(gen.ORDER_STATUSES)
    assert all(5 <= e["total_price"] <= 250 for e in events)
    assert all(round(e["total_price"], 2) == e["total_price"] for e in events)
    times = [gen.parse_time(e["order_time"]) for e in events]
    assert times[0] == gen.DEFAULT_START + timedelta(seconds=200)
    assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(times))
    assert 20 < sum(e["total_price"] > 100 for e in events) < 80


def test_late_and_duplicate_transactions() -> None:
    events = [
        e
        for seq in range(20)
        for e in gen.file_events(
            "transactions",
            seq,
            seed=3,
            events_per_file=50,
            jitter_ms=1000,
            late_fraction=0.1,
            late_seconds=60,
            duplicate_fraction=0.1,
        )
    ]
    ids = Counter(e["transaction_id"] for e in events)
    originals = {e["transaction_id"]: e for e in events}
    assert len(ids) == 1000
    duplicates = sum(n - 1 for n in ids.values())
    assert 60 < duplicates < 140
    late = 0
    for event_id, event in originals.items():
        nominal = gen.DEFAULT_START + timedelta(milliseconds=500 * int(event_id[3:]))
        behind = (nominal - gen.parse_time(event["event_time"])).total_seconds()
        assert 0 <= behind <= 1 or 60 <= behind <= 121, behind
        late += behind >= 60
    assert 60 < late < 140
    copies = [e for e in events if ids[e["transaction_id"]] > 1]
    assert all(e == originals[e["transaction_id"]] for e in copies), "copies are exact"


def test_static_tables_match_transactions(tmp_path: Path) -> None:
    result = run_cli(
        *("--kind", "transactions", "--out", str(tmp_path / "tx")),
        *("--static", str(tmp_path / "static"), "--customers", "7", "--accounts", "15"),
        *("--files", "2", "--rate", "0"),
    )
    assert result.returncode == 0, result.stderr
    customers = read_dir(tmp_path / "static" / "customers")["customers.json"]
    accounts = read_dir(tmp_path / "static" / "accounts")["accounts.json"]
    assert [c["customer_id"] for c in customers] == [f"cust-{i:04d}" for i in range(7)]
    owner = {a["account_id"]: a["customer_id"] for a in accounts}
    assert len(owner) == 15 and set(owner.values()) == {c["customer_id"] for c in customers}
    for events in read_dir(tmp_path / "tx").values():
        assert all(owner[e["account_id"]] == e["customer_id"] for e in events)


def test_write_batch_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    assert gen.write_batch(out, [{"a": 1}]).name == "part-000000.json"
    assert gen.write_batch(out, [{"a": 2}]).name == "part-000001.json"
    with pytest.raises(FileExistsError):
        gen.write_batch(out, [{"a": 3}], seq=1)

    def broken_rename(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError, match="disk full"):
        gen.write_batch(out, [{"a": 4}])
    assert sorted(p.name for p in out.iterdir()) == ["part-000000.json", "part-000001.json"]
    assert (out / "part-000001.json").read_text() == '{"a":2}\n'


def test_rate_and_duration(tmp_path: Path) -> None:
    began = time.monotonic()
    result = run_cli(
        *("--kind", "orders", "--out", str(tmp_path), "--rate", "100"),
        *("--events-per-file", "10", "--duration", "1"),
    )
    elapsed = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    files = len(list(tmp_path.glob("part-*.json")))
    assert 3 <= files <= 11, files  # 10 files a second, give or take a slow machine
    assert elapsed < 15


def test_bad_arguments(tmp_path: Path) -> None:
    result = run_cli("--kind", "orders", "--out", str(tmp_path), "--late-fraction", "2")
    assert result.returncode == 2 and "fraction" in result.stderr
    result = run_cli("--kind", "orders", "--out", str(tmp_path), "--files", "1", "--duration", "1")
    assert result.returncode == 2


def test_no_pyspark_import() -> None:
    code = "import sys, generate_events; sys.exit('pyspark' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=SCRIPT.parent, capture_output=True, timeout=60
    )
    assert result.returncode == 0
