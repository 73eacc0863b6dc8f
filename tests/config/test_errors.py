"""Bad configuration: one ConfigError naming where, which key, which value, what was expected."""

from collections.abc import Callable
from pathlib import Path

import pytest

from flinkish_cli.config import load_configuration
from flinkish_cli.errors import ConfigError

MakeDir = Callable[..., Path]


def _error(*args: object, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_configuration(*args, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert "\n" not in error.message, "the message is one line"
    assert "Traceback" not in str(error)
    return error


@pytest.mark.parametrize("form", ["flat", "nested"])
@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "execution.checkpointing.interval",
            "10 parsecs",
            "is not a duration; expected e.g. 10 s, 500 ms, 1 min",
        ),
        ("taskmanager.memory.process.size", "lots", "is not a memory size; expected e.g. 128 mb"),
        ("parallelism.default", "four", "is not an integer; expected a whole number"),
        ("parallelism.default", "0", "is out of range; expected an integer ≥ 1"),
        ("state.backend.type", "memory", "is not a valid value; expected one of hashmap, rocksdb"),
        ("execution.attached", "yes", "is not a boolean; expected true or false"),
        ("taskmanager.memory.network.fraction", "1.5", "is out of range; expected a fraction"),
        (
            "restart-strategy.exponential-delay.backoff-multiplier",
            "0.5",
            "is out of range; expected a number ≥ 1.0",
        ),
        ("restart-strategy.exponential-delay.jitter-factor", "2", "is out of range"),
        ("restart-strategy.fixed-delay.attempts", "-1", "is out of range; expected an integer ≥ 0"),
        ("jobmanager.memory.process.size", "256m", "is out of range; expected a size ≥ 1 gb"),
        ("heartbeat.interval", "0 s", "is out of range; expected a duration above 0"),
        ("execution.checkpointing.interval", "5 ms", "is out of range; expected 0 or a duration"),
        ("pipeline.max-parallelism", "40000", "is out of range; expected -1 (automatic)"),
        ("metrics.reporter.prom.port", "http", "is out of range; expected a port or a range"),
        ("execution.target", "yarn-per-job", "is not a valid value; expected one of local"),
    ],
)
def test_bad_value_names_file_line_key_value_and_form(
    conf_dir: MakeDir, form: str, key: str, value: str, expected: str
) -> None:
    if form == "flat":
        text, name, line = f"# header\n\n{key}: {value}\n", "flink-conf.yaml", 3
    else:
        head, leaf = key.rsplit(".", 1)
        text, name, line = f"# header\n{head}:\n  {leaf}: '{value}'\n", "config.yaml", 3
    directory = conf_dir(name, text)
    error = _error(directory)
    assert error.message.startswith(f"{directory / name}:{line}: {key}: '{value}' {expected}")
    assert error.hint and "Fix the value" in error.hint


def test_bad_dynamic_value_names_d(conf_dir: MakeDir) -> None:
    error = _error(dynamic=["heartbeat.timeout=soon"])
    assert error.message.startswith("-D: heartbeat.timeout: 'soon' is not a duration; expected")


def test_bad_flag_value_names_the_flag() -> None:
    error = _error(flags={"parallelism.default": "0"})
    assert error.message.startswith("flag -p: parallelism.default: '0' is out of range")


@pytest.mark.parametrize("item", ["foo", "=x", ""])
def test_malformed_dynamic_property(item: str) -> None:
    error = _error(dynamic=[item])
    assert error.message.startswith("-D ")
    assert "expected -D key=value" in error.message
    if item == "foo":
        assert "-D foo:" in error.message


def test_unknown_key_with_did_you_mean(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "parallelism.default: 2\nparalelism.default: 4\n")
    error = _error(directory)
    assert "flink-conf.yaml:2: paralelism.default: unknown configuration key" in error.message
    assert "did you mean parallelism.default?" in error.message


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("execution.checkpointing.intervall", "execution.checkpointing.interval"),
        ("taskmanager.numberOfTaskSlot", "taskmanager.numberOfTaskSlots"),
        ("state.backend.typ", "state.backend.type"),
        ("heartbeat.timout", "heartbeat.timeout"),
        ("restart-strategy.fixed-delay.attempt", "restart-strategy.fixed-delay.attempts"),
    ],
)
def test_near_misses_are_errors(key: str, suggestion: str) -> None:
    error = _error(dynamic=[f"{key}=1"])
    assert error.message.startswith(f"-D: {key}: unknown configuration key")
    assert f"did you mean {suggestion}?" in error.message


def test_unknown_key_far_from_everything() -> None:
    error = _error(dynamic=["zzz.qqq=1"])
    assert error.message == "-D: zzz.qqq: unknown configuration key"


@pytest.mark.parametrize(
    "key",
    [
        "jobmanager.rpc.address",
        "rest.client.max-content-length",
        "high-availability.type",
        "blob.server.port",
        "web.upload.dir",
        "kubernetes.cluster-id",
        "yarn.tags",
        "security.kerberos.login.keytab",
        "pekko.ask.timeout",
        "taskmanager.memory.managed.fraction",
        "jobmanager.execution.failover-strategy",
        "execution.checkpointing.unaligned.enabled",
        "state.backend.rocksdb.thread.num",
        "metrics.reporter.jmx.factory.class",
        "historyserver.web.port",
        "cluster.evenly-spread-out-slots",
        "env.pid.dir",
    ],
)
def test_not_applicable_keys_warn_never_fail(key: str) -> None:
    config = load_configuration(dynamic=[f"{key}=x"])
    assert config.entry(key).status == "not-applicable"
    assert any(key in w and "no meaning on Spark" in w for w in config.warnings)


REAL_FLINK_KEYS = """
taskmanager.memory.managed.consumer-weights taskmanager.memory.min-segment-size
taskmanager.network.memory.buffers-per-channel taskmanager.data.port taskmanager.cpu.cores
taskmanager.memory.framework.off-heap.batch-shuffle.size taskmanager.load-balance.mode
jobmanager.adaptive-scheduler.min-parallelism-increase jobmanager.io-pool.size
jobmanager.memory.heap.size jobmanager.memory.jvm-overhead.fraction jobmanager.resource-id
env.java.opts.client env.hadoop.conf.dir env.pid.dir env.java.default-opts.all
state.backend.rocksdb.thread.num state.backend.rocksdb.log.dir state.backend.rocksdb.log.level
state.backend.rocksdb.compaction.level.use-dynamic-size state.backend.rocksdb.use-bloom-filter
state.backend.rocksdb.writebuffer.number-to-merge state.backend.rocksdb.block.metadata-blocksize
state.backend.rocksdb.timer-service.cache-size state.backend.rocksdb.compression.per.level
state.backend.latency-track.keyed-state-enabled state.checkpoint.cleaner.parallel-mode
execution.checkpointing.interval-during-backlog execution.checkpointing.unaligned.forced
execution.checkpointing.file-merging.enabled execution.checkpointing.data-inline-threshold
execution.checkpointing.max-concurrent-checkpoints execution.checkpointing.local-backup.dirs
execution.state-recovery.path execution.state-recovery.claim-mode execution.batch-shuffle-mode
pipeline.auto-watermark-interval pipeline.classpaths pipeline.object-reuse pipeline.force-kryo
pipeline.operator-chaining.enabled pipeline.global-job-parameters pipeline.cached-files
python.fn-execution.bundle.size python.pythonpath python.execution-mode python.metric.enabled
""".split()  # noqa: SIM905 (a block of keys reads better than a list)


@pytest.mark.parametrize("key", REAL_FLINK_KEYS)
def test_real_flink_keys_are_not_mistaken_for_typos(key: str) -> None:
    config = load_configuration(dynamic=[f"{key}=1"])
    assert config.entry(key).status == "not-applicable"


def test_malformed_yaml_names_file_line_and_column(conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "parallelism:\n  default: 1\n bad: [1, 2\n")
    error = _error(directory)
    assert "config.yaml:" in error.message
    assert "not valid YAML" in error.message
    location = error.message.split(": not valid YAML")[0]
    line, column = location.rsplit(":", 2)[-2:]
    assert line.isdigit() and column.isdigit()


def test_yaml_tab_indentation(conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "parallelism:\n\tdefault: 1\n")
    error = _error(directory)
    assert "config.yaml:2:1: not valid YAML" in error.message


def test_yaml_root_must_be_a_mapping(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", "- a\n- b\n"))
    assert "config.yaml:1: expected configuration keys and values" in error.message


def test_yaml_duplicate_key(conf_dir: MakeDir) -> None:
    text = "parallelism:\n  default: 1\nparallelism.default: 2\n"
    error = _error(conf_dir("config.yaml", text))
    assert error.message.endswith(
        "config.yaml:3: parallelism.default is set twice to different values: "
        "'2' here and '1' on line 2 (as 'parallelism: default:')."
    )


def test_yaml_list_for_a_scalar_key(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", "parallelism:\n  default: [1, 2]\n"))
    assert "config.yaml:2: parallelism.default: '1,2' is a list; expected a single value" in (
        error.message
    )


def test_network_min_above_max_names_both(conf_dir: MakeDir) -> None:
    text = "taskmanager.memory.network.min: 2gb\ntaskmanager.memory.network.max: 1gb\n"
    directory = conf_dir("flink-conf.yaml", text)
    error = _error(directory)
    assert "flink-conf.yaml:2: taskmanager.memory.network.min (2gb, " in error.message
    assert "flink-conf.yaml:1) is larger than taskmanager.memory.network.max (1gb" in (
        error.message
    )
    assert "expected taskmanager.memory.network.min ≤ taskmanager.memory.network.max" in (
        error.message
    )


def test_network_min_above_default_max_is_fine() -> None:
    config = load_configuration(dynamic=["taskmanager.memory.network.min=2gb"])
    assert config.get("taskmanager.memory.network.min") == 2 * 1024**3
    assert config.warnings == []


def test_heartbeat_timeout_must_exceed_interval() -> None:
    error = _error(dynamic=["heartbeat.interval=60 s"])
    assert "heartbeat.timeout (50 s, default) is not larger than heartbeat.interval (60 s, -D)" in (
        error.message
    )


def test_max_parallelism_below_parallelism() -> None:
    error = _error(dynamic=["pipeline.max-parallelism=2"], flags={"parallelism.default": "4"})
    assert error.message.startswith("flag -p: pipeline.max-parallelism (2, -D) is smaller than")


def test_backoff_bounds() -> None:
    error = _error(dynamic=["restart-strategy.exponential-delay.initial-backoff=2 min"])
    assert "initial-backoff ≤ max-backoff" in error.message


def test_secret_values_never_in_errors(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", "s3:\n  secret-key: [hunter2, x]\n"))
    assert "hunter2" not in str(error)
    assert "'******' is a list" in error.message
    error = _error(dynamic=["s3.path.style.access=maybe", "spark.x.password=hunter2", "bad"])
    assert "hunter2" not in str(error)


def test_secret_in_unknown_key_line_not_echoed(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "s3.secret-key:hunter2\n")
    config = load_configuration(directory)
    assert all("hunter2" not in w for w in config.warnings)
    assert config.warnings  # the malformed line is reported, without its text


def test_unreadable_encoding(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    (directory / "flink-conf.yaml").write_bytes(b"pipeline.name: \xff\xfe\n")
    error = _error(directory)
    assert "not UTF-8" in error.message


def test_conf_dir_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "flink-conf.yaml"
    target.write_text("parallelism.default: 1\n")
    error = _error(target)
    assert "is not a directory" in error.message
