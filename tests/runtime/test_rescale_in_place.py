"""A running job rescaled in place, as Flink's adaptive scheduler rescales a job: the same
JobID, a new parallelism, its state repartitioned, its output exactly once.

On real local Spark with the RocksDB state backend, the counting job
(``tests/fixtures/jobs/counts/counts_job.py``: a running count per key and a raw copy of
every row) runs with an autoscaler told to want more as soon as input flows: it scales the
job up in place (a new driver, the same JobID, Spark's offset log says the state has the new
partitions, the rescale's savepoint is in the job's history), and down again once the input
stopped and ``scale-down.interval`` passed; every input row reached the sink once with the
counts right. Metrics-only, the same decision is recorded and never applied. A driver killed
in the middle of a rescale asked for through the job client (what ``PUT
/jobs/:jobid/resource-requirements`` calls), after the repartition and before it is marked
done, is rolled back to the old parallelism, still exactly once. On the clusters (a session
cluster, a standalone cluster): tests/runtime/test_rescale_on_clusters.py.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.counting_input import CountingInput
from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv, job_id_of
from tests.fixtures.sink_log import committed_rows, final_counts

pytestmark = pytest.mark.spark

KEYS = [f"k{i}" for i in range(7)]


class CountingJob(CountingInput):
    """The job's input (and its ground truth), output and registry files."""

    def __init__(self, env: FlinkishEnv) -> None:
        super().__init__(env, KEYS, 20261125)

    def start(self, *flags: str, env: dict[str, str] | None = None) -> str:
        result = self.env.run(
            "run", "-d", "-p", "2", *flags, COUNTS_JOB,
            "--input", str(self.inputs), "--output", str(self.output), "--max-files", "20",
            env=env,
        )  # fmt: skip
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        return job_id_of(result.stdout)

    def meta(self, job_id: str) -> Path:
        return self.env.checkpoints / job_id / "_flinkish"

    def status(self, job_id: str) -> dict[str, Any]:
        return json.loads((self.meta(job_id) / "status.json").read_text())

    def state_partitions(self, job_id: str, query: str = "counts") -> int:
        """The shuffle (state) partitions Spark's offset log records for ``query`` now."""
        offsets = self.env.checkpoints / job_id / query / "offsets"
        latest = max(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
        metadata = json.loads((offsets / str(latest)).read_text().splitlines()[1])
        return int(metadata["conf"]["spark.sql.shuffle.partitions"])

    def wait(self, job_id: str, condition: Any, what: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            status = self.status(job_id)
            assert status["state"] not in ("FAILED", "CANCELED", "FINISHED"), self.why(status)
            assert time.monotonic() < deadline, f"not {what}: {self.why(status)}"
            time.sleep(0.3)

    def why(self, status: dict[str, Any]) -> str:
        """The job's state, its failures in full and the end of its log (a failed wait)."""
        causes = [e.get("cause", "") for e in status.get("exceptions", [])]
        log = self.env.logs / f"flinkish-{status['job_id']}.log"
        tail = log.read_text(errors="replace")[-6000:] if log.exists() else "(no log)"
        return (
            f"{status['state']} at parallelism {status.get('parallelism')}; "
            f"failure: {status.get('failure_cause')}; exceptions: {causes}\n{tail}"
        )

    def caught_up(self) -> bool:
        """Both queries have processed every input row (the sink and the counts)."""
        rows = len(committed_rows(self.output / "raw"))
        return rows == len(self.rows) and sum(final_counts(self.output / "counts").values()) == rows

    def assert_exactly_once(self) -> None:
        rows = committed_rows(self.output / "raw")
        seqs = collections.Counter(row["seq"] for row in rows)
        assert sorted(seqs) == list(range(len(self.rows))), "rows lost"
        assert max(seqs.values()) == 1, "rows repeated"
        truth = collections.Counter(row["key"] for row in self.rows)
        assert final_counts(self.output / "counts") == dict(truth)


def _rescale(env: FlinkishEnv, job_id: str, parallelism: int) -> str:
    """What ``PUT /jobs/:jobid/resource-requirements`` asks for, waited for here: the job
    client's rescale (the route sends it detached and answers with its trigger)."""
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.config import load_configuration

    config = load_configuration(conf_dir=str(env.conf_dir))
    return JobClient(config).rescale(job_id, parallelism)


@pytest.fixture
def job(flinkish_env: FlinkishEnv) -> CountingJob:
    flinkish_env.write_conf({"state.backend.type": "rocksdb"})
    return CountingJob(flinkish_env)


#: An autoscaler that wants more than the job has as soon as any input flows (a target
#: utilisation of 1 %), decides every second over a 6 s window, and may go from 2 to 3.
EAGER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.interval": "1 s",
    "job.autoscaler.metrics.window": "6 s",
    "job.autoscaler.stabilization.interval": "3 s",
    "job.autoscaler.utilization.target": "0.01",
    "job.autoscaler.utilization.min": "0.005",
    "job.autoscaler.utilization.max": "0.02",
    "job.autoscaler.vertex.min-parallelism": "2",
    "job.autoscaler.vertex.max-parallelism": "3",
    "job.autoscaler.scale-down.interval": "5 s",
}


def _rescales(job: CountingJob, job_id: str) -> list[dict[str, Any]]:
    path = job.meta(job_id) / "rescales.json"
    return json.loads(path.read_text())["rescales"] if path.exists() else []


def _feeding(job: CountingJob, stop: threading.Event) -> threading.Thread:
    def feed() -> None:
        while not stop.wait(0.4):
            job.add_file(40)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def test_the_autoscaler_scales_a_loaded_job_up_in_place_then_down_when_idle_exactly_once(
    job: CountingJob,
) -> None:
    job.env.write_conf({"state.backend.type": "rocksdb", **EAGER})
    job.add_file()
    job_id = job.start()
    pid = job.status(job_id)["pid"]
    stop = threading.Event()
    feeder = _feeding(job, stop)

    def at(parallelism: int) -> bool:
        status = job.status(job_id)
        return (
            status["state"] == "RUNNING"
            and status["parallelism"] == parallelism
            and not (job.meta(job_id) / "rescale.json").exists()
        )

    try:
        job.wait(job_id, lambda: at(3), "scaled up to 3")
    finally:
        stop.set()
        feeder.join()
    assert job.status(job_id)["pid"] != pid, "a new driver, the same JobID"
    assert job.state_partitions(job_id) == job.state_partitions(job_id, "raw") == 3
    up = [r for r in _rescales(job, job_id) if r["direction"] == "up"]
    assert up[0]["from"] == 2 and up[0]["to"] == 3 and up[0]["outcome"] == "COMPLETED"
    assert "Scale up" in up[0]["reason"] and up[0]["figures"]["queries"]
    # Idle now: after scale-down.interval the job goes back to its minimum.
    job.wait(job_id, lambda: at(2), "scaled down to 2 when idle", timeout=300)
    down = [r for r in _rescales(job, job_id) if r["direction"] == "down"]
    assert down and down[0]["outcome"] == "COMPLETED"
    assert down[0]["time"] - up[0]["end-time"] >= 5000, "not within scale-down.interval"
    job.wait(job_id, job.caught_up, "caught up")
    assert job.state_partitions(job_id) == 2
    assert job.state_partitions(job_id, "raw") == 2, "the stateless query's exchanges too"
    assert job.status(job_id)["restarts"] == 0  # rescales are no failures
    history = [p.name for p in (job.meta(job_id) / "savepoints").iterdir()]
    assert sum(".RESCALE." in name for name in history) == 2, history
    job.assert_exactly_once()
    job.env.run("cancel", job_id, check=True)


def test_metrics_only_records_each_decision_and_never_rescales(job: CountingJob) -> None:
    job.env.write_conf(
        {"state.backend.type": "hashmap", **EAGER, "job.autoscaler.scaling.enabled": "false"}
    )
    job.add_file()
    job_id = job.start()
    stop = threading.Event()
    feeder = _feeding(job, stop)
    try:
        job.wait(job_id, lambda: bool(_rescales(job, job_id)), "a decision recorded")
    finally:
        stop.set()
        feeder.join()
    [decision, *_] = _rescales(job, job_id)
    assert (decision["from"], decision["to"]) == (2, 3)
    assert decision["mode"] == "metrics-only" and decision["outcome"] == "NOT_APPLIED"
    status = job.status(job_id)
    assert status["parallelism"] == 2 and status["state"] == "RUNNING"
    assert not (job.meta(job_id) / "rescale.json").exists()
    job.env.run("cancel", job_id, check=True)


def test_a_driver_killed_in_the_middle_of_a_rescale_is_rolled_back_exactly_once(
    job: CountingJob,
) -> None:
    for _ in range(3):
        job.add_file()
    restarts = (
        "-D",
        "restart-strategy.type=fixed-delay",
        "-D",
        "restart-strategy.fixed-delay.delay=1 s",
    )
    job_id = job.start(*restarts, env={"FLINKISH_TEST_FAULT": "rescale-repartitioned:jvm"})
    job.wait(job_id, job.caught_up, "caught up")

    _rescale(job.env, job_id, 3)
    job.add_file()

    def rolled_back() -> bool:
        status = job.status(job_id)
        return (
            status["state"] == "RUNNING"
            and status["parallelism"] == 2
            and not (job.meta(job_id) / "rescale.json").exists()
        )

    job.wait(job_id, rolled_back, "rolled back to 2")
    job.add_file()
    job.wait(job_id, job.caught_up, "caught up again")
    assert job.state_partitions(job_id) == 2
    job.assert_exactly_once()
    log = Path(job.status(job_id)["log_path"]).read_text()
    assert "rolling back to 2" in log
    job.env.run("cancel", job_id, check=True)
