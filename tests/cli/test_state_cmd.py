"""``flinkish state``'s refusals, without Spark: what is not state, a query that is not
there, bad options: one message, exit status 1, and no pyspark imported, no JVM started.
(Reading real state is tests/state/test_state_reading.py's.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fixtures.flinkish_env import FlinkishEnv
from tests.savepoints.checkpoints import fake_checkpoint


def _importtime(env: FlinkishEnv, *args: str) -> tuple[subprocess.CompletedProcess[str], list]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flinkish_cli", *args],
        env=env.environ(),
        cwd=env.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = [line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    return result, imported


def _errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if "import time:" not in line]


def test_refusals_start_no_spark(flinkish_env: FlinkishEnv, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep")
    checkpoint = fake_checkpoint(tmp_path / "counts", committed=1)
    for args, message in (
        (("ls", str(tmp_path / "notes")), "is neither a savepoint nor a checkpoint"),
        (("show", str(checkpoint), "--query", "other"), "has no query 'other'"),
        (("show", str(checkpoint), "--operator", "4"), "has no stateful operator 4"),
        (("export", str(checkpoint), str(tmp_path / "full")), "is not empty"),
        (("show", "ab" * 16), f"Job {'ab' * 16} not found"),
    ):
        result, imported = _importtime(flinkish_env, "state", *args, "--verbose")
        assert result.returncode == 1, result
        errors = _errors(result)
        error_lines = [line for line in errors if line.startswith("ERROR: ")]
        assert len(error_lines) == 1 and message in error_lines[0], errors
        assert "flinkish_cli.state.source" in imported  # importtime did report the imports
        assert not [m for m in imported if m.split(".")[0] in ("pyspark", "py4j")], args
        assert "Starting Spark" not in result.stderr and result.stdout == ""
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["mine.txt"]


def test_bad_options_are_usage_errors(flinkish_env: FlinkishEnv) -> None:
    for args, text in (
        (("show", "x", "--limit", "0"), "Invalid value for '--limit'"),
        (("export", "x", "y", "--format", "csv"), "Invalid value for '--format'"),
        (("ls",), "Missing argument"),
        (("drop", "x"), "No such command 'drop'"),
    ):
        result = flinkish_env.run("state", *args, check=False)
        assert result.returncode == 1 and text in result.stderr, (args, result.stderr)


def test_state_is_an_action(flinkish_env: FlinkishEnv) -> None:
    listed = flinkish_env.run("--help", check=True).stdout
    assert "state" in listed and "List, show or export the state" in listed
    for command in ("ls", "show", "export"):
        assert flinkish_env.run("state", command, "--help", check=True).returncode == 0
