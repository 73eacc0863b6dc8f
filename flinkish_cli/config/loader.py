"""Reading configuration: the directory, its file (both YAML forms), ``-D`` and flags.

The directory is ``FLINK_CONF_DIR`` when set, else the ``conf_dir`` argument (``--conf-dir``),
else ``./conf``. A directory named explicitly must exist; ``./conf`` may be missing (then only
defaults apply). In the directory:

``config.yaml``       Flink 1.19+/2.x standard YAML. Nested maps are joined with dots
                      (``state: {backend: {type: rocksdb}}`` is ``state.backend.type``);
                      sequences are lists; scalars are taken as written (YAML 1.1 booleans
                      such as ``off`` stay text, as in Flink's YAML 1.2 parser).
``flink-conf.yaml``   The legacy flat form, read as Flink's legacy parser reads it: one
                      ``key: value`` per line, split at the first ``": "``, anything after
                      ``#`` is a comment, no quoting; malformed lines are skipped with a warning.

When both exist, ``config.yaml`` wins (as in Flink 2) and a warning says so. Every value
keeps its line number for messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from flinkish_cli.config.model import FLAG_NAMES, Configuration, Setting, Source, display_path
from flinkish_cli.errors import ConfigError

__all__ = [
    "LEGACY_FILE",
    "YAML_FILE",
    "dynamic_settings",
    "flag_settings",
    "load_configuration",
    "read_legacy",
    "read_yaml",
    "resolve_conf_dir",
]

YAML_FILE = "config.yaml"
LEGACY_FILE = "flink-conf.yaml"
_NULLS = ("", "~", "null", "Null", "NULL")


def resolve_conf_dir(conf_dir: str | os.PathLike[str] | None) -> Path | None:
    """The configuration directory, or None when ``./conf`` (the implicit one) is missing."""
    env = os.environ.get("FLINK_CONF_DIR")
    if env:
        path, named_by = Path(env), "FLINK_CONF_DIR"
    elif conf_dir is not None:
        path, named_by = Path(conf_dir), "--conf-dir"
    else:
        path, named_by = Path("conf"), None
    if not path.exists():
        if named_by is None:
            return None
        raise ConfigError(
            f"The configuration directory {path} (from {named_by}) does not exist.",
            "Point FLINK_CONF_DIR or --conf-dir at the directory holding config.yaml "
            "or flink-conf.yaml.",
        )
    if not path.is_dir():
        raise ConfigError(
            f"The configuration directory {path} is not a directory.",
            "Name the directory that holds config.yaml or flink-conf.yaml, not the file.",
        )
    return path.resolve()


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{display_path(path)}: not UTF-8 text (byte {error.start}).",
            "Save the configuration file as UTF-8.",
        ) from None
    except OSError as error:
        raise ConfigError(f"{display_path(path)}: cannot be read: {error.strerror}.") from None


def read_legacy(path: Path) -> tuple[list[Setting], list[str]]:
    """Settings of a legacy ``flink-conf.yaml``, and warnings for the lines Flink skips."""
    shown = display_path(path)
    settings: list[Setting] = []
    warnings: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        before, comment, _ = line.partition("#")
        conf = before.strip()
        if not conf:
            continue
        cut = bool(comment) and not before[-1].isspace() and ": " in conf
        parts = conf.split(": ", 1)
        if len(parts) == 1 or not parts[0].strip() or not parts[1].strip():
            warnings.append(
                f"{shown}:{number}: not a 'key: value' line (a key, ': ' and a value); "
                "ignored, as Flink ignores it."
            )
            continue
        key, value = parts[0].strip(), parts[1].strip()
        if key in seen:
            warnings.append(
                f"{shown}:{number}: {key} is also set on line {seen[key]}; line {number} wins."
            )
        seen[key] = number
        if cut:
            warnings.append(
                f"{shown}:{number}: {key} ends at '#', which starts a comment in "
                f"{LEGACY_FILE}; write the value in {YAML_FILE} (quoted) to keep a '#'."
            )
        settings.append(Setting(key, value, Source("file", shown, number)))
    return settings, warnings


def _yaml_error(shown: str, error: yaml.YAMLError) -> ConfigError:
    mark = getattr(error, "problem_mark", None)
    where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    detail = f"{problem} ({context})" if context else problem
    return ConfigError(
        f"{where}: not valid YAML: {detail}",
        "Fix the YAML syntax (indent with spaces, 'key: value' pairs).",
    )


def read_yaml(path: Path) -> tuple[list[Setting], list[str]]:
    """Settings of a standard-YAML ``config.yaml`` (nested keys joined with dots)."""
    shown = display_path(path)
    try:
        root = yaml.compose(_read_text(path), Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise _yaml_error(shown, error) from None
    settings: list[Setting] = []
    warnings: list[str] = []
    if root is None:
        return settings, warnings
    if not isinstance(root, yaml.MappingNode):
        line = root.start_mark.line + 1
        raise ConfigError(
            f"{shown}:{line}: expected configuration keys and values (a YAML mapping).",
            "Write one 'key: value' per line, or nested maps.",
        )
    _walk(root, "", shown, settings, warnings, {})
    return settings, warnings


def _walk(
    node: yaml.MappingNode,
    prefix: str,
    shown: str,
    settings: list[Setting],
    warnings: list[str],
    lines: dict[str, int],
) -> None:
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode) or not str(key_node.value).strip():
            raise ConfigError(
                f"{shown}:{line}: a key must be plain text.",
                "Write keys like 'parallelism.default' or nested maps of plain names.",
            )
        key = f"{prefix}.{key_node.value.strip()}" if prefix else key_node.value.strip()
        if isinstance(value_node, yaml.MappingNode):
            _walk(value_node, key, shown, settings, warnings, lines)
            continue
        if key in lines:
            raise ConfigError(
                f"{shown}:{line}: {key} is set twice (also on line {lines[key]}).",
                "Keep one of them.",
            )
        lines[key] = line
        source = Source("file", shown, line)
        if isinstance(value_node, yaml.SequenceNode):
            items = tuple(_item_text(item) for item in value_node.value)
            settings.append(Setting(key, items, source))
        elif value_node.style is None and value_node.value in _NULLS:
            warnings.append(f"{shown}:{line}: {key} has no value; ignored.")
        else:
            settings.append(Setting(key, str(value_node.value), source))


def _item_text(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    return yaml.serialize(node, default_flow_style=True).strip()


def dynamic_settings(dynamic: Sequence[str]) -> list[Setting]:
    """``-D key=value`` strings as settings; a malformed one is a ConfigError naming it."""
    settings = []
    for item in dynamic:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            shown = item if not sep else "=..."
            raise ConfigError(
                f"-D {shown}: expected -D key=value.",
                "Write -D followed by a key, '=' and the value, e.g. -D parallelism.default=4.",
            )
        settings.append(Setting(key.strip(), value, Source("dynamic")))
    return settings


def flag_settings(flags: Mapping[str, str] | None) -> list[Setting]:
    """Command-flag values (Flink key -> value) as settings."""
    return [
        Setting(key, str(value), Source("flag", flag=FLAG_NAMES.get(key)))
        for key, value in (flags or {}).items()
    ]


def load_configuration(
    conf_dir: str | os.PathLike[str] | None = None,
    dynamic: Sequence[str] = (),
    flags: Mapping[str, str] | None = None,
) -> Configuration:
    """The effective configuration: defaults < file < ``-D`` < flags (see the package doc)."""
    directory = resolve_conf_dir(conf_dir)
    settings: list[Setting] = []
    warnings: list[str] = []
    source_file: Path | None = None
    if directory is not None:
        yaml_file, legacy_file = directory / YAML_FILE, directory / LEGACY_FILE
        if yaml_file.is_file():
            source_file = yaml_file
            settings, warnings = read_yaml(yaml_file)
            if legacy_file.is_file():
                warnings.insert(
                    0,
                    f"{display_path(directory)} holds both {YAML_FILE} and {LEGACY_FILE}; "
                    f"{LEGACY_FILE} is ignored (as Flink 2 does).",
                )
        elif legacy_file.is_file():
            source_file = legacy_file
            settings, warnings = read_legacy(legacy_file)
    settings += dynamic_settings(dynamic)
    settings += flag_settings(flags)
    return Configuration(settings, conf_dir=directory, source_file=source_file, warnings=warnings)
