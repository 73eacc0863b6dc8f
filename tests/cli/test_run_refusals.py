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


@pytest.mark.parametrize("example", ["datastream/streaming_word_count.py", "table/word_count.py"])
def test_flinks_own_pyflink_examples_are_refused_before_any_jvm(
    flinkish_env: FlinkishEnv, flink, example: str
) -> None:
    """Apache Flink's own PyFlink examples, given as a Flink user would (``run -py``), are
    refused in one line, before Java is even looked for (none is on the PATH here)."""
    from benchmarks.flink import venv_dir

    [script] = venv_dir().glob(f"lib/python3*/site-packages/pyflink/examples/{example}")
    no_java = {"JAVA_HOME": str(flinkish_env.root / "no-java"), "PATH": "/usr/bin/nonexistent"}
    for args in (["run", "-py", str(script)], ["run", "-d", str(script), "--output", "/tmp/o"]):
        result = flinkish_env.run(*args, check=False, env=no_java)
        assert result.returncode == 1, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"ERROR: {script} is a PyFlink program (it imports pyflink.")
        assert "flinkish runs PySpark programs" in line and "bin/flink" in line
    assert not flinkish_env.checkpoints.exists() or not any(flinkish_env.checkpoints.iterdir())
    assert not flinkish_env.logs.exists() or not any(flinkish_env.logs.iterdir())


def test_a_pyflink_module_is_refused_too(flinkish_env: FlinkishEnv) -> None:
    package = flinkish_env.root / "src" / "pipelines"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "wordcount.py").write_text(
        '"""import pyflink (a docstring is no import)"""\n\n\ndef main():\n'
        "    from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "    return StreamExecutionEnvironment\n"
    )
    result = flinkish_env.run("run", "-pym", "pipelines.wordcount", "-pyfs", "src", check=False)
    assert result.returncode == 1
    assert "imports pyflink.datastream at line 5" in result.stderr


def test_a_pyspark_program_that_mentions_pyflink_is_not_refused() -> None:
    from flinkish_cli.submission.pyflink import pyflink_import

    source = '# ported from pyflink\nimport pyspark  # not pyflink\nname = "pyflink.table"\n'
    assert pyflink_import(source) is None
    assert pyflink_import("import pyflinkish\nfrom .pyflink import x\n") is None
    assert pyflink_import("import os, pyflink.table as t\n") == ("pyflink.table", 1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "state.backend.type is 'hashmap'"),
        (["-D", "job.autoscaler.utilization.target=1.5"], "job.autoscaler.utilization.target"),
        (
            ["-D", "job.autoscaler.vertex.min-parallelism=8",
             "-D", "job.autoscaler.vertex.max-parallelism=4"],
            "job.autoscaler.vertex.max-parallelism",
        ),
    ],
)  # fmt: skip
def test_an_autoscaler_that_could_not_work_is_refused_before_anything_starts(
    flinkish_env: FlinkishEnv, flags: list[str], message: str
) -> None:
    """Scaling needs RocksDB (Spark repartitions state offline only there), and the
    autoscaler's keys must be consistent: one message with the advice, nothing started."""
    (flinkish_env.root / "job.py").write_text("print('hi')\n")
    result = flinkish_env.run(
        "run", "-D", "job.autoscaler.enabled=true", *flags, "job.py", check=False
    )
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if "ERROR" in line]) == 1
    assert not flinkish_env.checkpoints.exists() or not any(flinkish_env.checkpoints.iterdir())
