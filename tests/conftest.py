"""Shared pytest configuration and fixtures for the whole test suite.

Fixtures live in modules under ``tests/fixtures/`` and are registered here as plugins, one
line each, so each group of fixtures has one owner and one place.

Every JVM ``spark-submit`` starts for the tests (a Connect server, a Spark session of a test
itself, a job whose test writes its own configuration), and every standalone master and worker
(``SPARK_DAEMON_JAVA_OPTS``), is compiled by the JVM's first tier
alone and collects with the serial collector: ``SPARK_SUBMIT_OPTS`` (a developer's own value
wins). Such JVMs live seconds, where a job's live months: on two cores
``tests/jobs/test_counts_per_key.py`` took 33 CPU-seconds with both tiers, 22 with the first.
Their processes (Hadoop's ``chmod`` of each file it creates) are started by vfork, without the
helper process Java 17 execs first by default, and Spark's own classes are not verified again
in each of them (``SHORT_JVM``; the test configuration gives flinkish's drivers and executors
the same, ``TEST_JVM_OPTIONS``, and the Connect servers' executors get it too:
tests/fixtures/connect_server.py). The product never sets it.
"""

import os

import pytest

pytest.register_assert_rewrite("tests.fixtures")  # imported here before its plugins load
from tests.fixtures.flinkish_env import SHORT_JVM  # noqa: E402
from tests.fixtures.spark_cluster import stop_shared_clusters  # noqa: E402

os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_JVM)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", SHORT_JVM)  # a standalone master and worker
# every Spark process a test starts binds and advertises loopback (the product sets it for the
# drivers of local masters and of standalone masters on loopback: flinkish_cli/spark/loopback.py)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

pytest_plugins = [
    # S3: a real moto server on loopback (s3_server, s3_bucket); see tests/fixtures/s3server.py
    "tests.fixtures.s3server",
    # flinkish_env: private configuration and directories, and the real CLI as a process
    "tests.fixtures.flinkish_env",
    # spark_cluster: a real Spark standalone master and worker (scripts/start-cluster.sh)
    "tests.fixtures.spark_cluster",
    # connect_server: a real session cluster, a Spark Connect server (start-cluster.sh --session)
    "tests.fixtures.connect_server",
    # hdfs_cluster: a real single-node HDFS (start-cluster.sh --hdfs), one for the whole run
    "tests.fixtures.hdfs",
    # yarn_cluster: a real single-node YARN and its HDFS (start-cluster.sh --yarn), one a run
    "tests.fixtures.yarn",
    # Kafka: one real broker for the run (kafka_broker, kafka_topic); tests/fixtures/kafka_broker.py
    "tests.fixtures.kafka_broker",
    # flink: Apache Flink's own CLI (bin/flink), the reference client of flinkish web
    "tests.fixtures.flink_cli",
    # FLINKISH_TEST_CPU=FILE: each test's CPU, every process it starts included
    "tests.fixtures.cpu_accounting",
]


#: Session fixtures that start a cluster: a pytest-xdist worker starts each once, for every
#: module that uses it (see :func:`group_of`).
SHARED_CLUSTERS = {"connect_server", "spark_cluster"}
#: The test modules that use them (checked against the fixtures they use at collection): one
#: group, so that one worker starts one Connect server and one standalone cluster for all.
SHARED_CLUSTER_MODULES = frozenset(
    {
        "tests/cli/test_run_cluster.py",
        "tests/runtime/test_rescale_on_clusters.py",
        "tests/runtime/test_session_cluster.py",
        "tests/scripts/test_cluster_scripts.py",
        "tests/scripts/test_session_cluster_scripts.py",
        "tests/submission/test_upload.py",
    }
)
#: Their group's name.
SHARED_GROUP = "shared-clusters"
#: The modules that use the one HDFS of the run (``hdfs_cluster``): one group, on one worker.
HDFS_MODULES = frozenset(
    {
        "tests/scripts/test_hdfs_scripts.py",
        "tests/runtime/test_hdfs_lifecycle.py",
        "tests/storage/test_webhdfs.py",
    }
)
HDFS_GROUP = "hdfs"
#: The modules that use the one YARN of the run (``yarn_cluster``): one group, on one worker.
YARN_MODULES = frozenset(
    {
        "tests/scripts/test_yarn_scripts.py",
        "tests/cli/test_run_yarn.py",
    }
)
YARN_GROUP = "yarn"
#: Packages whose modules share one fixture of a wider scope, so run on one worker together:
#: the jobs' tests and their one SparkSession (tests/jobs/conftest.py); the Kafka tests and
#: their one broker (tests/fixtures/kafka_broker.py).
SHARED_PACKAGES = {"jobs", "kafka"}


def group_of(nodeid: str) -> str:
    """The group a test runs in, whole on one worker (scripts/test.sh's ``--dist loadgroup``):
    its module, so that its module fixtures start once; the shared-cluster modules
    (:data:`SHARED_CLUSTER_MODULES`) together, the HDFS's (:data:`HDFS_MODULES`) and the YARN's
    (:data:`YARN_MODULES`); a
    package of :data:`SHARED_PACKAGES` whole.
    From the node id alone: pytest-xdist's controller, which schedules, collects nothing."""
    module = nodeid.split("::")[0]
    if module in SHARED_CLUSTER_MODULES:
        return SHARED_GROUP
    if module in HDFS_MODULES:
        return HDFS_GROUP
    if module in YARN_MODULES:
        return YARN_GROUP
    parts = module.split("/")
    if len(parts) == 3 and parts[0] == "tests" and parts[1] in SHARED_PACKAGES:
        return f"tests/{parts[1]}"
    return module


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup`` by :func:`group_of`. pytest-xdist's own loadgroup reads groups
    from ``xdist_group`` marks, which it writes into each test's node id through an attribute
    pytest 9.2 no longer reads: every test became a group of its own, and the two workers
    both set up most module fixtures (and both shared clusters)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ByGroup(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list) -> None:
    """A test of a real cluster starts JVMs: ``cluster`` implies ``spark``, so that the fast
    run (``-m "not spark"``) starts none. The groups (:func:`group_of`) go out longest first
    (:func:`_longest_first`), and a module that uses a shared cluster must be named in
    :data:`SHARED_CLUSTER_MODULES`."""
    groups: dict[int, str] = {}
    for item in items:
        if item.get_closest_marker("cluster") and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
        module = item.nodeid.split("::")[0]
        if SHARED_CLUSTERS & set(item.fixturenames) and module not in SHARED_CLUSTER_MODULES:
            raise pytest.UsageError(
                f"{module} uses a shared cluster: add it to SHARED_CLUSTER_MODULES in "
                "tests/conftest.py, so that it runs on the worker that has the cluster."
            )
        if "hdfs_cluster" in item.fixturenames and module not in HDFS_MODULES:
            raise pytest.UsageError(
                f"{module} uses the HDFS: add it to HDFS_MODULES in tests/conftest.py, so that "
                "it runs on the worker that has it."
            )
        if "yarn_cluster" in item.fixturenames and module not in YARN_MODULES:
            raise pytest.UsageError(
                f"{module} uses the YARN: add it to YARN_MODULES in tests/conftest.py, so that "
                "it runs on the worker that has it."
            )
        groups[id(item)] = group_of(item.nodeid)
    _longest_first(items, groups)


def _longest_first(items: list, groups: dict[int, str]) -> None:
    """Order the groups as ``--no-loadscope-reorder`` hands them out (scripts/test.sh): the
    long-running ones (a ``soak`` test) first, then those that start Spark, then the rest, each
    kind in collection order. Seconds-long tests last fill the workers' ends evenly; pytest-xdist's
    own order (the groups with most tests first) hands out the one-test modules last, a
    short soak among them, which then runs on one worker while the others are idle."""
    rank: dict[str, int] = {}
    for item in items:
        kind = 2
        if item.get_closest_marker("soak"):
            kind = 0
        elif item.get_closest_marker("spark"):
            kind = 1
        group = groups[id(item)]
        rank[group] = min(rank.get(group, 2), kind)
    # the shared clusters' group first of its kind, whole, also without pytest-xdist: its
    # clusters stop when its last test is done (pytest_runtest_teardown)
    items.sort(key=lambda item: (rank[groups[id(item)]], groups[id(item)] != SHARED_GROUP))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """After the shared clusters' last test, stop them (:func:`stop_shared_clusters`): the
    rest of the suite would otherwise pay for a master, a worker, a Connect server and its
    ``flinkish web`` idling for twenty minutes, and for their stop at the end. The group runs
    whole on one worker (:func:`group_of`), so no later test of this worker needs them."""
    result = yield
    if nextitem is not None and group_of(item.nodeid) == SHARED_GROUP != group_of(nextitem.nodeid):
        stop_shared_clusters()
    return result
