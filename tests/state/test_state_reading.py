"""``flinkish state`` from the user's side, on real Spark: one job with a query per kind of
stateful operator (a count, a deduplication, a stream-stream join, a session window and
``transformWithStateInPandas``, in the idioms of Spark's documentation), started once for
the module, read while it runs (by JobID), then through a savepoint of it.

Every store is listed with its schemas and rows, shown biggest keys first, filtered by key
and exported; the exported rows equal what the job wrote to its sinks. Bad input is one
message and exit status 1, with nothing read or written; the running job's checkpoint is the
same file for file before and after it was read. The REST routes and the dashboard's State
tab read the same job through ``flinkish web``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from tests.fixtures.flinkish_env import (
    JOBS,
    FlinkishEnv,
    _kill_leftover_jobs,
    job_id_of,
    read_json_dir,
    write_events,
)

pytestmark = pytest.mark.spark

STATE_JOB = str(JOBS / "state_kinds.py")
#: Events per key: skewed, so the biggest keys are known.
EVENTS = {"k0": 12, "k1": 8, "k2": 5, "k3": 3, "k4": 2, "k5": 1}
#: Clicks per key (the join's right side).
CLICKS = {"k0": 3, "k1": 1, "k2": 2, "k4": 1}
#: Events written twice (the same id and time): the deduplication drops them. They are the
#: first three, all of key k0.
DUPLICATED = 3
#: What the count (and transformWithState's running count) holds per key.
COUNTS = {**EVENTS, "k0": EVENTS["k0"] + DUPLICATED}
QUERIES = ("counts", "dedup", "joined", "sessions", "totals")
#: ``?key=`` naming a key by its fields, as a URL's query has it.
K2 = quote('{"key": "k2"}')


@dataclass
class StateJob:
    env: FlinkishEnv
    job_id: str
    output: Path
    savepoint: str

    def state(self, *args: str, check: bool | None = True) -> Any:
        return self.env.run("state", *args, check=check)

    def state_json(self, *args: str) -> Any:
        return json.loads(self.state(*args, "--output", "json").stdout)


def _inputs(directory: Path) -> None:
    events = []
    for key, count in EVENTS.items():
        for n in range(count):
            # sessions of three events, 2 minutes apart, then a gap of 10 minutes
            minute = (n // 3) * 14 + (n % 3) * 2
            events.append({"key": key, "id": len(events), "ts": f"2024-01-01T12:{minute:02d}:00Z"})
    events += events[:DUPLICATED]
    write_events(directory / "events", events)
    clicks = [
        {"key": key, "click": 1000 + n, "ts": f"2024-01-01T12:{58 - n:02d}:00Z"}
        for key, count in CLICKS.items()
        for n in range(count)
    ]
    write_events(directory / "clicks", clicks)


def _latest(directory: Path, *key_fields: str) -> dict[tuple, dict]:
    """A foreachBatch sink in update mode: the last row written per key."""
    latest: dict[tuple, dict] = {}
    batches = sorted(directory.glob("batch=*"), key=lambda p: int(p.name.split("=")[1]))
    for batch in batches:
        for row in read_json_dir(batch):
            latest[tuple(json.dumps(row[f], sort_keys=True) for f in key_fields)] = row
    return latest


def _sinks_complete(output: Path) -> bool:
    joined = sum(COUNTS[k] * c for k, c in CLICKS.items())
    return (
        len(_latest(output / "counts", "key")) == len(EVENTS)
        and len(_latest(output / "totals", "key")) == len(EVENTS)
        and len(read_json_dir(output / "dedup")) == sum(EVENTS.values())
        and len(read_json_dir(output / "joined")) == joined
        and sum(r["count"] for r in _latest(output / "sessions", "session_window", "key").values())
        == sum(EVENTS.values()) + DUPLICATED
    )


def _listing(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory`` (the job's own status files aside): size, mtime."""
    found = {}
    for top, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if d != "_flinkish"]
        for name in names:
            stat = os.stat(os.path.join(top, name))
            found[os.path.relpath(os.path.join(top, name), directory)] = (
                stat.st_size,
                stat.st_mtime_ns,
            )
    return found


def _wait(condition: Any, what: str, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StateJob]:
    root = tmp_path_factory.mktemp("state")
    env = FlinkishEnv.under(root, conf=False)
    env.write_conf(
        {
            "state.backend.type": "rocksdb",  # transformWithState needs it
            # no state store maintenance while the test compares listings of the checkpoint
            "spark.sql.streaming.stateStore.maintenanceInterval": "1h",
            # Spark gives transformWithState's Python worker on the driver 10 s to start: on
            # a machine loaded past its cores it may not, and the job restarts then
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 3,
            "restart-strategy.fixed-delay.delay": "1 s",
            # every input file is there before the job starts: its first batch reads them all
            # and the next commits its watermark; then it idles through the whole module,
            # each trigger of its five queries listing both inputs: idle, it took 0.037
            # CPU-s a second at 2 s, 0.052 and 0.059 at the 500 ms of the tests' configuration
            "execution.checkpointing.interval": "2 s",
        }
    )
    _inputs(root / "input")
    output = root / "output"
    submitted = env.run(
        "run", "-d", STATE_JOB, "--input", str(root / "input"), "--output", str(output), check=True
    )
    job_id = job_id_of(submitted.stdout)
    try:

        def written() -> bool:
            state = env.polled(job_id)  # as `list -a` shows it, read in this process
            assert state["state"] in ("CREATED", "RUNNING", "RESTARTING"), state
            return _sinks_complete(output)

        _wait(written, "the job's sinks")
        # idle: every query has seen its input and its last (no-data) batch is committed
        checkpoint = env.checkpoints / job_id
        previous: dict[str, Any] = {}

        def settled() -> bool:
            nonlocal previous
            now = _listing(checkpoint)
            status = json.loads((checkpoint / "_flinkish" / "status.json").read_text())
            idle = all(q.get("idle") for q in status["queries"].values())
            same, previous = now == previous, now
            return idle and same

        _wait(settled, "the job to be idle")
        savepoint_dir = root / "savepoints"
        taken = env.run("savepoint", job_id, str(savepoint_dir), check=True).stdout
        path = taken.split("Savepoint completed. Path: ", 1)[1].splitlines()[0].strip()
        yield StateJob(env, job_id, output, path)
    finally:
        env.run("cancel", job_id, check=None)
        _kill_leftover_jobs(env)


# -- a running job, by its JobID -------------------------------------------------------------
def test_a_running_jobs_state_is_read_from_a_copy_and_its_checkpoint_is_untouched(
    job: StateJob,
) -> None:
    checkpoint = job.env.checkpoints / job.job_id
    before = _listing(checkpoint)
    shown = job.state_json("show", job.job_id, "--key", "k0", "--verbose")
    assert _listing(checkpoint) == before, "reading the state changed the job's checkpoint"
    by_store = {(s["query"], s["store"]): s for s in shown["stores"]}
    counts = by_store[("counts", "default")]["rows"]
    assert [(r["key"], r["value"]) for r in counts] == [({"key": "k0"}, {"count": 15})]
    assert by_store[("dedup", "default")]["rows"] == []  # an id and a time: k0 is neither
    left, right = by_store[("joined", "left")], by_store[("joined", "right")]
    assert left["total"] == EVENTS["k0"] + DUPLICATED  # the join buffers duplicates too
    assert right["total"] == CLICKS["k0"]
    assert {r["value"]["click"] for r in right["rows"]} == {1000, 1001, 1002}
    assert by_store[("totals", "count")]["rows"][0]["value"] == {"count": 15}
    sessions = by_store[("sessions", "default")]["rows"]
    assert sum(r["value"]["count"] for r in sessions) == EVENTS["k0"] + DUPLICATED


# -- a savepoint -----------------------------------------------------------------------------
def test_ls_lists_every_operator_with_its_stores_schemas_rows_and_bytes(job: StateJob) -> None:
    before = _listing(Path(job.savepoint))
    listing = job.state_json("ls", job.savepoint)
    assert _listing(Path(job.savepoint)) == before, "a savepoint is read in place, never written"
    assert listing["kind"] == "savepoint" and listing["job-id"] == job.job_id
    queries = {q["name"]: q for q in listing["queries"]}
    assert set(queries) == set(QUERIES)
    stores = {
        (q, s["name"]): (o, s)
        for q in QUERIES
        for o in queries[q]["operators"]
        for s in o["stores"]
    }
    kinds = {q: [o["kind"] for o in queries[q]["operators"]] for q in QUERIES}
    assert kinds == {
        "counts": ["aggregation"],
        "dedup": ["deduplication"],
        "joined": ["stream-stream join"],
        "sessions": ["session window"],
        "totals": ["transformWithState"],
    }
    expected = {
        ("counts", "default"): ("struct<key:string>", "struct<count:bigint>", len(EVENTS)),
        ("dedup", "default"): ("struct<id:bigint,ts:timestamp>", None, sum(EVENTS.values())),
        ("joined", "left"): ("struct<field0:string>", None, sum(EVENTS.values()) + DUPLICATED),
        ("joined", "right"): ("struct<field0:string>", None, sum(CLICKS.values())),
        ("sessions", "default"): ("struct<key:string,sessionStartTime:timestamp>", None, None),
        ("totals", "count"): ("struct<key:string>", "struct<count:bigint>", len(EVENTS)),
        ("totals", "batches"): (
            "struct<key:string>",
            "struct<list_element:struct<rows:bigint>>",
            None,
        ),
    }
    assert set(stores) == set(expected)
    for name, (key, value, rows) in expected.items():
        operator, store = stores[name]
        assert store["key-schema"] == key, name
        assert value is None or store["value-schema"] == value, (name, store["value-schema"])
        assert rows is None or store["rows"] == rows, (name, store["rows"])
        assert operator["partitions"] == 2 and operator["bytes"] > 0, name
        assert store["key-schema-json"]["type"] == "struct", name
    assert stores[("joined", "left")][0]["spark-stores"] == [
        "left-keyToNumValues",
        "left-keyWithIndexToValue",
        "right-keyToNumValues",
        "right-keyWithIndexToValue",
    ]
    assert stores[("totals", "batches")][1]["variable-type"] == "ListState"
    assert stores[("totals", "batches")][1]["rows"] == len(EVENTS)  # one batch: one element
    text = job.state("ls", job.savepoint, "--query", "joined").stdout  # plain text off a terminal
    assert "stream-stream join" in text and "struct<field0:string>" in text
    assert "Starting Spark" not in text


#: ``flinkish state ARGS`` with every store counted and ordered by Spark, as a store too big to
#: collect is (the job's stores are small enough to be collected and ordered in Python).
SPARK_ORDERED = (
    "import sys; from flinkish_cli.state import reader; reader.COLLECT_LIMIT = 0; "
    "from flinkish_cli.cli.main import main; sys.argv[0] = 'flinkish'; main()"
)


def test_show_gives_each_stores_rows_biggest_keys_first(job: StateJob) -> None:
    shown = job.state_json("show", job.savepoint, "--limit", "4")
    by_store = {(s["query"], s["store"]): s for s in shown["stores"]}
    # Spark's path (a store of more than COLLECT_LIMIT rows: counted and ordered by Spark) gives
    # the same rows, on the join's two stores (keys of several rows, ties in size among them)
    args = ("state", "show", job.savepoint, "--limit", "4", "--query", "joined", "-o", "json")
    ordered_by_spark = subprocess.run(
        [sys.executable, "-c", SPARK_ORDERED, *args],
        env=job.env.environ(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    joined = [store for store in shown["stores"] if store["query"] == "joined"]
    assert len(joined) == 2 and json.loads(ordered_by_spark.stdout)["stores"] == joined
    for name, store in by_store.items():
        sizes = [(r["key-bytes"], r["key-rows"]) for r in store["rows"]]
        assert sizes == sorted(sizes, reverse=True), name
        assert len(store["rows"]) == min(4, store["total"]), name
    left = by_store[("joined", "left")]["rows"]
    assert {r["key"]["field0"] for r in left} == {"k0"}  # k0 buffers the most rows
    assert left[0]["key-rows"] == EVENTS["k0"] + DUPLICATED
    counts = by_store[("counts", "default")]["rows"]
    assert counts[0] == {
        "key": {"key": "k0"},
        "value": {"count": 15},
        "partition": counts[0]["partition"],
        "key-rows": 1,
        "key-bytes": len('{"key":"k0"}{"count":15}'),
    }
    assert by_store[("dedup", "default")]["rows"][0]["value"] is None  # no value to show


def test_export_writes_the_rows_the_job_wrote_to_its_sinks(job: StateJob, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    target = tmp_path / "export"
    result = job.state_json("export", job.savepoint, str(target))
    written = {(s["query"], s["store"]): s for s in result["stores"]}

    def table(query: str, store: str) -> list[dict]:
        rows = pq.read_table(target / query / "0" / store).to_pylist()
        assert written[(query, store)]["rows"] == len(rows)
        return rows

    counts = {r["key"]["key"]: r["value"]["count"] for r in table("counts", "default")}
    sink = {json.loads(k[0]): r["count"] for k, r in _latest(job.output / "counts", "key").items()}
    assert counts == sink == COUNTS
    totals = {r["key"]["key"]: r["value"]["count"] for r in table("totals", "count")}
    assert totals == {
        json.loads(k[0]): r["count"] for k, r in _latest(job.output / "totals", "key").items()
    }
    dedup = {(r["key"]["id"], r["key"]["ts"]) for r in table("dedup", "default")}
    assert len(dedup) == len(read_json_dir(job.output / "dedup")) == sum(EVENTS.values())
    left = Counter(r["key"]["field0"] for r in table("joined", "left"))
    right = Counter(r["key"]["field0"] for r in table("joined", "right"))
    assert sum(left[k] * right[k] for k in right) == len(read_json_dir(job.output / "joined"))
    sessions = {
        (r["value"]["key"], r["value"]["session_window"]["start"]): r["value"]["count"]
        for r in table("sessions", "default")
    }
    sink_sessions = _latest(job.output / "sessions", "session_window", "key").values()
    assert sorted(sessions.values()) == sorted(r["count"] for r in sink_sessions)
    assert len(table("totals", "batches")) == len(EVENTS)
    index = json.loads((target / "_state.json").read_text())
    assert index["format"] == "parquet" and len(index["stores"]) == len(written) == 7

    refused = job.state("export", job.savepoint, str(target), "--verbose", check=False)
    assert refused.returncode == 1 and "is not empty" in refused.stderr
    assert "Starting Spark" not in refused.stderr and "Traceback" in refused.stderr  # verbose


def test_export_to_s3_as_json_lines(job: StateJob, s3_server: Any, s3_bucket: str) -> None:
    job.env.write_conf(
        {
            "state.backend.type": "rocksdb",
            "spark.sql.streaming.stateStore.maintenanceInterval": "1h",
            **s3_server.flink_conf(),
        }
    )
    target = f"{s3_bucket}/notebook"
    result = job.state_json(
        "export", job.savepoint, target, "--format", "jsonl", "--query", "counts"
    )
    assert [s["path"] for s in result["stores"]] == [f"{target}/counts/0/default"]
    client = s3_server.client()
    bucket = s3_bucket.removeprefix("s3://")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert "notebook/_state.json" in keys
    rows = []
    for key in keys:
        if key.startswith("notebook/counts/0/default/part-"):
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
            rows += [json.loads(line) for line in body.splitlines() if line]
    assert {r["key"]["key"]: r["value"]["count"] for r in rows} == COUNTS


# -- bad input: one message, exit 1, nothing read or written, no Spark -----------------------
def _refused(job: StateJob, *args: str) -> str:
    result = job.state(*args, check=False)
    assert result.returncode == 1, result
    assert result.stderr.startswith("ERROR: ") and "Traceback" not in result.stderr
    assert "Starting Spark" not in result.stderr and result.stdout == ""
    return result.stderr.splitlines()[0]


def test_bad_input_is_refused_before_spark_starts(job: StateJob, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("not state")
    assert "is neither a savepoint nor a checkpoint" in _refused(job, "ls", str(tmp_path / "notes"))
    assert "does not exist" in _refused(job, "show", str(tmp_path / "nowhere"))
    line = _refused(job, "show", job.savepoint, "--query", "joined", "--operator", "7")
    assert line == (
        f"ERROR: Query 'joined' of {job.savepoint} has no stateful operator 7 (its operators: 0)."
    )
    assert "has no query 'nope'" in _refused(
        job, "export", job.savepoint, str(tmp_path / "x"), "--query", "nope"
    )
    assert not (tmp_path / "x").exists()

    damaged = tmp_path / "damaged"
    shutil.copytree(job.savepoint, damaged)
    victim = next(p for p in sorted((damaged / "counts" / "state").rglob("*.zip")))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    line = _refused(job, "show", str(damaged), "--query", "counts")
    assert "is damaged" in line and "does not match its checksum" in line

    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(job.env.checkpoints / job.job_id, checkpoint)
    victim = next(p for p in sorted((checkpoint / "totals" / "state").rglob("*.zip")))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    line = _refused(job, "ls", str(checkpoint))
    assert "The checkpoint of query 'totals'" in line and "is damaged" in line


def test_a_state_file_spark_cannot_read_is_one_line(job: StateJob, tmp_path: Path) -> None:
    """A state file damaged behind the manifest's back (its checksums rewritten): Spark's
    failure, in one line."""
    import hashlib

    damaged = tmp_path / "damaged"
    shutil.copytree(job.savepoint, damaged)
    victim = next(p for p in sorted((damaged / "counts" / "state").rglob("*.zip")))
    victim.write_bytes(b"not a zip" * 10)
    crc = victim.with_name(f".{victim.name}.crc")
    crc.unlink()
    manifest = json.loads((damaged / "_metadata").read_text())
    relative = str(victim.relative_to(damaged))
    manifest["files"] = [f for f in manifest["files"] if f["path"] != str(crc.relative_to(damaged))]
    for entry in manifest["files"]:
        if entry["path"] == relative:
            entry["size"] = victim.stat().st_size
            entry["sha256"] = hashlib.sha256(victim.read_bytes()).hexdigest()
    (damaged / "_metadata").write_text(json.dumps(manifest))
    result = job.state("show", str(damaged), "--query", "counts", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("ERROR: Spark could not read the state of query 'counts'")
    assert len(lines) == 2 and lines[1].startswith("A state file may be damaged")


# -- flinkish web: the REST routes and the dashboard's State tab -----------------------------
@pytest.fixture(scope="module")
def web(job: StateJob) -> Iterator[Any]:
    from tests.fixtures.web_server import running_web

    with running_web(job.env, "-D", "web.refresh-interval=1 s") as server:
        yield server


def test_the_rest_api_reads_a_jobs_state(job: StateJob, web: Any) -> None:
    checkpoint = job.env.checkpoints / job.job_id
    before = _listing(checkpoint)
    listing = web.get(f"/flinkish/jobs/{job.job_id}/state")
    assert listing.status == 200, listing.body
    document = listing.json()
    assert document["kind"] == "job" and [q["name"] for q in document["queries"]] == sorted(QUERIES)
    # the key as a JSON object of key fields (the dashboard asks the same below)
    sessions = web.get(f"/flinkish/jobs/{job.job_id}/state/sessions/0?limit=10&key={K2}").json()
    (store,) = sessions["stores"]
    assert store["store"] == "default" and store["total"] == 2  # k2: 3 events, then 2
    assert [(r["key"]["key"], r["value"]["count"]) for r in store["rows"]] == [
        ("k2", 3),
        ("k2", 2),
    ]
    assert web.get(f"/flinkish/jobs/{job.job_id}/state").json() == document  # kept
    assert _listing(checkpoint) == before
    for path, status, text in (
        ("/state/nope/0", 404, "has no query 'nope'"),
        ("/state/counts/3", 404, "has no stateful operator 3"),
        ("/state/counts/x", 404, "has no stateful operator 'x'"),
        ("/state/counts/0?limit=0", 400, "limit must be a number from 1 to 1000"),
    ):
        reply = web.get(f"/flinkish/jobs/{job.job_id}{path}")
        assert (reply.status, list(reply.json())) == (status, ["errors"]), (path, reply.body)
        assert text in reply.json()["errors"][0], (path, reply.body)
    assert web.get(f"/flinkish/jobs/{'ef' * 16}/state").status == 404


def test_the_dashboards_state_tab(job: StateJob, web: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.fixtures.browser import chromium, open_dashboard

    with chromium() as browser:
        wait = WebDriverWait(browser, 240)
        open_dashboard(browser, f"{web.url}/#/job/{job.job_id}/state")
        wait.until(
            ec.presence_of_element_located((By.CSS_SELECTOR, "#chart-operator-bytes canvas"))
        )
        legend = browser.find_element(By.CSS_SELECTOR, "#chart-operator-rows .u-legend").text
        assert "joined · 0 symmetricHashJoin" in legend and "totals · 0" in legend
        browser.find_element(By.ID, "read-state").click()  # the listing read above, kept
        row = wait.until(
            ec.presence_of_element_located((By.CSS_SELECTOR, "tr[data-store='joined/0/left']"))
        )
        assert "stream-stream join" in row.text and "struct<field0:string>" in row.text
        browser.find_element(By.ID, "state-key").send_keys(unquote(K2))
        browser.find_element(By.CSS_SELECTOR, "button[data-operator='sessions/0']").click()
        keys = wait.until(
            ec.presence_of_element_located(
                (By.CSS_SELECTOR, "[data-store='sessions/0/default'] table")
            )
        )
        assert keys.text.count('"key":"k2"') == 4  # two sessions: in each key and value
