"""A running job rescaled in place, as Flink's adaptive scheduler rescales a job: the same
JobID, a new parallelism, its state repartitioned, its output exactly once.

On real local Spark with the RocksDB state backend, the counting job
(``tests/fixtures/jobs/counts/counts_job.py``: a running count per key and a raw copy of
every row) is asked to rescale through the job client (what ``PUT
/jobs/:jobid/resource-requirements`` and the autoscaler call). Then: its driver runs at the
new parallelism, Spark's offset log says the state has that many partitions, the rescale's
savepoint is in the job's history, and every input row reached the sink once with the counts
right. A driver killed in the middle of the rescale (after the repartition, before it is
marked done) is rolled back to the old parallelism, still exactly once.
"""

from __future__ import annotations

import collections
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv, job_id_of, write_events
from tests.fixtures.sink_log import committed_rows, final_counts

pytestmark = pytest.mark.spark

KEYS = [f"k{i}" for i in range(7)]


class CountingJob:
    """The job's input (and its ground truth), output and registry files."""

    def __init__(self, env: FlinkishEnv) -> None:
        self.env = env
        self.inputs = env.root / "in"
        self.output = env.root / "out"
        self.rows: list[dict[str, Any]] = []
        self.rng = random.Random(20261125)

    def add_file(self, rows: int = 6) -> None:
        start = len(self.rows)
        batch = [
            {"key": self.rng.choice(KEYS), "value": 1, "seq": seq}
            for seq in range(start, start + rows)
        ]
        write_events(self.inputs, batch)
        self.rows += batch

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

    def state_partitions(self, job_id: str) -> int:
        """The shuffle (state) partitions Spark's offset log records for ``counts`` now."""
        offsets = self.env.checkpoints / job_id / "counts" / "offsets"
        latest = max(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
        metadata = json.loads((offsets / str(latest)).read_text().splitlines()[1])
        return int(metadata["conf"]["spark.sql.shuffle.partitions"])

    def wait(self, job_id: str, condition: Any, what: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            status = self.status(job_id)
            assert status["state"] not in ("FAILED", "CANCELED", "FINISHED"), status
            assert time.monotonic() < deadline, f"not {what}: {status}"
            time.sleep(0.3)

    def processed(self, job_id: str) -> int:
        return len(committed_rows(self.output / "raw"))

    def assert_exactly_once(self) -> None:
        rows = committed_rows(self.output / "raw")
        seqs = collections.Counter(row["seq"] for row in rows)
        assert sorted(seqs) == list(range(len(self.rows))), "rows lost"
        assert max(seqs.values()) == 1, "rows repeated"
        truth = collections.Counter(row["key"] for row in self.rows)
        assert final_counts(self.output / "counts") == dict(truth)


def _rescale(env: FlinkishEnv, job_id: str, parallelism: int) -> str:
    """What ``PUT /jobs/:jobid/resource-requirements`` does: the job client's rescale."""
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.config import load_configuration

    config = load_configuration(conf_dir=str(env.conf_dir))
    return JobClient(config).rescale(job_id, parallelism)


@pytest.fixture
def job(flinkish_env: FlinkishEnv) -> CountingJob:
    flinkish_env.write_conf({"state.backend.type": "rocksdb"})
    return CountingJob(flinkish_env)


def test_a_rescaled_job_keeps_its_jobid_repartitions_its_state_and_is_exactly_once(
    job: CountingJob,
) -> None:
    for _ in range(3):
        job.add_file()
    job_id = job.start()
    job.wait(job_id, lambda: job.processed(job_id) == len(job.rows), "caught up")
    assert job.state_partitions(job_id) == 2
    pid = job.status(job_id)["pid"]

    savepoint = _rescale(job.env, job_id, 3)
    assert Path(savepoint, "_metadata").is_file()
    for _ in range(3):  # input arriving while the job rescales
        job.add_file()

    def rescaled() -> bool:
        status = job.status(job_id)
        return (
            status["state"] == "RUNNING"
            and status["parallelism"] == 3
            and status["pid"] != pid
            and not (job.meta(job_id) / "rescale.json").exists()
        )

    job.wait(job_id, rescaled, "rescaled to 3")
    job.wait(job_id, lambda: job.processed(job_id) == len(job.rows), "caught up again")
    assert job.state_partitions(job_id) == 3
    status = job.status(job_id)
    assert status["restarts"] == 0  # a rescale is no failure
    history = [p.name for p in (job.meta(job_id) / "savepoints").iterdir()]
    assert any(".RESCALE.COMPLETED." in name for name in history), history
    job.assert_exactly_once()
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
    job.wait(job_id, lambda: job.processed(job_id) == len(job.rows), "caught up")

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
    job.wait(job_id, lambda: job.processed(job_id) == len(job.rows), "caught up again")
    assert job.state_partitions(job_id) == 2
    job.assert_exactly_once()
    log = Path(job.status(job_id)["log_path"]).read_text()
    assert "rolling back to 2" in log
    job.env.run("cancel", job_id, check=True)
