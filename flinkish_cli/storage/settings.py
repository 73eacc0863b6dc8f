"""How to reach the storages: :class:`StorageSettings`, built from Flink's ``s3.*`` keys.

This module owns the translation of Flink configuration keys into storage settings. The keys,
their accepted spellings and their value syntax are the option table's
(:mod:`flinkish_cli.config.options`, :func:`~flinkish_cli.config.units.parse_bool`), and
secrets are masked as everywhere else (:data:`~flinkish_cli.config.secrets.REDACTED`): it
takes the flat ``key -> string`` mapping the configuration produces, and it never lets the
S3 keys out: ``repr`` and :meth:`redact` replace them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from flinkish_cli.config.options import spellings
from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.config.units import ValueProblem, parse_bool
from flinkish_cli.errors import ConfigError

MiB = 1024 * 1024

# Each field's key; the option table knows its other spellings (Flink forwards s3.* to
# Hadoop's fs.s3a.*, so those are accepted too).
_FLINK_KEYS: dict[str, tuple[str, ...]] = {
    field_name: spellings(key)
    for field_name, key in (
        ("s3_endpoint", "s3.endpoint"),
        ("s3_access_key", "s3.access-key"),
        ("s3_secret_key", "s3.secret-key"),
        ("s3_session_token", "s3.session.token"),
        ("s3_path_style", "s3.path.style.access"),
        ("s3_region", "s3.region"),
    )
}
# Flink passes "flink.hadoop.<key>" to Hadoop's configuration as "<key>".
_HADOOP_PREFIX = "flink.hadoop."
_SECRET_FIELDS = ("s3_access_key", "s3_secret_key", "s3_session_token")


@dataclass(frozen=True, repr=False)
class StorageSettings:
    """Everything a storage needs besides the path: S3 endpoint and keys, Hadoop settings,
    and limits on parallelism, time-outs and retries."""

    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_session_token: str | None = None
    """The session token of temporary credentials (STS), with the access and secret key."""
    s3_path_style: bool = False
    s3_region: str | None = None
    hadoop_conf: Mapping[str, str] = field(default_factory=dict, hash=False)
    max_workers: int = 8
    """Files copied in parallel by ``copy_tree``, and parts per multipart transfer."""
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    max_attempts: int = 4
    """Attempts per S3 request, including the first (botocore's "standard" retry mode)."""
    multipart_threshold: int = 16 * MiB
    """S3 uploads and downloads at least this big go in parts."""
    multipart_chunksize: int = 8 * MiB
    """The size of each part (S3 requires at least 5 MiB)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hadoop_conf", dict(self.hadoop_conf))
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {self.max_workers}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.connect_timeout <= 0 or self.read_timeout <= 0:
            raise ValueError("connect_timeout and read_timeout must be positive")
        if self.multipart_chunksize < 5 * MiB or self.multipart_threshold < 5 * MiB:
            raise ValueError("multipart_threshold and multipart_chunksize must be at least 5 MiB")

    @classmethod
    def from_flink(cls, flat: Mapping[str, str], **overrides: object) -> StorageSettings:
        """Settings from Flink configuration keys (values as written in the config file).

        Reads ``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``, ``s3.path.style.access``
        and ``s3.region`` (and their ``s3.access.key`` / ``fs.s3a.*`` spellings), and every
        ``flink.hadoop.<key>`` as Hadoop's ``<key>``. ``overrides`` set any field directly.
        """
        values: dict[str, object] = {}
        for name, keys in _FLINK_KEYS.items():
            for key in keys:
                raw = flat.get(key)
                if raw is not None and str(raw).strip() != "":
                    values[name] = str(raw).strip()
                    break
        if "s3_path_style" in values:
            values["s3_path_style"] = _boolean("s3.path.style.access", str(values["s3_path_style"]))
        hadoop = {
            key[len(_HADOOP_PREFIX) :]: str(value)
            for key, value in flat.items()
            if key.startswith(_HADOOP_PREFIX) and len(key) > len(_HADOOP_PREFIX)
        }
        if hadoop:
            values["hadoop_conf"] = hadoop
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values that must never be shown (for scrubbing messages)."""
        found = [v for v in (self.s3_secret_key, self.s3_access_key, self.s3_session_token) if v]
        found += [v for k, v in self.hadoop_conf.items() if v and is_secret(k)]
        return tuple(found)

    def redact(self, text: str) -> str:
        """``text`` with every secret of these settings replaced by the mask."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if len(secret) >= 3:
                text = text.replace(secret, REDACTED)
        return text

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS and value is not None:
                shown.append(f"{f.name}={REDACTED!r}")
            elif f.name == "hadoop_conf":
                conf = {k: (REDACTED if is_secret(k) else v) for k, v in value.items()}
                shown.append(f"hadoop_conf={conf!r}")
            else:
                shown.append(f"{f.name}={value!r}")
        return f"StorageSettings({', '.join(shown)})"

    __str__ = __repr__


def _boolean(key: str, value: str) -> bool:
    try:
        return parse_bool(value)
    except ValueProblem:
        raise ConfigError(
            f"{key} is '{value}', which is not a boolean.", f"Set {key} to true or false."
        ) from None
