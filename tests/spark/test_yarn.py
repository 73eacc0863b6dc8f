"""flinkish_cli.spark.yarn: container ids and the NodeManager's log framing."""

from __future__ import annotations

from flinkish_cli.spark import yarn


def test_the_application_of_a_container() -> None:
    assert (
        yarn.application_of_container("container_1796641210460_0002_01_000001")
        == "application_1796641210460_0002"
    )
    assert (
        yarn.application_of_container("container_e17_1410901177871_0001_01_000005")
        == "application_1410901177871_0001"
    )
    assert yarn.application_of_container(None) is None
    assert yarn.application_of_container("not-a-container") is None


def test_a_nodemanager_log_without_its_framing() -> None:
    text = (
        "Container: container_1_0001_01_000001 on 127.0.0.1:4\nLogAggregationType: LOCAL\n"
        "====\nLogType:stdout\nLogLastModifiedTime:Mon\nLogLength:12\nLogContents:\n"
        "line 1\nline 2\nEnd of LogType:stdout.This log file belongs to a running container"
    )
    assert yarn._contents(text) == "line 1\nline 2\n"


def test_the_container_yarn_is_asked_for() -> None:
    """Spark's heap and overhead: set, or max(384 MB, 10 % of the heap)."""
    assert (
        yarn.container_mb(
            {"spark.driver.memory": "640m", "spark.driver.memoryOverhead": "384m"}, "driver"
        )
        == 1024
    )
    assert yarn.container_mb({"spark.executor.memory": "8g"}, "executor") == 8192 + 819
    assert yarn.container_mb({}, "executor") == 1024 + 384


def test_the_attempt_of_a_container() -> None:
    assert yarn.attempt_of_container("container_1796641210460_0002_01_000001") == 1
    assert yarn.attempt_of_container("container_e17_1410901177871_0001_02_000005") == 2
    assert yarn.attempt_of_container(None) is None
    assert yarn.attempt_of_container("container_x") is None
