"""``flinkish run`` against a real Spark standalone cluster started by scripts/start-cluster.sh."""

from __future__ import annotations

import time

import pytest

from tests.fixtures.flinkish_env import JOBS, FlinkishEnv, job_id_of, read_json_dir, write_events

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_detached_job_on_standalone_cluster_is_listed_and_cancelled(
    flinkish_env: FlinkishEnv, spark_cluster: str
) -> None:
    inputs = flinkish_env.root / "in"
    write_events(inputs, [{"key": f"k{i % 3}", "value": i, "seq": i} for i in range(20)])
    output = flinkish_env.root / "out"
    result = flinkish_env.run(
        "run",
        "-d",
        "-m",
        str(spark_cluster),
        str(JOBS / "counts" / "counts_job.py"),
        "--input",
        str(inputs),
        "--output",
        str(output),
        check=True,
    )
    job_id = job_id_of(result.stdout)
    listing = flinkish_env.run("list", check=True).stdout
    assert f" : {job_id} : counts_job (RUNNING)" in listing
    # the job's own module (helpers.tag, used in a UDF) resolved on the cluster's executor
    deadline = time.monotonic() + 180
    while len(read_json_dir(output / "raw")) < 20:
        assert time.monotonic() < deadline, "the cluster processed nothing"
        time.sleep(1)
    rows = read_json_dir(output / "raw")
    assert sorted(r["seq"] for r in rows) == list(range(20))
    assert {r["tag"] for r in rows} == {"tagged-k0", "tagged-k1", "tagged-k2"}
    # it ran on the cluster: the master lists the application
    apps = spark_cluster.state()["activeapps"]  # type: ignore[attr-defined]
    # named by the program's builder (appName("counts")), which wins as under spark-submit
    assert any(app["name"] == "counts" for app in apps), apps
    flinkish_env.run("cancel", job_id, check=True)
    assert flinkish_env.job(job_id)["state"] == "CANCELED"
