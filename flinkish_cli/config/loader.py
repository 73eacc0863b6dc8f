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

Damaged or hostile files give one :class:`~flinkish_cli.errors.ConfigError` naming the file
(and line where there is one), never an internal error or a hang: a file that is a directory,
a dangling symbolic link, not a regular file or unreadable; a file larger than
:data:`MAX_FILE_BYTES`; bytes that are not UTF-8; YAML that nests too deep, expands its
aliases too far or refers to itself (see :mod:`.yamlnodes`); a document that is not a
mapping; a list or mapping inside a list; one key set twice to different values.

Values may refer to environment variables and files (``${env:NAME}``, ``${file:/path}``, see
:mod:`.references`); they are resolved here, and a secret given with ``-D`` as plain text
gets a warning (it is visible in the process list).

PyYAML is imported only to read a ``config.yaml`` (a legacy file is read line by line).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import flinkish_cli.config.options as opts
import flinkish_cli.config.yamlnodes as yn
from flinkish_cli.config.model import Configuration
from flinkish_cli.config.notices import WarningLog, shown_value
from flinkish_cli.config.references import Resolver, resolve_settings
from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.config.sources import Setting, Source, display_path
from flinkish_cli.config.valuetypes import Nested
from flinkish_cli.errors import ConfigError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "LEGACY_FILE",
    "MAX_FILE_BYTES",
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
#: A configuration file larger than this is refused (Flink's own is a few kilobytes).
MAX_FILE_BYTES = 1 << 20
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


def _present(path: Path) -> bool:
    """Whether ``path`` is a configuration file to read; a ConfigError when it is there but
    cannot be one (a directory, a dangling link, a device, a pipe)."""
    shown = display_path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if not os.path.islink(path):
            return False
        raise ConfigError(
            f"{shown} is a symbolic link to {os.readlink(path)}, which does not exist.",
            f"Point the link at the configuration file, or remove {shown}.",
        ) from None
    except OSError as error:
        raise ConfigError(
            f"{shown} cannot be read: {error.strerror}.",
            f"Fix or remove {shown}.",
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(
            f"{shown} is a directory, not a configuration file.",
            f"Remove the directory or replace it with the {path.name} file.",
        )
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"{shown} is not a regular file.",
            f"Replace it with the {path.name} file.",
        )
    return True


def _read_text(path: Path) -> str:
    shown = display_path(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(
            f"{shown} cannot be read: {error.strerror}.",
            "Make the file readable by the user running flinkish (e.g. chmod u+r).",
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            f"{shown} is larger than {MAX_FILE_BYTES // (1 << 20)} MiB; a configuration file "
            "holds a few hundred keys.",
            "Check that FLINK_CONF_DIR or --conf-dir names the right directory.",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(
            f"{shown}:{line}: not UTF-8 text (byte {error.start}).",
            "Save the configuration file as UTF-8.",
        ) from None


def read_legacy(path: Path) -> tuple[list[Setting], WarningLog]:
    """Settings of a legacy ``flink-conf.yaml``, and warnings for the lines Flink skips."""
    shown = display_path(path)
    settings: list[Setting] = []
    warnings = WarningLog()
    lines: dict[str, list[int]] = {}
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        before, comment, _ = line.partition("#")
        conf = before.strip()
        if not conf:
            continue
        cut = bool(comment) and not before[-1].isspace() and ": " in conf
        parts = conf.split(": ", 1)
        if len(parts) == 1 or not parts[0].strip() or not parts[1].strip():
            warnings.add(
                "not a 'key: value' line (a key, ': ' and a value); ignored, as Flink ignores it.",
                f"{shown}:{number}",
            )
            continue
        key, value = parts[0].strip(), parts[1].strip()
        if not key.isprintable():
            raise ConfigError(
                f"{shown}:{number}: a key holds control characters ('{shown_value(key)}').",
                "Write one 'key: value' per line with a plain key.",
            )
        lines.setdefault(key, []).append(number)
        if cut:
            warnings.add(
                f"{key} ends at '#', which starts a comment in {LEGACY_FILE}; write the "
                f"value in {YAML_FILE} (quoted) to keep a '#'.",
                f"{shown}:{number}",
            )
        settings.append(Setting(key, value, Source("file", shown, number)))
    for key, numbers in lines.items():
        if len(numbers) > 1:
            earlier = _numbers(numbers[:-1])
            warnings.add(
                f"{key} is also set on {earlier}; line {numbers[-1]} wins.",
                f"{shown}:{numbers[-1]}",
            )
    return settings, warnings


def _numbers(numbers: list[int]) -> str:
    """``line 3``, ``lines 3 and 4``, ``lines 1, 2, 3 and 9,996 more``."""
    if len(numbers) == 1:
        return f"line {numbers[0]}"
    if len(numbers) <= 4:
        return "lines " + ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"
    return "lines " + ", ".join(map(str, numbers[:3])) + f" and {len(numbers) - 3:,} more"


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


def read_yaml(path: Path) -> tuple[list[Setting], WarningLog]:
    """Settings of a standard-YAML ``config.yaml`` (nested keys joined with dots)."""
    import yaml  # only a config.yaml needs PyYAML

    shown = display_path(path)
    text = _read_text(path)
    try:
        root = yn.compose(text)
    except yaml.YAMLError as error:
        raise _yaml_error(shown, error) from None
    except yn.YamlLimit as limit:
        raise ConfigError(f"{shown}:{limit.line}: {limit.problem}.", limit.hint) from None
    except RecursionError:  # the pure-Python parser on a pathological file
        raise ConfigError(
            f"{shown}: nests values too deeply to read.",
            "Flatten the structure: write keys with dots.",
        ) from None
    reader = _YamlReader(shown)
    if root is None:
        return reader.settings, reader.warnings
    if not isinstance(root, yn.Mapping):
        kind = "a list" if isinstance(root, yn.Sequence) else "a single value"
        raise ConfigError(
            f"{shown}:{root.line}: expected configuration keys and values (a YAML mapping), "
            f"found {kind}.",
            "Write one 'key: value' per line, or nested maps.",
        )
    reader.walk(root, ())
    return reader.settings, reader.warnings


class _YamlReader:
    """Flattens a ``config.yaml`` mapping into settings (keys joined with dots)."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.settings: list[Setting] = []
        self.warnings = WarningLog()
        self.first: dict[str, tuple[int, tuple[str, ...], object]] = {}

    def walk(self, node: yn.Mapping, path: tuple[str, ...]) -> None:
        for key_node, value_node in node.pairs:
            line = key_node.line
            if not isinstance(key_node, yn.Scalar) or not key_node.value.strip():
                raise ConfigError(
                    f"{self.shown}:{line}: a key must be plain text.",
                    "Write keys like 'parallelism.default' or nested maps of plain names.",
                )
            name = key_node.value.strip()
            if not name.isprintable():
                raise ConfigError(
                    f"{self.shown}:{line}: a key holds control characters ('{shown_value(name)}').",
                    "Write keys like 'parallelism.default' or nested maps of plain names.",
                )
            if name == "<<":
                raise ConfigError(
                    f"{self.shown}:{line}: YAML merge keys ('<<') are not supported in "
                    "configuration files.",
                    "Write the keys out (an alias such as '*name' may stand for one value).",
                )
            here = (*path, name)
            if isinstance(value_node, yn.Mapping):
                self.walk(value_node, here)
            else:
                self.value(".".join(here), here, value_node, line)

    def value(self, key: str, path: tuple[str, ...], node: yn.Node, line: int) -> None:
        source = Source("file", self.shown, line)
        if isinstance(node, yn.Sequence):
            raw: object = tuple(_item(item) for item in node.items)
        else:
            assert isinstance(node, yn.Scalar)
            raw = None if node.plain and node.value in _NULLS else node.value
        if key in self.first:
            self.twice(key, path, raw, line)
            return
        self.first[key] = (line, path, raw)
        if raw is None:
            self.warnings.add(f"{key} has no value; ignored.", f"{self.shown}:{line}")
            return
        self.settings.append(Setting(key, raw, source))  # type: ignore[arg-type]

    def twice(self, key: str, path: tuple[str, ...], raw: object, line: int) -> None:
        first_line, first_path, first_raw = self.first[key]
        there = f"line {first_line}" + (
            "" if first_path == path else f" (as '{_written(first_path)}')"
        )
        if raw == first_raw:
            self.warnings.add(
                f"{key} is set twice to the same value, here and on {there}; keep one.",
                f"{self.shown}:{line}",
            )
            return
        if is_secret(key):
            detail = f"here and on {there}"
        else:
            detail = (
                f"'{shown_value(_text(raw))}' here and '{shown_value(_text(first_raw))}' on {there}"
            )
        raise ConfigError(
            f"{self.shown}:{line}: {key} is set twice to different values: {detail}.",
            "Keep one of them.",
        )


def _item(node: yn.Node) -> str:
    if isinstance(node, yn.Scalar):
        return node.value
    return Nested(_flow(node), kind="a list" if isinstance(node, yn.Sequence) else "a map")


def _written(path: tuple[str, ...]) -> str:
    """How a key was written: ``parallelism.default:`` or ``parallelism: default:``."""
    return ": ".join(path) + ":"


def _text(raw: object) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    return ",".join(str(item) for item in raw)  # type: ignore[attr-defined]


def _flow(node: yn.Node) -> str:
    """A nested list item as flow-style YAML text (its size is bounded by the composer)."""
    if isinstance(node, yn.Scalar):
        return node.value
    if isinstance(node, yn.Sequence):
        return "[" + ", ".join(_flow(item) for item in node.items) + "]"
    assert isinstance(node, yn.Mapping)
    return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in node.pairs) + "}"


def dynamic_settings(dynamic: Sequence[str]) -> list[Setting]:
    """``-D key=value`` strings as settings; a malformed one is a ConfigError naming it."""
    settings = []
    for item in dynamic:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            shown = shown_value(item) if not sep else "=..."
            head = re.split(r"[:\s]", item.strip(), maxsplit=1)[0]
            if not sep and (is_secret(item) or _secret_key(head)):
                head = shown_value(head)
                shown = f"{head} {REDACTED}" if head != item.strip() else head
            raise ConfigError(
                f"-D {shown}: expected -D key=value.",
                "Write -D followed by a key, '=' and the value, e.g. -D parallelism.default=4.",
            )
        if not key.strip().isprintable():
            raise ConfigError(
                f"-D {shown_value(key)}: a key holds control characters.",
                "Write -D key=value with a plain key, e.g. -D parallelism.default=4.",
            )
        settings.append(Setting(key.strip(), value, Source("dynamic")))
    return settings


def flag_settings(flags: Mapping[str, str] | None) -> list[Setting]:
    """Command-flag values (Flink key -> value) as settings."""
    return [
        Setting(key, str(value), Source("flag", flag=opts.FLAG_OF.get(key)))
        for key, value in (flags or {}).items()
    ]


def _secret_key(key: str) -> bool:
    if is_secret(key):
        return True
    try:
        info = opts.classify(key)
    except opts.UnknownKey:
        return False
    return info.option is not None and info.option.secret


_S3_KEYS = ("s3.access-key", "s3.secret-key")


def _dynamic_secret_warnings(settings: Sequence[Setting], warnings: WarningLog) -> None:
    """A secret given with -D as plain text is in the process list: say how to avoid it."""
    for setting in settings:
        if setting.source.reference is not None or not _secret_key(setting.key):
            continue
        key = setting.key
        if not str(setting.value).strip():
            warnings.add(
                f'{key} is empty. A reference in double quotes ("{key}=${{env:NAME}}") is '
                "replaced by the shell: put it in single quotes.",
                "-D",
            )
            continue
        canonical = opts.classify(key).canonical if _known(key) else key
        aws = ""
        if canonical in _S3_KEYS:
            aws = (
                "; or leave s3.access-key and s3.secret-key unset to use AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) from the environment"
            )
        warnings.add(
            f"{key} is a secret given on the command line, where other users can read it in "
            f"the process list (ps) while flinkish runs. Pass it by reference instead: "
            f"-D '{key}=${{env:NAME}}' or -D '{key}=${{file:/path/to/file}}' (single quotes), "
            f"or set it in {YAML_FILE}{aws}.",
            "-D",
        )


#: Secrets that are never written into the configuration file as plain text: a token is
#: the one key to the endpoint, and the file is read by every tool and kept in backups.
_FILE_SECRETS = ("flinkish.web.auth-token",)


def _file_token_warnings(
    settings: Sequence[Setting], warnings: WarningLog, source: Path | None
) -> None:
    """A token written as plain text in the configuration file: say how to avoid it, as for
    one given with -D (the value is never shown)."""
    where = display_path(source) if source is not None else YAML_FILE
    for setting in settings:
        if setting.source.reference is not None or setting.key not in _FILE_SECRETS:
            continue
        if not str(setting.value).strip():
            continue
        warnings.add(
            f"{setting.key} is written as plain text in {where}, where whoever can read the "
            f"file (or a copy of it) has it. Give it by reference instead: "
            f"'{setting.key}: ${{env:NAME}}' or '{setting.key}: ${{file:/path/to/file}}' (a "
            "file only its owner can read)."
        )


def _known(key: str) -> bool:
    try:
        opts.classify(key)
    except opts.UnknownKey:
        return False
    return True


def load_configuration(
    conf_dir: str | os.PathLike[str] | None = None,
    dynamic: Sequence[str] = (),
    flags: Mapping[str, str] | None = None,
) -> Configuration:
    """The effective configuration: defaults < file < ``-D`` < flags (see the package doc)."""
    directory = resolve_conf_dir(conf_dir)
    settings: list[Setting] = []
    warnings = WarningLog()
    source_file: Path | None = None
    resolver = Resolver()
    if directory is not None:
        yaml_file, legacy_file = directory / YAML_FILE, directory / LEGACY_FILE
        if _present(yaml_file):
            source_file = yaml_file
            settings, warnings = read_yaml(yaml_file)
            if legacy_file.is_file():
                both = WarningLog()
                both.add(
                    f"{display_path(directory)} holds both {YAML_FILE} and {LEGACY_FILE}; "
                    f"{LEGACY_FILE} is ignored (as Flink 2 does)."
                )
                both.extend(warnings)
                warnings = both
        elif _present(legacy_file):
            source_file = legacy_file
            settings, warnings = read_legacy(legacy_file)
        settings = resolve_settings(settings, resolver, directory)
        _file_token_warnings(settings, warnings, source_file)
    dynamic_list = resolve_settings(dynamic_settings(dynamic), resolver, Path.cwd())
    _dynamic_secret_warnings(dynamic_list, warnings)
    settings += dynamic_list
    settings += flag_settings(flags)
    return Configuration(settings, conf_dir=directory, source_file=source_file, warnings=warnings)
