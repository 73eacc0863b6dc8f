"""A local job's Python imports the installed pyspark, with its bytecode: its driver
(``runtime/entry/flinkish_driver.py``) and its UDFs' workers, forked from flinkish's Python
daemon (``runtime/entry/pyspark_daemon.py``), never the zips ``spark-submit`` puts first on
their path (zipimport compiles each module from source in every process)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.flinkish_env import JOBS, FlinkishEnv

pytestmark = pytest.mark.spark


def test_a_local_jobs_driver_and_udf_workers_import_the_installed_pyspark(
    flinkish_env: FlinkishEnv,
) -> None:
    found = flinkish_env.root / "where.json"
    flinkish_env.run("run", str(JOBS / "where_pyspark.py"), str(found), check=True)
    where = json.loads(found.read_text())
    assert where["workers"], where
    for origin in [where["driver"], *where["workers"]]:
        assert ".zip" not in origin and origin.endswith("pyspark/__init__.py"), where
