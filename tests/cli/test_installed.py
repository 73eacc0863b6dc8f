"""flinkish as a user's ``pip install`` leaves it: the package on ``sys.path``, nothing more.

The development install (``pip install -e``, scripts/setup.sh) also puts setuptools' editable
finder in every interpreter, and the finder imports modules of its own (``importlib.util``,
``pathlib``) at start-up. Code that leant on one of them without importing it works in every
other test and fails for each user of a wheel: here each command runs in an interpreter
without ``site`` (so without the finder), with the package and its dependencies on the path,
as a wheel installs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from flinkish_cli.cli.main import ACTIONS

REPO = Path(__file__).resolve().parents[2]
LAUNCH = """
import os, sys
sys.path[:0] = sys.argv[1].split(os.pathsep)
del sys.argv[1]
sys.argv[0] = "flinkish"
from flinkish_cli.cli.main import main
main()
"""


def flinkish_as_installed(args: list[str], conf_dir: Path) -> subprocess.CompletedProcess[str]:
    """``flinkish ARGS`` in a Python without ``site``: the package and the dependencies only."""
    path = os.pathsep.join(
        [str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    )
    env = {**os.environ, "FLINK_CONF_DIR": str(conf_dir), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-S", "-c", LAUNCH, path, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text(f"execution.checkpointing.dir: {tmp_path / 'ckpt'}\n")
    return tmp_path


def test_the_editable_finder_is_not_there(conf_dir: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-S", "-c", "import sys; print('importlib.util' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.strip() == "False", "the check below would prove nothing"


@pytest.mark.parametrize("command", sorted(ACTIONS))
def test_every_command_answers_help(command: str, conf_dir: Path) -> None:
    result = flinkish_as_installed([command, "--help"], conf_dir)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout and "Traceback" not in result.stderr


def test_a_list_and_a_bad_job_id_behave_as_documented(conf_dir: Path) -> None:
    listed = flinkish_as_installed(["list", "-a"], conf_dir)
    assert listed.returncode == 0, listed.stderr
    assert "No running jobs." in listed.stdout
    refused = flinkish_as_installed(["cancel", "not-a-job-id"], conf_dir)
    assert refused.returncode == 1
    assert "JobID" in refused.stderr and "Traceback" not in refused.stderr
