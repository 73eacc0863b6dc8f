"""scripts/setup.sh: a missing Java is one clear line with the fix, before anything else."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"


def test_missing_java_is_reported_in_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "sed", "head", "env"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    result = subprocess.run(
        ["bash", str(SETUP)],
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Java not found" in lines[0] and "openjdk-17" in lines[0]
