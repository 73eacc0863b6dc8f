"""``${env:NAME}`` and ``${file:PATH}`` in configuration values, and secrets given with -D.

A reference keeps a secret out of the process list: the value is read when the configuration
is loaded, and shown nowhere (``flinkish config``, warnings, errors), like a secret's.
"""

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration, load_configuration, to_spark
from flinkish_cli.config.references import MAX_FILE_BYTES
from flinkish_cli.errors import ConfigError

MakeDir = Callable[..., Path]
SECRET = "s3cr3t-Value-4711"


def _error(*args: object, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_configuration(*args, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert "\n" not in error.message
    assert SECRET not in str(error)
    return error


def _nowhere(config: Configuration, *values: str) -> None:
    """None of ``values`` appears in anything flinkish shows of ``config``."""
    shown = [*config.warnings, repr(config)]
    for entry in config.entries():
        shown += [entry.text, str(entry.source), repr(entry), json.dumps(entry.spark)]
    shown += list(to_spark(config).redacted().values())
    for value in values:
        assert all(value not in text for text in shown), value


# -- resolving -----------------------------------------------------------------------------------


def test_env_reference_in_config_yaml(conf_dir: MakeDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_SECRET", SECRET)
    monkeypatch.setenv("S3_ACCESS", "AKIA-from-env")
    text = "s3:\n  access-key: ${env:S3_ACCESS}\n  secret-key: ${env:S3_SECRET}\n"
    directory = conf_dir("config.yaml", text)
    config = load_configuration(directory)
    assert config.get("s3.secret-key") == SECRET
    assert config.to_flat(include_secrets=True)["s3.secret-key"] == SECRET  # what storage reads
    assert to_spark(config).conf["spark.hadoop.fs.s3a.secret.key"] == SECRET  # what Spark gets
    entry = config.entry("s3.secret-key")
    assert entry.text == "******"
    assert str(entry.source) == f"{directory / 'config.yaml'}:3 via ${{env:S3_SECRET}}"
    _nowhere(config, SECRET, "AKIA-from-env")


def test_file_reference_relative_to_the_configuration_directory(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "s3.secret-key: ${file:secrets/s3}\n")
    (directory / "secrets").mkdir()
    (directory / "secrets" / "s3").write_text(SECRET + "\n")  # as `echo ... > file` writes it
    config = load_configuration(directory)
    assert config.get("s3.secret-key") == SECRET
    _nowhere(config, SECRET)


def test_file_reference_with_d_is_relative_to_the_working_directory(isolated: Path) -> None:
    (isolated / "token.txt").write_text(SECRET + "\r\n")
    config = load_configuration(dynamic=["s3.session.token=${file:token.txt}"])
    assert config.get("s3.session.token") == SECRET
    assert not any("process list" in w for w in config.warnings)  # no secret on the command line
    _nowhere(config, SECRET)


def test_file_reference_expands_home(isolated: Path) -> None:
    home = Path(os.environ["HOME"])
    (home / ".s3-secret").write_text(SECRET)
    config = load_configuration(dynamic=["s3.secret-key=${file:~/.s3-secret}"])
    assert config.get("s3.secret-key") == SECRET


def test_several_references_and_text_around(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_USER", "app")
    monkeypatch.setenv("DB_PASSWORD", SECRET)
    config = load_configuration(
        dynamic=["spark.hadoop.db.url=jdbc:pg://${env:DB_USER}:${env:DB_PASSWORD}@db/x"]
    )
    assert config.get("spark.hadoop.db.url") == f"jdbc:pg://app:{SECRET}@db/x"
    assert "via ${env:DB_USER} ${env:DB_PASSWORD}" in str(
        config.entry("spark.hadoop.db.url").source
    )
    _nowhere(config, SECRET)


def test_references_in_list_items(conf_dir: MakeDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXTRA_JAR", "/opt/extra.jar")
    directory = conf_dir("config.yaml", "pipeline:\n  jars: [a.jar, '${env:EXTRA_JAR}']\n")
    assert load_configuration(directory).get("pipeline.jars") == ["a.jar", "/opt/extra.jar"]


def test_escaped_and_foreign_forms_stay_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X", "resolved")
    config = load_configuration(
        dynamic=[
            "spark.executor.extraJavaOptions=-Da=$${env:X} -Db=${X} -Dc=${sys:user.home}",
            "pipeline.name=${env:X}",
        ]
    )
    assert config.get("spark.executor.extraJavaOptions") == (
        "-Da=${env:X} -Db=${X} -Dc=${sys:user.home}"
    )
    assert config.entry("spark.executor.extraJavaOptions").source.reference is None
    assert config.get("pipeline.name") == "resolved"


def test_resolved_text_is_not_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER", "must-not-appear")
    (tmp_path / "pw").write_text("${env:OTHER}")
    config = load_configuration(dynamic=[f"s3.secret-key=${{file:{tmp_path / 'pw'}}}"])
    assert config.get("s3.secret-key") == "${env:OTHER}"
    again = Configuration.from_flat(config.to_flat(include_secrets=True))  # as in a driver
    assert again.get("s3.secret-key") == "${env:OTHER}"


def test_references_are_not_resolved_for_ignored_or_unknown_keys(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "security.ssl.rest.key-password: ${env:UNSET_1}\n")
    config = load_configuration(directory)  # ignored key: its reference is never read
    assert any("no meaning on Spark" in w for w in config.warnings)
    error = _error(dynamic=["paralelism.default=${env:UNSET_2}"])
    assert "unknown configuration key; did you mean parallelism.default?" in error.message


def test_referenced_value_of_an_ordinary_key_is_hidden_but_reaches_the_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CKPT", "/data/checkpoints-4711")
    config = load_configuration(dynamic=["execution.checkpointing.dir=${env:CKPT}"])
    assert config.entry("execution.checkpointing.dir").text == "******"
    # the job's driver needs it: it travels in the plan (which Spark's UI then hides)
    assert config.to_flat()["execution.checkpointing.dir"] == "/data/checkpoints-4711"
    regex = to_spark(config).conf["spark.redaction.regex"]
    assert regex.endswith(r"|^spark\.flinkish\.")
    _nowhere(config, "/data/checkpoints-4711")


def test_referenced_spark_setting_is_redacted_in_sparks_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSN", SECRET)
    translation = to_spark(load_configuration(dynamic=["spark.executorEnv.DSN=${env:DSN}"]))
    assert translation.conf["spark.executorEnv.DSN"] == SECRET
    assert "spark.executorEnv.DSN" in translation.secret_keys
    assert r"^spark\.executorEnv\.DSN$" in translation.conf["spark.redaction.regex"]
    assert translation.redacted()["spark.executorEnv.DSN"] == "******"


# -- problems: the key and the reference are named, never a value --------------------------------


def test_missing_environment_variable(conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "s3:\n  secret-key: ${env:FLINKISH_TEST_UNSET}\n")
    error = _error(directory)
    assert error.message == (
        f"{directory / 'config.yaml'}:2: s3.secret-key: the environment variable "
        "FLINKISH_TEST_UNSET (${env:FLINKISH_TEST_UNSET}) is not set."
    )
    assert (
        error.hint
        == "Export FLINKISH_TEST_UNSET before running flinkish, or set s3.secret-key another way."
    )


def test_invalid_variable_name() -> None:
    error = _error(dynamic=["s3.secret-key=${env:NOT-A NAME}"])
    assert error.message == (
        "-D: s3.secret-key: ${env:NOT-A NAME} is not a valid reference to an environment variable."
    )


@pytest.mark.parametrize("case", ["missing", "directory", "dangling", "empty", "huge", "binary"])
def test_unusable_file(tmp_path: Path, case: str) -> None:
    path = tmp_path / "secret"
    if case == "directory":
        path.mkdir()
    elif case == "dangling":
        path.symlink_to(tmp_path / "gone")
    elif case == "huge":
        path.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    elif case == "binary":
        path.write_bytes(b"\xff\xfe" + SECRET.encode())
    reference = "${file:}" if case == "empty" else f"${{file:{path}}}"
    error = _error(dynamic=[f"s3.secret-key={reference}"])
    assert error.message.startswith(
        f"-D: s3.secret-key: {reference}: " if case != "empty" else "-D"
    )
    expected = {
        "missing": f"the file {path} does not exist.",
        "directory": f"{path} is a directory, not a file.",
        "dangling": f"{path} is a symbolic link to a file that does not exist.",
        "empty": "${file:} names no file.",
        "huge": f"{path} is larger than 64 KiB.",
        "binary": f"{path} is not UTF-8 text.",
    }[case]
    assert error.message.endswith(expected)


def test_invalid_referenced_value_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARALLELISM", SECRET)
    error = _error(dynamic=["parallelism.default=${env:PARALLELISM}"])
    assert error.message == (
        "-D via ${env:PARALLELISM}: parallelism.default: '******' is not an integer; "
        "expected a whole number, e.g. 4"
    )


def test_deprecated_spelling_of_a_referenced_value_is_not_echoed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BACKEND", "filesystem")
    config = load_configuration(dynamic=["state.backend.type=${env:BACKEND}"])
    assert config.get("state.backend.type") == "hashmap"
    assert config.warnings == [
        "-D via ${env:BACKEND}: state.backend.type: '******' is deprecated; use hashmap instead."
    ]


def test_conflict_with_a_referenced_value_is_not_echoed(
    conf_dir: MakeDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIR", SECRET)
    text = "state.checkpoints.dir: ${env:DIR}\nexecution.checkpointing.dir: /b\n"
    error = _error(conf_dir("flink-conf.yaml", text))
    assert "execution.checkpointing.dir and state.checkpoints.dir (" in error.message
    assert "'/b'" not in error.message  # neither value of the pair


# -- secrets given with -D -----------------------------------------------------------------------


def test_plain_secret_with_d_warns_how_to_pass_it() -> None:
    config = load_configuration(dynamic=[f"s3.secret-key={SECRET}"])
    warning = next(w for w in config.warnings if "process list" in w)
    assert warning.startswith("-D: s3.secret-key is a secret given on the command line, where")
    assert "-D 's3.secret-key=${env:NAME}'" in warning
    assert "-D 's3.secret-key=${file:/path/to/file}'" in warning
    assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in warning
    assert SECRET not in " ".join(config.warnings)
    # the warning survives command flags added later (run -p ...)
    assert warning in config.with_overrides({"parallelism.default": "2"}).warnings


@pytest.mark.parametrize("key", ["spark.ssl.keyPassword", "s3.encryption.key", "fs.s3a.access.key"])
def test_every_secret_key_warns(key: str) -> None:
    config = load_configuration(dynamic=[f"{key}={SECRET}"])
    assert any(
        w.startswith(f"-D: {key} is a secret given on the command line") for w in config.warnings
    )
    _nowhere(config, SECRET)


def test_secret_in_the_file_or_by_reference_does_not_warn(
    conf_dir: MakeDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", SECRET)
    directory = conf_dir("flink-conf.yaml", f"s3.access-key: AK\ns3.secret-key: {SECRET}\n")
    assert load_configuration(directory).warnings == []
    config = load_configuration(dynamic=["s3.access-key=${env:K}", "s3.secret-key=${env:K}"])
    assert config.warnings == []


def test_empty_secret_with_d_hints_at_shell_quoting() -> None:
    # bash turns "s3.secret-key=${env:X}" (double quotes) into "s3.secret-key="
    config = load_configuration(dynamic=["s3.secret-key="])
    assert any("s3.secret-key is empty" in w and "single quotes" in w for w in config.warnings)


def test_plain_keys_with_d_do_not_warn() -> None:
    assert load_configuration(dynamic=["parallelism.default=2"]).warnings == []


def test_malformed_d_does_not_echo_a_secret() -> None:
    error = _error(dynamic=[f"s3.secret-key:{SECRET}"])
    assert error.message == "-D s3.secret-key ******: expected -D key=value."


def test_only_one_s3_key_warns(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("flink-conf.yaml", "s3.access-key: AK\n"))
    assert any(
        "s3.access-key is set but s3.secret-key is not: S3 needs both, or neither" in w
        for w in config.warnings
    )


# -- from the command line ------------------------------------------------------------------------


def test_flinkish_config_shows_no_resolved_value(tmp_path: Path, conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "s3:\n  secret-key: ${env:FLINKISH_S3_SECRET}\n")
    env = {**os.environ, "FLINKISH_S3_SECRET": SECRET, "AWS_DSN": SECRET}
    env.pop("FLINK_CONF_DIR", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "flinkish_cli",
            "config",
            "--conf-dir",
            str(directory),
            "-D",
            "spark.executorEnv.DSN=${env:AWS_DSN}",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    entries = {e["key"]: e for e in json.loads(result.stdout)}
    assert entries["s3.secret-key"]["value"] == "******"
    assert entries["s3.secret-key"]["source"].endswith(":2 via ${env:FLINKISH_S3_SECRET}")
    assert entries["spark.executorEnv.DSN"]["value"] == "******"
