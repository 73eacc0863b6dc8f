"""``flinkish run`` refuses bad input before anything starts: one clear message, a non-zero
exit status, no traceback, nothing written (no JVM is started, so these are fast tests)."""

from __future__ import annotations

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py"], "The job file missing.py does not exist."),
        (["cancel", "not-a-job-id"], "'not-a-job-id' is not a valid JobID."),
        (["cancel", "0" * 32], f"No job with JobID {'0' * 32}"),
        (["logs", "0" * 32], f"No job with JobID {'0' * 32}"),
        (["run", "-t", "remote", "job.py"], "needs the address of a session cluster"),
    ],
)
def test_bad_input_gets_one_clear_message(flinkish_env: FlinkishEnv, args, message) -> None:
    (flinkish_env.root / "job.py").write_text("print('hi')\n")
    result = flinkish_env.run(*args, check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not flinkish_env.checkpoints.exists() or not any(flinkish_env.checkpoints.iterdir())


def test_syntax_error_names_the_line_and_starts_nothing(flinkish_env: FlinkishEnv) -> None:
    (flinkish_env.root / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    result = flinkish_env.run("run", "broken.py", check=False)
    assert result.returncode != 0
    assert "not valid Python" in result.stderr and "line 2" in result.stderr
    assert not flinkish_env.checkpoints.exists()
    assert not flinkish_env.logs.exists() or not any(flinkish_env.logs.iterdir())


def test_pym_without_py_files_is_refused(flinkish_env: FlinkishEnv) -> None:
    result = flinkish_env.run("run", "-pym", "pipelines.copy_job", check=False)
    assert result.returncode == 1
    assert "-pym pipelines.copy_job needs -pyfs" in result.stderr


def test_checkpoints_on_s3_without_s3a_are_refused_before_anything_starts(
    flinkish_env: FlinkishEnv,
) -> None:
    (flinkish_env.root / "job.py").write_text("print('hi')\n")
    result = flinkish_env.run(
        "run", "-D", "execution.checkpointing.dir=s3://bucket/checkpoints", "job.py", check=False
    )
    assert result.returncode != 0
    assert "Spark has no S3A file system" in result.stderr
    assert "hadoop-aws" in result.stderr and "pipeline.jars" in result.stderr
    assert not flinkish_env.logs.exists() or not any(flinkish_env.logs.iterdir())
