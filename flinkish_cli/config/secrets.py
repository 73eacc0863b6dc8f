"""Which configuration keys hold secrets, and how their values are hidden.

A key is secret when its name contains one of Flink's sensitive words (Flink hides the same
keys in its logs: ``password``, ``secret``, ``token``, ...), a few more (``credential``,
``access-key``), or is an S3A key such as ``fs.s3a.access.key`` or
``fs.s3a.bucket.<name>.secret.key``. Secret values never appear in output, warnings or
errors: :func:`redact` replaces them with ``******``. Only the Spark translation handed to
``spark-submit`` (through a private file) carries the real values.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "is_secret", "redact"]

REDACTED = "******"

#: Substrings that make a key secret (compared lower-case). Flink's GlobalConfiguration
#: hides keys containing its "sensitive keys"; the rest cover cloud credentials.
SENSITIVE_WORDS: tuple[str, ...] = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "apikey",
    "api-key",
    "api.key",
    "access-key",
    "access.key",
    "accesskey",
    "private-key",
    "private.key",
    "auth-params",
    "service-key",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "fs.azure.account.key",
    "sas-token",
)

# fs.s3a.access.key, fs.s3a.secret.key, fs.s3a.encryption.key, fs.s3a.bucket.b.session.key...
_S3A_KEY = re.compile(r"(^|\.)fs\.s3a\..*key$")


def is_secret(key: str) -> bool:
    """Whether the value of ``key`` (a Flink or Spark key) must never be shown."""
    lowered = key.lower()
    return any(word in lowered for word in SENSITIVE_WORDS) or bool(_S3A_KEY.search(lowered))


def redact(key: str, value: str) -> str:
    """``value`` for display: ``******`` when ``key`` is secret, else unchanged."""
    return REDACTED if is_secret(key) else value
