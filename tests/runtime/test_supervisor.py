"""The supervisor's parts that need no Spark: what a dead driver's exit means."""

from __future__ import annotations

from flinkish_cli.runtime.supervisor import DriverExit


def test_causes_name_what_died() -> None:
    assert DriverExit(-9, True).cause() == "Spark's JVM exited with signal 9 (SIGKILL)."
    python = DriverExit(137, True).cause()
    assert "Python driver was killed by signal 9 (SIGKILL)" in python and "137" in python
    assert "heartbeats" in DriverExit(-9, True, hung=True).cause()
    assert "status 3" in DriverExit(3, True).cause()
    client = DriverExit(-9, True, client=True).cause()
    assert client == "The job's client process was killed by signal 9 (SIGKILL)."
