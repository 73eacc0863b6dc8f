"""``${env:NAME}`` and ``${file:/path}`` in configuration values, resolved when loading.

A secret given as ``-D s3.secret-key=...`` is visible to every user of the machine in the
process list for the life of the command. A reference keeps it out of ``ps`` (and out of
``config.yaml``)::

    s3.secret-key: ${env:AWS_SECRET_ACCESS_KEY}
    flinkish run -D 's3.secret-key=${file:/run/secrets/s3}' job.py

``${env:NAME}`` is the environment variable ``NAME`` (the same syntax as Spark's own
configuration); ``${file:PATH}`` is the content of the file ``PATH`` without its trailing
line break (``~`` is expanded; a relative path is relative to the configuration directory
for values from the file, to the working directory for ``-D``). A value may hold several
references and text around them; ``$${env:...}`` writes ``${env:...}`` literally. Anything
else (``${X}``, ``${sys:x}``) is kept as written. Resolved text is never scanned again.

A missing variable or an unreadable file is a :class:`~flinkish_cli.errors.ConfigError`
naming the key and the reference, never a value. A value that came from a reference is
treated as a secret wherever it could be shown (see :mod:`flinkish_cli.config.model`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import flinkish_cli.config.options as opts
from flinkish_cli.config.notices import shown_value
from flinkish_cli.config.sources import Setting, Source
from flinkish_cli.config.valuetypes import Nested
from flinkish_cli.errors import ConfigError

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "Resolver", "has_reference"]

#: A referenced file larger than this is refused (a secret is a line, not a document).
MAX_FILE_BYTES = 64 * 1024
#: Distinct files one configuration may refer to.
MAX_FILES = 256

_REFERENCE = re.compile(r"\$(\$?)\{(env|file):([^}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def has_reference(text: str) -> bool:
    """Whether ``text`` holds a ``${env:...}`` or ``${file:...}`` reference (or its escape)."""
    return _REFERENCE.search(text) is not None


class Resolver:
    """Resolves the references of one configuration; files are read once and cached."""

    def __init__(self, environ: Callable[[str], str | None] | None = None) -> None:
        self._environ = environ or os.environ.get
        self._files: dict[Path, str] = {}

    def resolve(self, text: str, key: str, where: str, base: Path) -> tuple[str, str | None]:
        """``text`` with its references replaced, and the references as written (or None).

        ``where`` names the value's origin for messages (``conf/config.yaml:3``, ``-D``),
        ``base`` is the directory a relative ``${file:...}`` path is resolved against.
        """
        if "${" not in text:
            return text, None
        written: list[str] = []

        def replace(match: re.Match[str]) -> str:
            escaped, kind, name = match.groups()
            if escaped:
                return match.group(0)[1:]
            written.append(match.group(0))
            if kind == "env":
                return self._env(name, key, where)
            return self._file(name, key, where, base)

        resolved = _REFERENCE.sub(replace, text)
        return resolved, (" ".join(written) if written else None)

    def _env(self, name: str, key: str, where: str) -> str:
        if not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: {key}: ${{env:{shown_value(name)}}} is not a valid reference to an "
                "environment variable.",
                "Write ${env:NAME} with a variable name of letters, digits and '_'.",
            )
        value = self._environ(name)
        if value is None:
            raise ConfigError(
                f"{where}: {key}: the environment variable {name} (${{env:{name}}}) is not set.",
                f"Export {name} before running flinkish, or set {key} another way.",
            )
        return value

    def _file(self, name: str, key: str, where: str, base: Path) -> str:
        reference = f"${{file:{shown_value(name, limit=None)}}}"
        if not name.strip():
            raise ConfigError(
                f"{where}: {key}: {reference} names no file.",
                "Write ${file:/path/to/file}.",
            )
        path = Path(os.path.expanduser(name.strip()))
        if not path.is_absolute():
            path = base / path
        if path in self._files:
            return self._files[path]
        if len(self._files) >= MAX_FILES:
            raise ConfigError(
                f"{where}: {key}: {reference}: the configuration refers to more than "
                f"{MAX_FILES} files.",
                "Keep secrets in a few files.",
            )
        text = _read_secret_file(path, f"{where}: {key}: {reference}")
        self._files[path] = text
        return text


def _read_secret_file(path: Path, context: str) -> str:
    shown = shown_value(str(path), limit=None)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ConfigError(
                f"{context}: {shown} is a symbolic link to a file that does not exist.",
                "Point the reference at an existing file.",
            ) from None
        raise ConfigError(
            f"{context}: the file {shown} does not exist.",
            "Create the file, or point the reference at an existing one.",
        ) from None
    except OSError as error:
        raise ConfigError(f"{context}: {shown} cannot be read: {error.strerror}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(
            f"{context}: {shown} is a directory, not a file.",
            "Point the reference at the file that holds the value.",
        )
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"{context}: {shown} is not a regular file.",
            "Point the reference at the file that holds the value.",
        )
    if info.st_size > MAX_FILE_BYTES:
        raise ConfigError(
            f"{context}: {shown} is larger than {MAX_FILE_BYTES // 1024} KiB.",
            "A referenced file holds one value (a key, a password); point at the right file.",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(
            f"{context}: {shown} cannot be read: {error.strerror}.",
            "Make the file readable by the user running flinkish.",
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{context}: {shown} is larger than {MAX_FILE_BYTES // 1024} KiB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{context}: {shown} is not UTF-8 text.", "Save the file as UTF-8 text."
        ) from None
    return text.removesuffix("\n").removesuffix("\r")


def _wants_references(key: str) -> bool:
    """References are resolved for keys flinkish uses: not for unknown keys (they fail on
    their name) nor for keys it ignores."""
    try:
        return opts.classify(key).status != opts.NOT_APPLICABLE
    except opts.UnknownKey:
        return False


def resolve_settings(settings: list[Setting], resolver: Resolver, base: Path) -> list[Setting]:
    """``settings`` with the references in the values of keys flinkish uses resolved; each
    resolved setting's source names the references it was read from."""
    resolved = []
    for setting in settings:
        values = [setting.value] if isinstance(setting.value, str) else list(setting.value)
        if not any("${" in value for value in values) or not _wants_references(setting.key):
            resolved.append(setting)
            continue
        where = str(setting.source)
        references: list[str] = []
        if isinstance(setting.value, str):
            value, reference = resolver.resolve(setting.value, setting.key, where, base)
            if reference:
                references.append(reference)
            new_value: object = value
        else:
            items: list[str | Nested] = []
            for item in setting.value:
                if isinstance(item, Nested):
                    items.append(item)
                    continue
                text, reference = resolver.resolve(item, setting.key, where, base)
                if reference:
                    references.append(reference)
                items.append(text)
            new_value = tuple(items)
        if references or new_value != setting.value:
            source = setting.source
            if references:
                source = Source(
                    source.kind, source.file, source.line, source.flag, " ".join(references)
                )
            setting = Setting(setting.key, new_value, source)  # type: ignore[arg-type]
        resolved.append(setting)
    return resolved
