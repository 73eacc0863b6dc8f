"""Shared pytest configuration and fixtures for the whole test suite.

Fixtures live in modules under ``tests/fixtures/`` and are registered here as plugins, one
line each, so each group of fixtures has one owner and one place.

Every JVM ``spark-submit`` starts for the tests (a Connect server, a Spark session of a test
itself, a job whose test writes its own configuration) is compiled by the JVM's first tier
alone: ``SPARK_SUBMIT_OPTS`` (a developer's own value wins). Such JVMs live seconds, where a
job's live months: on two cores ``tests/jobs/test_counts_per_key.py`` took 33 CPU-seconds
with both tiers, 22 with the first. (The test configuration gives flinkish's drivers the
same and the serial collector: ``TEST_JVM_OPTIONS``.) The product never sets it.
"""

import os

os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")

pytest_plugins = [
    # S3: a real moto server on loopback (s3_server, s3_bucket); see tests/fixtures/s3server.py
    "tests.fixtures.s3server",
    # flinkish_env: private configuration and directories, and the real CLI as a process
    "tests.fixtures.flinkish_env",
    # spark_cluster: a real Spark standalone master and worker (scripts/start-cluster.sh)
    "tests.fixtures.spark_cluster",
    # connect_server: a real session cluster, a Spark Connect server (start-cluster.sh --session)
    "tests.fixtures.connect_server",
    # flink: Apache Flink's own CLI (bin/flink), the reference client of flinkish web
    "tests.fixtures.flink_cli",
]


def pytest_collection_modifyitems(items: list) -> None:
    """A test of a real cluster starts JVMs: ``cluster`` implies ``spark``, so that the fast
    run (``-m "not spark"``) starts none."""
    import pytest

    for item in items:
        if item.get_closest_marker("cluster") and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
