"""The in-place rescale of tests/runtime/test_rescale_in_place.py on the clusters a job can
run on besides local Spark: a session cluster (a real Spark Connect server, started by
``scripts/start-cluster.sh --session``) and a Spark standalone master and worker.

- In a session cluster, the job's client stops the queries with a savepoint, the next client
  repartitions the state with a local Spark of its own (Spark Connect has no offline
  repartition) and starts the queries in the cluster at the new parallelism, the same JobID.
- On a standalone cluster the parallelism is also the cores the job holds
  (``spark.cores.max``): the job's new application holds the new number.

Both exactly once, as Flink's adaptive scheduler keeps its job's output across a rescale.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv
from tests.runtime.test_rescale_in_place import CountingJob, _rescale, _rescales

pytestmark = pytest.mark.spark


@pytest.fixture
def job(flinkish_env: FlinkishEnv) -> CountingJob:
    flinkish_env.write_conf({"state.backend.type": "rocksdb"})
    return CountingJob(flinkish_env)


def _at(job: CountingJob, job_id: str, parallelism: int) -> bool:
    status = job.status(job_id)
    return (
        status["state"] == "RUNNING"
        and status["parallelism"] == parallelism
        and not (job.meta(job_id) / "rescale.json").exists()
    )


def _rescaled_exactly_once(job: CountingJob, job_id: str, to: int) -> None:
    """Rescale the caught-up job to ``to`` while input arrives; then every row once."""
    _rescale(job.env, job_id, to)
    job.add_file()
    job.wait(job_id, lambda: _at(job, job_id, to), f"rescaled to {to}")
    job.add_file()
    job.wait(job_id, job.caught_up, f"caught up at {to}")
    assert job.state_partitions(job_id) == job.state_partitions(job_id, "raw") == to
    [record] = _rescales(job, job_id)
    assert (record["to"], record["outcome"]) == (to, "COMPLETED")
    assert job.status(job_id)["restarts"] == 0  # a rescale is no failure
    job.assert_exactly_once()


def test_a_session_cluster_job_is_rescaled_in_place_exactly_once(
    job: CountingJob, connect_server: str
) -> None:
    job.add_file()
    job_id = job.start("-m", connect_server)
    job.wait(job_id, job.caught_up, "caught up")
    _rescaled_exactly_once(job, job_id, 3)
    log = job.env.run("logs", job_id, check=True).stdout
    assert "Repartitioning the state of" in log and "from 2 to 3 partitions" in log
    job.env.run("cancel", job_id, check=True)


@pytest.mark.cluster
def test_a_standalone_cluster_job_is_rescaled_in_place_with_its_cores(
    job: CountingJob, spark_cluster: Any
) -> None:
    # one core per executor, and executors small enough that the worker (1 GiB) takes two
    job.env.write_conf(
        {
            "state.backend.type": "rocksdb",
            "taskmanager.numberOfTaskSlots": 1,
            "spark.executor.memory": "500m",
        }
    )
    job.add_file()
    job_id = job.start("-m", str(spark_cluster))
    job.wait(job_id, job.caught_up, "caught up")
    assert _cores(spark_cluster) == 2
    _rescaled_exactly_once(job, job_id, 1)
    assert _cores(spark_cluster) == 1, "the new application holds one core"
    job.env.run("cancel", job_id, check=True)


def _cores(cluster: Any, timeout: float = 60) -> int:
    """The cores the job's running application holds on the master (it has one at a time)."""
    deadline = time.monotonic() + timeout
    while True:
        apps = [a for a in cluster.state()["activeapps"] if a["name"] == "counts"]
        if len(apps) == 1 and apps[0].get("cores"):
            return int(apps[0]["cores"])
        assert time.monotonic() < deadline, f"not one running application: {apps}"
        time.sleep(0.5)
