"""Damaged or hostile configuration files: one clear ConfigError each, never a crash or a hang.

Every case writes a real file (or directory, link, pipe) on disk and loads it as a user's
``--conf-dir`` would be loaded.
"""

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from flinkish_cli.config import load_configuration, loader, yamlnodes
from flinkish_cli.config.notices import MAX_WARNINGS
from flinkish_cli.errors import ConfigError

MakeDir = Callable[..., Path]


def _error(directory: Path, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_configuration(directory, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert "\n" not in error.message, "the message is one line"
    assert error.hint, "the message says what to do"
    return error


# -- the file itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["config.yaml", "flink-conf.yaml"])
def test_file_that_is_a_directory(conf_dir: MakeDir, name: str) -> None:
    directory = conf_dir()
    (directory / name).mkdir()
    (directory / name / "parallelism.default").write_text("2")
    error = _error(directory)
    assert error.message == f"{directory / name} is a directory, not a configuration file."


@pytest.mark.parametrize("name", ["config.yaml", "flink-conf.yaml"])
def test_dangling_symbolic_link(conf_dir: MakeDir, tmp_path: Path, name: str) -> None:
    directory = conf_dir()
    (directory / name).symlink_to(tmp_path / "gone.yaml")
    error = _error(directory)
    assert error.message == (
        f"{directory / name} is a symbolic link to {tmp_path / 'gone.yaml'}, which does not exist."
    )
    assert "Point the link" in (error.hint or "")


def test_symbolic_link_to_a_file_is_read(conf_dir: MakeDir, tmp_path: Path) -> None:
    target = tmp_path / "shared.yaml"
    target.write_text("parallelism.default: 3\n")
    directory = conf_dir()
    (directory / "flink-conf.yaml").symlink_to(target)
    assert load_configuration(directory).get("parallelism.default") == 3


def test_symbolic_link_loop(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    (directory / "config.yaml").symlink_to(directory / "loop.yaml")
    (directory / "loop.yaml").symlink_to(directory / "config.yaml")
    error = _error(directory)
    assert error.message.startswith(f"{directory / 'config.yaml'} cannot be read: ")


def test_named_pipe_is_refused_without_blocking(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    os.mkfifo(directory / "flink-conf.yaml")  # reading it would block forever
    error = _error(directory)
    assert error.message == f"{directory / 'flink-conf.yaml'} is not a regular file."


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "parallelism.default: 2\n")
    (directory / "flink-conf.yaml").chmod(0)
    error = _error(directory)
    assert "cannot be read: Permission denied" in error.message
    assert "chmod" in (error.hint or "")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_file_whose_read_fails(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    (directory / "config.yaml").symlink_to("/proc/self/mem")  # a regular file; reading fails
    error = _error(directory)
    assert error.message == f"{directory / 'config.yaml'} cannot be read: Input/output error."


def test_broken_legacy_file_is_ignored_beside_a_good_config_yaml(conf_dir: MakeDir) -> None:
    directory = conf_dir("config.yaml", "parallelism:\n  default: 2\n")
    (directory / "flink-conf.yaml").mkdir()
    assert load_configuration(directory).get("parallelism.default") == 2


@pytest.mark.parametrize("name", ["config.yaml", "flink-conf.yaml"])
def test_huge_file_is_refused_before_parsing(conf_dir: MakeDir, name: str) -> None:
    directory = conf_dir()
    line = b"pipeline.name: " + b"x" * 80 + b"\n"
    (directory / name).write_bytes(line * (loader.MAX_FILE_BYTES // len(line) + 1))
    error = _error(directory)
    assert error.message.startswith(f"{directory / name} is larger than 1 MiB")


@pytest.mark.parametrize(
    ("name", "data", "line"),
    [
        ("flink-conf.yaml", b"parallelism.default: 2\npipeline.name: caf\xe9\n", 2),
        ("config.yaml", b"pipeline:\n  name: x\n\n  jars: \xff\xfe\n", 4),
        ("config.yaml", b"\xfe\xff\x00p\x00a", 1),
    ],
)
def test_bytes_that_are_not_utf8(conf_dir: MakeDir, name: str, data: bytes, line: int) -> None:
    directory = conf_dir()
    (directory / name).write_bytes(data)
    error = _error(directory)
    assert error.message.startswith(f"{directory / name}:{line}: not UTF-8 text (byte ")
    assert error.hint == "Save the configuration file as UTF-8."


def test_utf8_byte_order_mark_is_accepted(conf_dir: MakeDir) -> None:
    directory = conf_dir()
    (directory / "flink-conf.yaml").write_bytes(b"\xef\xbb\xbfparallelism.default: 2\n")
    assert load_configuration(directory).get("parallelism.default") == 2


# -- what the YAML holds -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [("- a\n- b\n", "a list"), ("just text\n", "a single value"), ("'4'\n", "a single value")],
)
def test_document_that_is_not_a_mapping(conf_dir: MakeDir, text: str, found: str) -> None:
    error = _error(conf_dir("config.yaml", text))
    assert error.message.endswith(
        f"config.yaml:1: expected configuration keys and values (a YAML mapping), found {found}."
    )


def test_recursive_alias(conf_dir: MakeDir) -> None:
    text = "pipeline:\n  name: job\n  jars: &jars [a.jar, *jars]\n"
    error = _error(conf_dir("config.yaml", text))
    assert error.message.endswith(
        "config.yaml:3: the alias *jars refers to a value that contains it (a recursive alias)."
    )


def test_recursive_alias_in_a_mapping(conf_dir: MakeDir) -> None:
    text = "state: &s\n  backend:\n    type: rocksdb\n    again: *s\n"
    error = _error(conf_dir("config.yaml", text))
    assert "config.yaml:4: the alias *s refers to a value that contains it" in error.message


def _laughs(levels: int, width: int = 10) -> str:
    lines = ["lol0: &lol0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*lol{level - 1}"] * width)
        lines.append(f"lol{level}: &lol{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_before_expanding(conf_dir: MakeDir) -> None:
    # 10^9 values once expanded; refused from the sizes alone (it would take hours to walk)
    directory = conf_dir("config.yaml", _laughs(9))
    started = time.perf_counter()
    error = _error(directory)
    elapsed = time.perf_counter() - started
    print(f"billion laughs refused in {elapsed * 1000:.1f} ms")
    assert "holds more than 100,000 values once its YAML aliases are expanded" in error.message
    assert "config.yaml:5:" in error.message  # lol4 (10^5 values) is the first over the bound


def test_mapping_aliases_multiply_too(conf_dir: MakeDir) -> None:
    text = "a: &a {x: 1, y: 2, z: 3, w: 4, v: 5, u: 6, t: 7, s: 8, r: 9, q: 0}\n"
    for level in range(1, 7):
        keys = ", ".join(f"k{i}: *{'a' if level == 1 else f'l{level - 1}'}" for i in range(10))
        text += f"l{level}: &l{level} {{{keys}}}\n"
    error = _error(conf_dir("config.yaml", text))
    assert "values once its YAML aliases are expanded" in error.message


def test_a_few_aliases_are_fine(conf_dir: MakeDir) -> None:
    text = (
        "execution:\n  checkpointing:\n    dir: &ckpt /data/checkpoints\n"
        "    savepoint-dir: *ckpt\npipeline:\n  jars: &jars [a.jar, b.jar]\n"
        "python:\n  files: *jars\n"
    )
    config = load_configuration(conf_dir("config.yaml", text))
    assert config.get("execution.checkpointing.savepoint-dir") == "/data/checkpoints"
    assert config.get("python.files") == ["a.jar", "b.jar"]


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting(conf_dir: MakeDir, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    depth = 200_000  # PyYAML's own composer would crash or take minutes on this
    text = "pipeline.jars: " + opener * depth + closer * depth + "\n"
    error = _error(conf_dir("config.yaml", text))
    ours = f"config.yaml:1: nests values more than {yamlnodes.MAX_DEPTH} levels deep."
    # PyYAML 6.0.4's scanner refuses it first, with its own one-line message and position
    pyyamls = "config.yaml:1:1015: not valid YAML: exceeded maximum nesting depth"
    assert error.message.endswith(ours) or pyyamls in error.message, error.message


def test_deep_nesting_through_an_alias(conf_dir: MakeDir) -> None:
    half = yamlnodes.MAX_DEPTH // 2 + 1
    text = "a: &deep " + "[" * half + "]" * half + "\n"
    text += "b: " + "[" * half + "*deep" + "]" * half + "\n"
    error = _error(conf_dir("config.yaml", text))
    assert "config.yaml:2: nests values more than" in error.message


def test_undefined_alias(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", "parallelism:\n  default: *p\n"))
    assert "config.yaml:2: the alias *p refers to no anchor &p before it" in error.message


def test_two_documents(conf_dir: MakeDir) -> None:
    text = "parallelism.default: 2\n---\nparallelism.default: 3\n"
    error = _error(conf_dir("config.yaml", text))
    assert "config.yaml:2: holds more than one YAML document" in error.message


def test_merge_key(conf_dir: MakeDir) -> None:
    text = "base: &b {name: x}\npipeline:\n  <<: *b\n"
    error = _error(conf_dir("config.yaml", text))
    assert "config.yaml:3: YAML merge keys ('<<') are not supported" in error.message


# -- nested values where a single value belongs ------------------------------------------------


def test_mapping_where_a_value_belongs(conf_dir: MakeDir) -> None:
    text = "parallelism:\n  default:\n    value: 4\n"
    error = _error(conf_dir("config.yaml", text))
    assert error.message.endswith(
        "config.yaml:3: parallelism.default.value: parallelism.default takes a single value, "
        "not nested keys."
    )


def test_flat_key_below_a_single_value_key(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("flink-conf.yaml", "pipeline.name.first: a\n"))
    assert "pipeline.name.first: pipeline.name takes a single value" in error.message


def test_mapping_nesting_below_a_parent_key_is_fine(conf_dir: MakeDir) -> None:
    # state.backend is itself a (deprecated) key, and the parent of state.backend.type
    text = "state:\n  backend:\n    type: rocksdb\nenv:\n  java:\n    opts:\n      all: -Da=1\n"
    config = load_configuration(conf_dir("config.yaml", text))
    assert config.get("state.backend.type") == "rocksdb"
    assert config.get("env.java.opts.all") == "-Da=1"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("[a.jar, [b.jar, c.jar]]", "item 2 is a list ('[b.jar, c.jar]')"),
        ("[{path: b.jar}]", "item 1 is a map ('{path: b.jar}')"),
    ],
)
def test_list_or_map_inside_a_list(conf_dir: MakeDir, value: str, problem: str) -> None:
    error = _error(conf_dir("config.yaml", f"pipeline:\n  jars: {value}\n"))
    assert f"config.yaml:2: pipeline.jars: {problem}; expected plain values" in error.message


def test_list_for_a_single_value(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", "execution:\n  target: [local, remote]\n"))
    assert "execution.target: 'local,remote' is a list; expected a single value" in error.message


def test_nested_list_in_an_ignored_key_is_ignored(conf_dir: MakeDir) -> None:
    text = "kubernetes:\n  tolerations: [[a, b]]\n"
    config = load_configuration(conf_dir("config.yaml", text))
    assert any("kubernetes.tolerations has no meaning on Spark" in w for w in config.warnings)


# -- one key given twice -----------------------------------------------------------------------


def test_flat_and_nested_forms_with_different_values(conf_dir: MakeDir) -> None:
    text = (
        "execution:\n  checkpointing:\n    interval: 10 s\nexecution.checkpointing.interval: 20 s\n"
    )
    error = _error(conf_dir("config.yaml", text))
    assert error.message.endswith(
        "config.yaml:4: execution.checkpointing.interval is set twice to different values: "
        "'20 s' here and '10 s' on line 3 (as 'execution: checkpointing: interval:')."
    )


def test_flat_and_nested_forms_with_the_same_value_warn(conf_dir: MakeDir) -> None:
    text = "parallelism:\n  default: 2\nparallelism.default: 2\n"
    config = load_configuration(conf_dir("config.yaml", text))
    assert config.get("parallelism.default") == 2
    assert any(
        "config.yaml:3: parallelism.default is set twice to the same value, here and on line 2" in w
        for w in config.warnings
    )


def test_secret_set_twice_is_not_echoed(conf_dir: MakeDir) -> None:
    text = "s3:\n  secret-key: hunter2\ns3.secret-key: hunter3\n"
    error = _error(conf_dir("config.yaml", text))
    assert "hunter" not in str(error)
    assert "s3.secret-key is set twice to different values: here and on line 2" in error.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "state.backend: rocksdb\nstate.backend.type: hashmap\n",
            ":2: state.backend.type 'hashmap' and state.backend 'rocksdb' ({file}:1) set one key "
            "to different values (state.backend is the deprecated name of state.backend.type).",
        ),
        (
            "s3.access.key: A\ns3.access-key: B\n",
            ":2: s3.access-key and s3.access.key ({file}:1) set one key to different values "
            "(s3.access.key is another name of s3.access-key).",
        ),
        (
            "state.checkpoints.dir: /a\nstate.backend.fs.checkpointdir: /b\n",
            ":2: state.backend.fs.checkpointdir '/b' and state.checkpoints.dir '/a' ({file}:1) "
            "set one key to different values (both are names of execution.checkpointing.dir).",
        ),
        (
            "s3.endpoint.region: eu\nflink.hadoop.fs.s3a.endpoint.region: us\n",
            ":2: flink.hadoop.fs.s3a.endpoint.region 'us' and s3.endpoint.region 'eu' ({file}:1) "
            "set the same Spark setting spark.hadoop.fs.s3a.endpoint.region to different values.",
        ),
    ],
)
def test_conflicting_names_of_one_key(conf_dir: MakeDir, text: str, expected: str) -> None:
    directory = conf_dir("flink-conf.yaml", text)
    file = directory / "flink-conf.yaml"
    error = _error(directory)
    assert error.message == f"{file}" + expected.format(file=file)
    assert "Keep one of them" in (error.hint or "")


def test_conflicting_names_given_with_d() -> None:
    with pytest.raises(ConfigError) as caught:
        load_configuration(dynamic=["state.backend=rocksdb", "state.backend.type=hashmap"])
    assert caught.value.message.startswith("-D: state.backend.type 'hashmap' and state.backend")


def test_names_of_one_key_in_different_layers_do_not_conflict(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "state.backend: rocksdb\n")
    config = load_configuration(directory, dynamic=["state.backend.type=hashmap"])
    assert config.get("state.backend.type") == "hashmap"  # -D wins over the file


def test_same_value_spelled_differently_is_no_conflict(conf_dir: MakeDir) -> None:
    text = "state.checkpoints.num-retained: 3\nexecution.checkpointing.num-retained: 03\n"
    config = load_configuration(conf_dir("flink-conf.yaml", text))
    assert config.get("execution.checkpointing.num-retained") == 3


# -- near misses where the key space is otherwise ignored --------------------------------------


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("state.backend.incremetal", "state.backend.incremental (now "),
        ("state.checkpoints.dirs", "state.checkpoints.dir (now execution.checkpointing.dir)"),
        ("execution.checkpointing.intervall", "execution.checkpointing.interval"),
        ("restart-strategy.fixed-delay.attempt", "restart-strategy.fixed-delay.attempts"),
        ("state.backend.rocksdb.writebuffer.sise", "state.backend.rocksdb.writebuffer.size"),
        ("taskmanager.network.memory.fractoin", "taskmanager.network.memory.fraction (now "),
        ("s3.acess-key", "s3.access-key"),
        ("fs.s3a.endpiont", "fs.s3a.endpoint"),
        ("metrics.reporter.prom.port", None),
    ],
)
def test_near_miss_is_an_error(conf_dir: MakeDir, key: str, suggestion: str | None) -> None:
    directory = conf_dir("flink-conf.yaml", f"{key}: 1\n")
    if suggestion is None:  # the real key, for contrast
        load_configuration(directory)
        return
    error = _error(directory)
    assert f"flink-conf.yaml:1: {key}: unknown configuration key; did you mean {suggestion}" in (
        error.message
    )


@pytest.mark.parametrize(
    "key",
    [
        "metrics.reporter.otel.factory.class",
        "metrics.reporter.jmx.port",
        "metrics.reporter.promgateway.port",
        "state.backend.rocksdb.write-batch-size",
        "state.backend.rocksdb.checkpoint.transfer.thread.num",
        "state.backend.rocksdb.memory.partitioned-index-filters",
        "state.backend.rocksdb.options-factory",
        "state.backend.fs.memory-threshold",
        "taskmanager.network.memory.max-buffers-per-channel",
        "taskmanager.memory.min-segment-size",
        "execution.checkpointing.interval-during-backlog",
        "execution.checkpointing.snapshot-compression",
        "execution.savepoint.path",
        "env.java.default-opts.all",
        "env.java.opts.sql-gateway",
        "fs.s3a.endpoint.fips",
        "fs.s3a.session.token",
        "fs.s3a.connection.maximum",
        "s3.entropy.key",
        "s3.upload.min.part.size",
        "python.execution-mode",
    ],
)
def test_real_keys_are_not_near_misses(key: str) -> None:
    config = load_configuration(dynamic=[f"{key}=1"])  # no error: accepted, at most a warning
    assert all("did you mean" not in warning for warning in config.warnings), config.warnings
    assert all(key in warning for warning in config.warnings), config.warnings


# -- warnings: linear and deduplicated ---------------------------------------------------------


def test_ten_thousand_deprecated_keys_give_one_warning_each(conf_dir: MakeDir) -> None:
    text = "state.checkpoints.dir: /data/a\nstate.savepoints.dir: /data/b\n" * 5_000
    directory = conf_dir("flink-conf.yaml", text)
    started = time.perf_counter()
    config = load_configuration(directory)
    elapsed = time.perf_counter() - started
    print(f"10,000 deprecated keys loaded in {elapsed:.2f} s")
    file = directory / "flink-conf.yaml"
    deprecated = [w for w in config.warnings if "is deprecated" in w]
    assert deprecated == [
        f"{file}:1: state.checkpoints.dir is deprecated; use execution.checkpointing.dir "
        "instead. (also at line 3, line 5, line 7 and 4,996 more)",
        f"{file}:2: state.savepoints.dir is deprecated; use execution.checkpointing.savepoint-dir"
        " instead. (also at line 4, line 6, line 8 and 4,996 more)",
    ]
    repeated = [w for w in config.warnings if "is also set on" in w]
    assert repeated == [
        f"{file}:9999: state.checkpoints.dir is also set on lines 1, 3, 5 and 4,996 more; "
        "line 9999 wins.",
        f"{file}:10000: state.savepoints.dir is also set on lines 2, 4, 6 and 4,996 more; "
        "line 10000 wins.",
    ]
    assert len(config.warnings) == 4


def test_ten_thousand_malformed_lines_give_one_warning(conf_dir: MakeDir) -> None:
    directory = conf_dir("flink-conf.yaml", "parallelism.default: 2\n" + "no colon here\n" * 10_000)
    config = load_configuration(directory)
    assert len(config.warnings) == 1
    assert config.warnings[0].endswith(
        "not a 'key: value' line (a key, ': ' and a value); ignored, as Flink ignores it. "
        "(also at line 3, line 4, line 5 and 9,996 more)"
    )


def test_many_distinct_warnings_are_bounded(conf_dir: MakeDir) -> None:
    text = "".join(f"rest.option-{i}: {i}\n" for i in range(10_000))
    started = time.perf_counter()
    config = load_configuration(conf_dir("config.yaml", text))
    print(f"10,000 ignored keys loaded in {time.perf_counter() - started:.2f} s")
    assert len(config.warnings) == MAX_WARNINGS + 1
    assert config.warnings[-1].startswith(f"... and {10_000 - MAX_WARNINGS:,} more configuration")


def test_the_same_warning_from_d_twice() -> None:
    config = load_configuration(dynamic=["state.checkpoints.dir=/a", "state.checkpoints.dir=/b"])
    assert config.warnings == [
        "-D: state.checkpoints.dir is deprecated; use execution.checkpointing.dir instead. "
        "(2 times)"
    ]


# -- from the command line: exit status 1, one message, no traceback ---------------------------


@pytest.mark.parametrize("case", ["directory", "bomb", "conflict", "near-miss"])
def test_command_line_exits_1_with_one_message(conf_dir: MakeDir, case: str) -> None:
    directory = conf_dir()
    if case == "directory":
        (directory / "flink-conf.yaml").mkdir()
    elif case == "bomb":
        (directory / "config.yaml").write_text(_laughs(9))
    elif case == "conflict":
        (directory / "flink-conf.yaml").write_text("state.backend: a\nstate.backend.type: b\n")
    else:
        (directory / "flink-conf.yaml").write_text("state.backend.incremetal: true\n")
    result = subprocess.run(
        [sys.executable, "-m", "flinkish_cli", "config", "--conf-dir", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("ERROR") == 1
    assert result.stdout == ""


# -- what messages echo: one line, no terminal control sequences, bounded --------------------


def test_control_characters_in_a_key_are_not_echoed_raw(conf_dir: MakeDir) -> None:
    error = _error(conf_dir("config.yaml", 'pipeline:\n  "na\\x1b[31mme": x\n'))
    assert "\x1b" not in error.message
    assert error.message.endswith(
        "config.yaml:2: a key holds control characters ('na\\x1b[31mme')."
    )
    error = _error(conf_dir("flink-conf.yaml", "pipe\x1bline.name: x\n"))
    assert "\x1b" not in error.message and "flink-conf.yaml:1: a key holds control" in error.message


def test_values_in_messages_are_escaped_and_cut(conf_dir: MakeDir) -> None:
    text = 'parallelism:\n  default: "4\\n\\x1b[2J' + "9" * 500 + '"\n'
    error = _error(conf_dir("config.yaml", text))
    assert "\x1b" not in error.message and "\n" not in error.message
    assert "parallelism.default: '4\\n\\x1b[2J999" in error.message
    assert "...' is not an integer" in error.message
    assert len(error.message) < 400
