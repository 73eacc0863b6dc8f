"""Shared pytest configuration and fixtures for the whole test suite.

Fixtures live in modules under ``tests/fixtures/`` and are registered here as plugins, one
line each, so each group of fixtures has one owner and one place.

Every JVM ``spark-submit`` starts for the tests (a Connect server, a Spark session of a test
itself, a job whose test writes its own configuration) is compiled by the JVM's first tier
alone and collects with the serial collector: ``SPARK_SUBMIT_OPTS`` (a developer's own value
wins). Such JVMs live seconds, where a job's live months: on two cores
``tests/jobs/test_counts_per_key.py`` took 33 CPU-seconds with both tiers, 22 with the first.
Their processes (Hadoop's ``chmod`` of each file it creates) are started by vfork, without the
helper process Java 17 execs first by default, and Spark's own classes are not verified again
in each of them (``SHORT_JVM``; the test configuration gives flinkish's drivers the same,
``TEST_JVM_OPTIONS``). The product never sets it.
"""

import json
import os
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.fixtures")  # imported here before its plugins load
from tests.fixtures.flinkish_env import SHORT_JVM  # noqa: E402

os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_JVM)

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
#: Packages whose modules share one fixture of a wider scope, so run on one worker together:
#: the jobs' tests and their one SparkSession (tests/jobs/conftest.py).
SHARED_PACKAGES = {"jobs"}


def group_of(nodeid: str) -> str:
    """The group a test runs in, whole on one worker (scripts/test.sh's ``--dist loadgroup``):
    its module, so that its module fixtures start once; the shared-cluster modules
    (:data:`SHARED_CLUSTER_MODULES`) together; a package of :data:`SHARED_PACKAGES` whole.
    From the node id alone: pytest-xdist's controller, which schedules, collects nothing."""
    module = nodeid.split("::")[0]
    if module in SHARED_CLUSTER_MODULES:
        return "shared-clusters"
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
    run (``-m "not spark"``) starts none. The groups (:func:`group_of`) go out in the order
    :func:`schedule` chooses, and a module that uses a shared cluster must be named in
    :data:`SHARED_CLUSTER_MODULES`."""
    groups: dict[int, str] = {}
    heavy: set[str] = set()
    for item in items:
        if item.get_closest_marker("cluster") and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
        module = item.nodeid.split("::")[0]
        if SHARED_CLUSTERS & set(item.fixturenames) and module not in SHARED_CLUSTER_MODULES:
            raise pytest.UsageError(
                f"{module} uses a shared cluster: add it to SHARED_CLUSTER_MODULES in "
                "tests/conftest.py, so that it runs on the worker that has the cluster."
            )
        groups[id(item)] = group_of(item.nodeid)
        if item.get_closest_marker("spark"):
            heavy.add(groups[id(item)])
    order = {group: n for n, group in enumerate(schedule(set(groups.values()), heavy))}
    items.sort(key=lambda item: order[groups[id(item)]])


#: Each group's seconds in the last run on this machine that measured it (``pytest
#: --store-durations`` updates the groups it ran): what :func:`schedule` orders by. A group
#: it does not name counts as :data:`UNKNOWN_SECONDS` of its kind.
DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_SECONDS = {True: 30.0, False: 1.0}
#: Groups that take less than this go last, to even out the workers' ends.
FILLER_SECONDS = 5.0


def schedule(groups: set[str], heavy: set[str]) -> list[str]:
    """The order in which the workers take the groups (``--no-loadscope-reorder``: the next
    free worker takes the next group).

    The suite is CPU-bound where it runs Spark (``heavy`` groups: JVMs on both cores) and
    waits on timers where it does not (slow connections, a browser, S3 faults). So: the heavy
    groups longest first (the longest cannot end up alone at the end), the light groups of
    some length spread evenly among them, each thus running beside a heavy one that uses the
    cores it leaves idle, and the short groups last, to fill both workers' ends. (Before, the
    light groups all ran at the end, side by side: a quarter of that last stretch's CPU was
    idle.)"""
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}

    def seconds(group: str) -> float:
        return float(known.get(group, UNKNOWN_SECONDS[group in heavy]))

    def longest_first(chosen: set[str]) -> list[str]:
        return sorted(chosen, key=lambda group: (-seconds(group), group))

    fillers = {g for g in groups - heavy if seconds(g) < FILLER_SECONDS}
    big = longest_first(groups & heavy)
    light = longest_first(groups - heavy - fillers)
    total = sum(seconds(group) for group in big) or 1.0
    order: list[str] = []
    elapsed = 0.0
    placed = 0
    for group in big:
        order.append(group)
        elapsed += seconds(group)
        # light group j once (j + 1) / (len(light) + 1) of the heavy groups' time has gone
        while placed < len(light) and elapsed / total >= (placed + 1) / (len(light) + 1):
            order.append(light[placed])
            placed += 1
    return order + light[placed:] + longest_first(fillers)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write each group's seconds to {DURATIONS.name} (the schedule's figures)",
    )


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each group's seconds, set-up and tear-down included (on the controller too: it
    receives every worker's reports)."""
    group = group_of(report.nodeid)
    _measured[group] = _measured.get(group, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput"):
        known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        figures = known | {group: round(seconds, 1) for group, seconds in _measured.items()}
        DURATIONS.write_text(json.dumps(dict(sorted(figures.items())), indent=1) + "\n")
