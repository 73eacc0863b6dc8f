"""Reading configuration: directories, both YAML forms, precedence, aliases, round trips."""

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from flinkish_cli.config import ConfigEntry, Configuration, load_configuration, to_spark
from flinkish_cli.config.options import OPTIONS
from flinkish_cli.config.sources import Source
from flinkish_cli.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"

MakeDir = Callable[..., Path]

NESTED = """\
# the same settings as FLAT, in Flink 2's standard YAML
parallelism:
  default: 3
state:
  backend:
    type: RocksDB
execution:
  checkpointing:
    interval: 2 s
    dir: s3://bucket/checkpoints
    num-retained: 2
    incremental: true
    mode: AT_LEAST_ONCE
  runtime-mode: batch
taskmanager:
  numberOfTaskSlots: 4
  memory:
    process:
      size: 2g
    network:
      min: 32mb
      max: 512mb
pipeline:
  name: "my job"
  jars: [/opt/a.jar, /opt/b.jar]
restart-strategy:
  type: off
heartbeat:
  timeout: 1 min
s3:
  endpoint: http://minio:9000
  access-key: AKIA
  secret-key: hush
  path.style.access: true
python:
  files: a.py,b.zip
spark:
  sql.adaptive.enabled: false
io.tmp.dirs: [/data/a, /data/b]
"""

FLAT = """\
# the same settings as NESTED, in the legacy flat form
parallelism.default: 3
state.backend.type: RocksDB
execution.checkpointing.interval: 2 s
execution.checkpointing.dir: s3://bucket/checkpoints
execution.checkpointing.num-retained: 2
execution.checkpointing.incremental: true
execution.checkpointing.mode: AT_LEAST_ONCE
execution.runtime-mode: batch
taskmanager.numberOfTaskSlots: 4
taskmanager.memory.process.size: 2g
taskmanager.memory.network.min: 32mb
taskmanager.memory.network.max: 512mb
pipeline.name: my job
pipeline.jars: /opt/a.jar;/opt/b.jar
restart-strategy.type: off
heartbeat.timeout: 1 min
s3.endpoint: http://minio:9000
s3.access-key: AKIA
s3.secret-key: hush
s3.path.style.access: true
python.files: a.py,b.zip
spark.sql.adaptive.enabled: false
io.tmp.dirs: /data/a,/data/b
"""


def _comparable(config: Configuration) -> list[tuple[str, object, str, str, dict[str, str]]]:
    return [(e.key, e.value, e.text, e.status, e.spark) for e in config.entries()]


def test_both_yaml_forms_give_identical_results(conf_dir: MakeDir) -> None:
    nested = load_configuration(conf_dir("config.yaml", NESTED))
    flat = load_configuration(conf_dir("flink-conf.yaml", FLAT))
    assert _comparable(nested) == _comparable(flat)
    assert nested.to_flat(include_secrets=True) == flat.to_flat(include_secrets=True)
    assert to_spark(nested) == to_spark(flat)
    assert nested.warnings == flat.warnings == []
    assert nested.get("state.backend.type") == "rocksdb"
    assert nested.get("restart-strategy.type") == "disable"  # 'off' stays text, as in Flink
    assert nested.get("pipeline.name") == "my job"
    assert nested.get("pipeline.jars") == ["/opt/a.jar", "/opt/b.jar"]
    assert nested.get("io.tmp.dirs") == ["/data/a", "/data/b"]
    assert nested.get("execution.runtime-mode") == "BATCH"
    assert nested.get("spark.sql.adaptive.enabled") == "false"


def test_typed_values(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("config.yaml", NESTED))
    assert config.get("execution.checkpointing.interval") == timedelta(seconds=2)
    assert config.get("taskmanager.memory.process.size") == 2 << 30
    assert config.get("parallelism.default") == 3
    assert config.get("taskmanager.memory.network.fraction") == pytest.approx(0.1)
    assert config.get("execution.checkpointing.incremental") is True
    assert config.get("s3.path.style.access") is True
    assert config.get("execution.checkpointing.dir") == "s3://bucket/checkpoints"
    assert config.get("pipeline.max-parallelism") == -1
    assert config.get("python.requirements") is None  # no value, no default


def test_flink_2_default_config_loads(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    shutil.copy(FIXTURES / "flink-2-default-config.yaml", directory / "config.yaml")
    config = load_configuration(directory)
    assert config.source_file == directory / "config.yaml"
    assert config.get("parallelism.default") == 1
    assert config.get("taskmanager.numberOfTaskSlots") == 1
    assert config.get("jobmanager.memory.process.size") == 1600 << 20
    assert config.get("env.java.opts.all").startswith("--add-exports=java.base/sun.net.util")
    statuses = {e.key: e.status for e in config.entries()}
    for key in ("jobmanager.rpc.address", "jobmanager.bind-host", "taskmanager.host"):
        assert statuses[key] == "not-applicable"
        assert any(key in w and "no meaning on Spark" in w for w in config.warnings)
    assert statuses["rest.address"] == "runtime"  # the session cluster of target remote
    assert all("deprecated" not in w for w in config.warnings)
    translation = to_spark(config)
    assert translation.conf["spark.driver.memory"] == "1216m"
    assert translation.conf["spark.executor.extraJavaOptions"].startswith("--add-exports")


def test_flink_1_legacy_config_loads(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    shutil.copy(FIXTURES / "flink-1-conf.yaml", directory / "flink-conf.yaml")
    config = load_configuration(directory)
    assert config.get("state.backend.type") == "rocksdb"
    assert config.get("execution.checkpointing.dir") == "file:///tmp/flink-checkpoints"
    assert config.get("execution.checkpointing.savepoint-dir") == "file:///tmp/flink-savepoints"
    assert config.get("execution.checkpointing.num-retained") == 3
    assert config.get("execution.checkpointing.incremental") is True
    assert config.get("restart-strategy.type") == "fixed-delay"
    assert config.get("taskmanager.memory.network.max") == 1 << 30
    assert config.get("env.java.opts.all") == "-XX:+UseG1GC"
    renamed = {
        "state.backend": "state.backend.type",
        "state.checkpoints.dir": "execution.checkpointing.dir",
        "state.savepoints.dir": "execution.checkpointing.savepoint-dir",
        "state.checkpoints.num-retained": "execution.checkpointing.num-retained",
        "restart-strategy": "restart-strategy.type",
        "taskmanager.network.memory.fraction": "taskmanager.memory.network.fraction",
        "env.java.opts": "env.java.opts.all",
    }
    for old, new in renamed.items():
        assert any(f"{old} is deprecated; use {new}" in w for w in config.warnings), old


def test_config_yaml_wins_over_flink_conf_yaml(conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "parallelism:\n  default: 5\n")
    conf_dir("flink-conf.yaml", "parallelism.default: 7\n", directory=directory)
    config = load_configuration(directory)
    assert config.get("parallelism.default") == 5
    assert config.source_file == directory / "config.yaml"
    assert any("flink-conf.yaml is ignored" in w for w in config.warnings)


def test_directory_without_files_gives_defaults(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    config = load_configuration(directory)
    assert config.conf_dir == directory.resolve()
    assert config.source_file is None
    assert config.get("parallelism.default") == 1
    assert config.get("state.backend.type") == "hashmap"


def test_missing_implicit_conf_dir_gives_defaults() -> None:
    config = load_configuration()
    assert config.conf_dir is None
    assert config.source_file is None
    assert config.warnings == []


def test_implicit_conf_dir_is_read(isolated: Path) -> None:
    (isolated / "conf").mkdir()
    (isolated / "conf" / "flink-conf.yaml").write_text("parallelism.default: 6\n")
    config = load_configuration()
    assert config.get("parallelism.default") == 6
    assert str(config.entry("parallelism.default").source) == "conf/flink-conf.yaml:1"


@pytest.mark.parametrize("how", ["argument", "env"])
def test_named_directory_must_exist(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope"
    if how == "env":
        monkeypatch.setenv("FLINK_CONF_DIR", str(missing))
    with pytest.raises(ConfigError) as error:
        load_configuration(missing if how == "argument" else None)
    assert str(missing) in error.value.message
    assert ("FLINK_CONF_DIR" if how == "env" else "--conf-dir") in error.value.message


def test_flink_conf_dir_wins_over_argument(
    conf_dir: MakeDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_env = conf_dir("flink-conf.yaml", "parallelism.default: 8\n")
    from_arg = conf_dir("flink-conf.yaml", "parallelism.default: 9\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(from_env))
    assert load_configuration(from_arg).get("parallelism.default") == 8


def test_precedence_default_file_dynamic_flag(conf_dir: MakeDir) -> None:
    directory = conf_dir(
        "flink-conf.yaml",
        "parallelism.default: 2\nexecution.target: remote\npipeline.name: file\n",
    )
    config = load_configuration(
        directory,
        dynamic=["parallelism.default=3", "pipeline.name=dyn", "pipeline.name=dyn2"],
        flags={"parallelism.default": "4"},
    )
    assert config.get("parallelism.default") == 4
    assert str(config.entry("parallelism.default").source) == "flag -p"
    assert config.get("pipeline.name") == "dyn2"  # the later -D wins
    assert str(config.entry("pipeline.name").source) == "-D"
    assert config.get("execution.target") == "remote"
    assert config.entry("execution.target").source.kind == "file"
    assert config.get("heartbeat.interval") == timedelta(seconds=10)
    assert str(config.entry("heartbeat.interval").source) == "default"


def test_current_key_wins_over_deprecated_alias_with_the_same_value(conf_dir: MakeDir) -> None:
    text = "state.backend.type: rocksdb\nstate.backend: RocksDB\n"
    config = load_configuration(conf_dir("flink-conf.yaml", text))
    assert config.get("state.backend.type") == "rocksdb"
    assert config.get("state.backend") == "rocksdb"  # get accepts the old name
    assert str(config.entry("state.backend.type").source).endswith("flink-conf.yaml:1")
    assert any("state.backend is ignored" in w for w in config.warnings)


def test_dynamic_alias_beats_file_key(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "execution.checkpointing.dir: /a\n")
    config = load_configuration(directory, dynamic=["state.checkpoints.dir=/b"])
    assert config.get("execution.checkpointing.dir") == "/b"
    assert any("-D: state.checkpoints.dir is deprecated" in w for w in config.warnings)


def test_deprecated_enum_value_warns(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("flink-conf.yaml", "state.backend: filesystem\n"))
    assert config.get("state.backend.type") == "hashmap"
    assert any("'filesystem' is deprecated; use hashmap" in w for w in config.warnings)


def test_legacy_parser_rules(conf_dir: MakeDir) -> None:
    text = (
        "pipeline.name: a # comment\n"
        "parallelism.default:4\n"  # no ': ' -> skipped, like Flink
        "execution.target: local\n"
        "execution.target: remote\n"  # later line wins
        "pipeline.jars: 'quoted.jar'\n"  # quotes are kept
        "   \n"
        "# heartbeat.interval: 1 s\n"
    )
    config = load_configuration(conf_dir("flink-conf.yaml", text))
    assert config.get("pipeline.name") == "a"
    assert config.get("parallelism.default") == 1
    assert config.get("execution.target") == "remote"
    assert config.get("pipeline.jars") == ["'quoted.jar'"]
    assert any(":2: not a 'key: value' line" in w for w in config.warnings)
    assert any("execution.target is also set on line 3; line 4 wins" in w for w in config.warnings)


def test_legacy_hash_cuts_the_value_with_a_warning(conf_dir: MakeDir) -> None:
    text = "python.archives: venv.tar.gz#venv\npipeline.name: job # a comment\n"
    config = load_configuration(conf_dir("flink-conf.yaml", text))
    assert config.get("python.archives") == ["venv.tar.gz"]  # as Flink's legacy parser reads it
    assert config.get("pipeline.name") == "job"
    cut = [w for w in config.warnings if "starts a comment" in w]
    assert len(cut) == 1 and ":1: python.archives ends at '#'" in cut[0]
    nested = load_configuration(
        conf_dir("config.yaml", "python:\n  archives: 'venv.tar.gz#venv'\n")
    )
    assert nested.get("python.archives") == ["venv.tar.gz#venv"]


def test_yaml_null_value_is_ignored_with_warning(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("config.yaml", "pipeline:\n  name:\n"))
    assert config.get("pipeline.name") is None
    assert any("pipeline.name has no value" in w for w in config.warnings)


def test_empty_yaml_file(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("config.yaml", "# nothing\n"))
    assert config.keys() == []


def test_line_numbers_in_both_forms(conf_dir: MakeDir) -> None:
    nested = load_configuration(conf_dir("config.yaml", NESTED))
    flat = load_configuration(conf_dir("flink-conf.yaml", FLAT))
    assert nested.entry("execution.checkpointing.interval").source.line == 9
    assert flat.entry("execution.checkpointing.interval").source.line == 4
    assert nested.entry("spark.sql.adaptive.enabled").source.line == 38


def test_get_unknown_key_raises_key_error() -> None:
    config = load_configuration()
    with pytest.raises(KeyError):
        config.get("no.such.key")
    with pytest.raises(KeyError):
        config.get("jobmanager.rpc.address")  # known to Flink, meaningless here, unset
    assert config.get("spark.master") is None


def test_entries_are_sorted_and_complete(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("config.yaml", NESTED))
    entries = config.entries()
    keys = [e.key for e in entries]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys))
    assert all(isinstance(e, ConfigEntry) for e in entries)
    with_default = {o.key for o in OPTIONS if o.default is not None or o.default_fn}
    assert with_default <= set(keys)
    assert set(config.keys()) <= set(keys)
    assert {e.status for e in entries} <= {
        "mapped",
        "approximate",
        "runtime",
        "not-applicable",
        "passthrough",
    }
    assert {e.source.kind for e in entries} <= {"default", "file", "dynamic", "flag"}


def test_config_entry_is_frozen() -> None:
    entry = load_configuration().entries()[0]
    with pytest.raises(AttributeError):
        entry.key = "x"  # type: ignore[misc]


def test_flat_round_trip(conf_dir: MakeDir) -> None:
    config = load_configuration(
        conf_dir("config.yaml", NESTED),
        dynamic=["state.backend=hashmap"],
        flags={"parallelism.default": "5"},
    )
    flat = config.to_flat(include_secrets=True)
    assert flat["state.backend.type"] == "hashmap"  # canonical key, value as written
    assert flat["parallelism.default"] == "5"
    copy = Configuration.from_flat(flat)
    assert copy.to_flat(include_secrets=True) == flat
    for entry in config.entries():
        assert copy.get(entry.key) == config.get(entry.key), entry.key
    assert to_spark(copy) == to_spark(config)


def test_to_flat_leaves_out_secrets_and_not_applicable_keys(conf_dir: MakeDir) -> None:
    config = load_configuration(
        conf_dir("config.yaml", NESTED + "rest:\n  client:\n    max-content-length: 8081\n"),
        dynamic=["fs.s3a.bucket.b.secret.key=x", "spark.ssl.keyPassword=y"],
    )
    flat = config.to_flat()
    assert "s3.secret-key" not in flat
    assert "s3.access-key" not in flat
    assert "fs.s3a.bucket.b.secret.key" not in flat
    assert "spark.ssl.keyPassword" not in flat
    assert "rest.client.max-content-length" not in flat
    assert flat["s3.endpoint"] == "http://minio:9000"
    full = config.to_flat(include_secrets=True)
    assert full["s3.secret-key"] == "hush"
    assert full["spark.ssl.keyPassword"] == "y"


def test_with_overrides_adds_a_flag_layer(conf_dir: MakeDir) -> None:
    config = load_configuration(conf_dir("flink-conf.yaml", "parallelism.default: 2\n"))
    changed = config.with_overrides({"parallelism.default": "6", "execution.target": "remote"})
    assert config.get("parallelism.default") == 2
    assert changed.get("parallelism.default") == 6
    assert str(changed.entry("execution.target").source) == "flag -t"
    assert changed.source_file == config.source_file
    assert changed.conf_dir == config.conf_dir
    assert changed.with_overrides({"parallelism.default": "7"}).get("parallelism.default") == 7


def test_home_defaults_are_absolute(isolated: Path) -> None:
    config = load_configuration()
    home = Path.home()
    assert config.get("execution.checkpointing.dir") == str(home / ".flinkish" / "checkpoints")
    assert config.get("execution.checkpointing.savepoint-dir") == str(
        home / ".flinkish" / "savepoints"
    )
    assert config.get("env.log.dir") == str(home / ".flinkish" / "log")


def test_local_paths_are_expanded(isolated: Path) -> None:
    config = load_configuration(dynamic=["execution.checkpointing.dir=~/ckpt", "env.log.dir=logs"])
    assert config.get("execution.checkpointing.dir") == str(Path.home() / "ckpt")
    assert config.get("env.log.dir") == str(isolated / "logs")
    assert config.to_flat()["execution.checkpointing.dir"] == "~/ckpt"


def test_restart_strategy_default_follows_checkpointing() -> None:
    assert load_configuration().get("restart-strategy.type") == "disable"
    with_interval = load_configuration(dynamic=["execution.checkpointing.interval=5 s"])
    assert with_interval.get("restart-strategy.type") == "exponential-delay"


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("none", "disable"),
        ("OFF", "disable"),
        ("disable", "disable"),
        ("fixeddelay", "fixed-delay"),
        ("Fixed-Delay", "fixed-delay"),
        ("failurerate", "failure-rate"),
        ("exponentialdelay", "exponential-delay"),
    ],
)
def test_restart_strategy_spellings(written: str, canonical: str) -> None:
    config = load_configuration(dynamic=[f"restart-strategy.type={written}"])
    assert config.get("restart-strategy.type") == canonical


def test_source_strings() -> None:
    assert str(Source("default")) == "default"
    assert str(Source("file", "conf/flink-conf.yaml", 12)) == "conf/flink-conf.yaml:12"
    assert str(Source("dynamic")) == "-D"
    assert str(Source("flag", flag="-p")) == "flag -p"


def test_incremental_with_hashmap_warns() -> None:
    config = load_configuration(dynamic=["execution.checkpointing.incremental=true"])
    assert any("no effect with the hashmap state backend" in w for w in config.warnings)


def test_s3a_spellings_are_synonyms() -> None:
    config = load_configuration(
        dynamic=["fs.s3a.access.key=AK", "s3.path-style-access=true", "s3.endpoint.region=eu"]
    )
    assert config.get("s3.access-key") == "AK"
    assert config.get("s3.path.style.access") is True
    assert config.get("s3.region") == "eu"
    assert [w for w in config.warnings if "process list" not in w and "needs both" not in w] == []
