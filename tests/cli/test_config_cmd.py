"""``flinkish config``: the effective configuration as a table, plain text or JSON."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from flinkish_cli.cli.main import cli, main

FIXTURES = Path(__file__).resolve().parents[1] / "config" / "fixtures"
SECRET = "hunter2-SECRET"

CONF = f"""\
parallelism.default: 3
state.backend: rocksdb
s3.endpoint: http://minio:9000
s3.secret-key: {SECRET}
jobmanager.rpc.address: localhost
spark.sql.adaptive.enabled: false
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FLINK_CONF_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    directory = tmp_path / "myconf"
    directory.mkdir()
    (directory / "flink-conf.yaml").write_text(CONF)
    return directory


def invoke(*args: str) -> "object":
    result = CliRunner().invoke(cli, ["config", *args], catch_exceptions=False)
    return result


def test_plain_table(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "Configuration from myconf/flink-conf.yaml"
    assert lines[1].split() == ["Key", "Value", "Source", "Status", "Spark"]
    columns = lines[1].index("Value"), lines[1].index("Source"), lines[1].index("Status")
    row = next(line for line in lines if line.startswith("parallelism.default "))
    assert row[columns[0] :].startswith("3 ")
    assert row[columns[1] :].startswith("myconf/flink-conf.yaml:1 ")
    assert row[columns[2] :].startswith("mapped ")
    assert "spark.sql.shuffle.partitions=3; spark.default.parallelism=3" in row
    assert any(
        line.startswith("jobmanager.rpc.address ") and "not-applicable" in line for line in lines
    )
    assert any(
        line.startswith("spark.sql.adaptive.enabled ") and "passthrough" in line for line in lines
    )
    assert lines[-1] == "Spark master without -m or -t: local[3]"
    assert SECRET not in result.stdout
    assert SECRET not in result.stderr


def test_warnings_go_to_stderr(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf))
    warnings = result.stderr.splitlines()
    assert warnings
    assert all(line.startswith("WARNING: ") for line in warnings)
    assert any("state.backend is deprecated; use state.backend.type" in w for w in warnings)
    assert any("jobmanager.rpc.address has no meaning on Spark" in w for w in warnings)
    assert "WARNING" not in result.stdout


def test_json_output(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf), "-o", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert isinstance(document, list)
    by_key = {item["key"]: item for item in document}
    assert set(by_key["parallelism.default"]) == {
        "key",
        "value",
        "source",
        "status",
        "spark",
        "description",
    }
    assert by_key["parallelism.default"]["value"] == "3"
    assert by_key["parallelism.default"]["source"] == "myconf/flink-conf.yaml:1"
    assert by_key["state.backend.type"]["spark"] == {
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        )
    }
    assert by_key["s3.secret-key"]["value"] == "******"
    assert by_key["s3.secret-key"]["spark"] == {"spark.hadoop.fs.s3a.secret.key": "******"}
    assert by_key["heartbeat.interval"]["source"] == "default"
    assert SECRET not in result.stdout


def test_dynamic_overrides_show_their_source(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf), "-D", "parallelism.default=5", "-o", "json")
    by_key = {item["key"]: item for item in json.loads(result.stdout)}
    assert by_key["parallelism.default"]["value"] == "5"
    assert by_key["parallelism.default"]["source"] == "-D"


def test_one_key_by_deprecated_name(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf), "--key", "state.backend")
    assert result.exit_code == 0
    assert "Key:         state.backend.type" in result.stdout
    assert "Value:       rocksdb" in result.stdout
    assert "Source:      myconf/flink-conf.yaml:2" in result.stdout
    assert "RocksDBStateStoreProvider" in result.stdout


def test_one_secret_key(conf: Path) -> None:
    result = invoke("--conf-dir", str(conf), "-k", "s3.secret-key", "-o", "json")
    (item,) = json.loads(result.stdout)
    assert item["value"] == "******"
    result = invoke("--conf-dir", str(conf), "-k", "s3.secret-key")
    assert SECRET not in result.stdout
    assert "******" in result.stdout


def test_one_unset_key() -> None:
    result = invoke("-k", "pipeline.name")
    assert "Value:       (none)" in result.stdout


def test_rich_table_on_a_terminal(conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flinkish_cli.cli.output.is_terminal", lambda stream=None: True)
    monkeypatch.setattr("flinkish_cli.cli.commands.config_cmd.is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "250")
    result = invoke("--conf-dir", str(conf), "-D", "spark.x=[abc]")
    assert result.exit_code == 0
    assert "parallelism.default" in result.stdout
    assert "┃" in result.stdout or "│" in result.stdout
    assert "[abc]" in result.stdout  # values are escaped, not read as rich markup
    assert SECRET not in result.stdout
    one = invoke("--conf-dir", str(conf), "-k", "s3.secret-key")
    assert "******" in one.stdout and SECRET not in one.stdout


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_bad_value_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "bad"
    directory.mkdir()
    (directory / "flink-conf.yaml").write_text(
        "# x\nexecution.checkpointing.interval: 10 parsecs\n"
    )
    code, out, err = _main(["config", "--conf-dir", str(directory)], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith(
        "ERROR: bad/flink-conf.yaml:2: execution.checkpointing.interval: '10 parsecs' "
        "is not a duration; expected e.g. 10 s, 500 ms, 1 min"
    )
    assert "Traceback" not in err


def test_unknown_key_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(["config", "-k", "parallelism.defualt"], capsys)
    assert code == 1
    assert "did you mean parallelism.default?" in err


def test_malformed_dynamic(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(["config", "-D", "foo"], capsys)
    assert code == 1
    assert "ERROR: -D foo: expected -D key=value." in err


def test_secret_never_in_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(
        ["config", "-D", f"spark.x.password={SECRET}", "-D", "s3.path.style.access=perhaps"],
        capsys,
    )
    assert code == 1
    assert SECRET not in out + err


def _flinkish() -> str:
    candidate = Path(sys.executable).with_name("flinkish")
    return str(candidate) if candidate.exists() else (shutil.which("flinkish") or "flinkish")


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "FLINK_CONF_DIR"}
    environment.update(env)
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, env=environment, timeout=120
    )


def test_subprocess_flink_2_default_config(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    shutil.copy(FIXTURES / "flink-2-default-config.yaml", conf / "config.yaml")
    result = _run([_flinkish(), "config"], tmp_path, HOME=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "Configuration from conf/config.yaml" in result.stdout
    lines = (conf / "config.yaml").read_text().splitlines()
    rpc = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("rpc:"))
    address = next(i for i in range(rpc + 1, len(lines) + 1) if "address:" in lines[i - 1])
    warning = f"WARNING: conf/config.yaml:{address}: jobmanager.rpc.address has no meaning"
    assert warning in result.stderr


def test_subprocess_bad_config(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("state:\n  backend:\n    type: memory\n")
    result = _run([_flinkish(), "config"], tmp_path, HOME=str(tmp_path))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "ERROR: conf/config.yaml:3: state.backend.type: 'memory' is not a valid value" in (
        result.stderr
    )
    malformed = _run([_flinkish(), "config", "-D", "nonsense"], tmp_path, HOME=str(tmp_path))
    assert malformed.returncode != 0
    assert "Traceback" not in malformed.stderr


def test_subprocess_repository_default_conf() -> None:
    repository = Path(__file__).resolve().parents[2]
    result = _run([_flinkish(), "config", "-o", "json"], repository)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    by_key = {item["key"]: item for item in json.loads(result.stdout)}
    assert by_key["parallelism.default"]["value"] == "2"
    assert by_key["state.backend.type"]["value"] == "rocksdb"
    assert by_key["execution.checkpointing.interval"]["value"] == "2 s"
    assert result.stderr == ""  # the shipped configuration raises no warnings


def test_config_command_never_imports_pyspark(tmp_path: Path) -> None:
    result = _run(
        [sys.executable, "-X", "importtime", "-m", "flinkish_cli", "config", "-o", "json"],
        tmp_path,
        HOME=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    imported = [line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    assert "flinkish_cli.config" in imported  # importtime did report the imports
    assert not [m for m in imported if m.split(".")[0] in ("pyspark", "py4j")]
