"""The tests' fault points: which driver attempt dies where (FLINKISH_TEST_FAULT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest


def _reach(point: str, attempt: int, faults: str) -> int:
    """A process that reaches ``point`` as driver attempt ``attempt``: its exit status."""
    code = f"from flinkish_cli.runtime import faults\nfaults.inject({point!r}, {attempt})\n"
    env = {**os.environ, "FLINKISH_TEST_FAULT": faults}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode


@pytest.mark.parametrize(
    ("point", "attempt", "faults", "killed"),
    [
        ("restore-copied", 0, "restore-copied:python", True),
        ("restore-copied", 1, "restore-copied:python", False),  # the restart succeeds
        ("restore-repartitioned", 0, "restore-copied:python", False),  # another point
        ("restore-copied", 0, "restore-copied:python,restore-repartitioned:python", True),
        ("restore-repartitioned", 1, "restore-copied:python,restore-repartitioned:python", True),
        ("restore-copied", 1, "restore-copied:python,restore-repartitioned:python", False),
        ("restore-repartitioned", 2, "restore-copied:python,restore-repartitioned:python", False),
        ("restore-copied", 0, "", False),
    ],
)
def test_each_listed_fault_kills_its_driver_attempt_only(
    point: str, attempt: int, faults: str, killed: bool
) -> None:
    assert (_reach(point, attempt, faults) == -signal.SIGKILL) is killed
