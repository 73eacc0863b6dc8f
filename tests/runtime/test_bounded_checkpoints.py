"""A checkpoint that does not grow with time, from the user's side, on real local Spark.

The counting job reads one file per micro-batch. With ``flinkish.file-source.log.cleanup-delay``
(and the sink's) at 0 and a compaction every 3 batches, each query's file-source log keeps
only its newest compactions, across a stop with a savepoint (which copies only the newest)
and a resume, where Spark's
default (10 min) keeps every compaction of the run; the sink and the counts stay exactly once;
and the size of each part is reported by ``info <JobID> --output json``, the REST API's
document and ``/metrics``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.sink_log import committed_rows
from tests.fixtures.web_server import running_web

pytestmark = pytest.mark.spark

COMPACT = re.compile(r"^(\d+)\.compact$")
BOUNDED = {
    "flinkish.file-source.log.cleanup-delay": "0 ms",
    "flinkish.file-source.log.compact-interval": 3,
    "flinkish.file-sink.log.cleanup-delay": "0 ms",
    "flinkish.file-sink.log.compact-interval": 3,
    "flinkish.checkpoint.size.interval": "1 s",
}


def _compactions(directory: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in directory.iterdir() if (m := COMPACT.match(p.name)))


def _wait_for_batch(env: FlinkishEnv, job_id: str, batch: int, timeout: float = 120) -> None:
    for query in ("counts", "raw"):
        env.wait_for_batches(job_id, query, batch, timeout)


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of the metric ``name`` in Prometheus' text format: (labels, value)."""
    found = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, _, value = line[len(name) + 1 :].rpartition("} ")
            found.append((dict(re.findall(r'(\w+)="([^"]*)"', labels)), float(value)))
    return found


def _footprint(env: FlinkishEnv, job_id: str, timeout: float = 30) -> dict:
    """``info <JobID> --output json`` once the driver has measured the sink's log too."""
    deadline = time.monotonic() + timeout
    while True:
        document = json.loads(env.run("info", job_id, "--output", "json", check=True).stdout)
        raw = document["queries"]["raw"]["footprint"]
        if raw and "sink_metadata" in raw["parts"]:
            return document
        assert time.monotonic() < deadline, document
        time.sleep(0.5)


def test_the_file_source_log_stays_bounded_across_a_restart_exactly_once(
    flinkish_env: FlinkishEnv,
) -> None:
    env = flinkish_env
    env.write_conf(BOUNDED)
    cycle = Cycle(env)
    cycle.add_input(14, rows_per_file=5)
    args = [*cycle.args(), "--max-files", "1"]
    first = job_id_of(env.run("run", "-d", *args, check=True).stdout)
    _wait_for_batch(env, first, 13)
    stopped = env.run("stop", "--savepointPath", str(env.savepoints), first, check=True)
    savepoint = savepoint_path(stdout=stopped.stdout)
    # the savepoint keeps one compaction of each source log (the newest: it lists every file
    # read), and the entries after it; the older ones still in the checkpoint stay out
    for query in ("counts", "raw"):
        saved = Path(savepoint) / query / "sources" / "0"
        in_checkpoint = _compactions(env.checkpoints / first / query / "sources" / "0")
        assert _compactions(saved) == in_checkpoint[-1:], (in_checkpoint, sorted(saved.iterdir()))
        assert len(in_checkpoint) > 1, in_checkpoint

    cycle.add_input(10, rows_per_file=5)
    second = job_id_of(env.run("run", "-d", "-s", savepoint, *args, check=True).stdout)
    _wait_for_batch(env, second, 23)
    cycle.wait_until_all_processed()

    # bounded: 24 batches compacted every 3 leave 8 compactions (2, 5, ..., 23) with Spark's
    # 10-minute delay; with none, only those that cover the retained batches stay (the 10 of
    # execution.checkpointing.num-retained's floor: 11.compact on), and no batch file before
    for query in ("counts", "raw"):
        log = env.checkpoints / second / query / "sources" / "0"
        kept = _compactions(log)
        listing = (query, sorted(p.name for p in log.iterdir()))
        assert kept == [11, 14, 17, 20, 23], listing
        assert min(int(p.name) for p in log.iterdir() if p.name.isdigit()) > kept[0], listing
    assert _compactions(cycle.output / "raw" / "_spark_metadata") == [11, 14, 17, 20, 23]

    # exactly once: through the sink's (bounded) log, in the part files, and in the counts
    assert sorted(r["seq"] for r in committed_rows(cycle.output / "raw")) == list(range(120))
    cycle.check_exactly_once()

    # reported: info, the REST API's document and /metrics
    document = _footprint(env, second)
    raw = document["queries"]["raw"]["footprint"]
    assert raw["parts"]["sources"]["grows"] == "age" and raw["parts"]["sources"]["bytes"] > 0
    assert {g["part"] for g in raw["growing"]} == {"sources", "sink_metadata"}
    assert document["queries"]["counts"]["footprint"]["parts"]["state"]["grows"] == "state"
    with running_web(env) as web:
        rest = web.get(f"/flinkish/jobs/{second}/checkpoint-size").json()
        assert set(rest["queries"]["raw"]["footprint"]["parts"]) == set(raw["parts"])
        assert web.get(f"/flinkish/jobs/{'0' * 32}/checkpoint-size").status == 404
        metrics = web.get("/metrics").body.decode()
    sizes = {
        (labels["query"], labels["part"], labels["grows"]): value
        for labels, value in _samples(metrics, "flinkish_query_checkpoint_bytes")
        if labels["job_id"] == second
    }
    assert sizes[("raw", "sources", "age")] > 0, sizes
    assert sizes[("raw", "sink_metadata", "age")] > 0
    assert sizes[("counts", "state", "state")] > 0
    env.run("cancel", second, check=True)
