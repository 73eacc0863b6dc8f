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

import pytest

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


#: Session fixtures that start a cluster: a pytest-xdist worker starts each once, for every
#: module that uses it (see :func:`pytest_collection_modifyitems`).
SHARED_CLUSTERS = {"connect_server", "spark_cluster"}
#: Packages whose modules share one fixture of a wider scope, so run on one worker together:
#: the jobs' tests and their one SparkSession (tests/jobs/conftest.py).
SHARED_PACKAGES = {"jobs"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list) -> None:
    """A test of a real cluster starts JVMs: ``cluster`` implies ``spark``, so that the fast
    run (``-m "not spark"``) starts none.

    Every test gets an ``xdist_group`` for ``--dist loadgroup`` (scripts/test.sh): its module
    (a module runs whole on one worker, so its module fixtures start once), except that the
    modules using a shared cluster (:data:`SHARED_CLUSTERS`) form one group, so that one
    worker starts one Connect server and one standalone cluster for all of them, and a
    package of :data:`SHARED_PACKAGES` is one group."""
    shared = {item.path for item in items if SHARED_CLUSTERS & set(item.fixturenames)}
    groups: dict[int, str] = {}
    for item in items:
        if item.get_closest_marker("cluster") and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
        group = item.nodeid.split("::")[0]
        if item.path in shared:
            group = "shared-clusters"
        elif item.path.parent.name in SHARED_PACKAGES and item.path.parent.parent.name == "tests":
            group = f"tests/{item.path.parent.name}"
        item.add_marker(pytest.mark.xdist_group(group))
        groups[id(item)] = group
    _longest_first(items, groups)


def _longest_first(items: list, groups: dict[int, str]) -> None:
    """Order the groups as ``--no-loadscope-reorder`` hands them out (scripts/test.sh): the
    long-running ones (a ``soak`` test) first, then those that start Spark, then the rest, each
    kind in collection order. Seconds-long tests last fill the workers' ends evenly; pytest-xdist's
    own order (the groups with most tests first) hands out the one-test modules last, a
    two-minute soak among them, which then runs on one worker while the others are idle."""
    rank: dict[str, int] = {}
    for item in items:
        kind = 2
        if item.get_closest_marker("soak"):
            kind = 0
        elif item.get_closest_marker("spark"):
            kind = 1
        group = groups[id(item)]
        rank[group] = min(rank.get(group, 2), kind)
    items.sort(key=lambda item: rank[groups[id(item)]])
