"""Which configuration keys hold secrets, how their values are hidden, and Spark's redaction.

The rule (one for Flink keys, Spark keys and anything else) looks at the key's name only:

1. the name contains a sensitive word (any case): ``password``, ``passwd``, ``passphrase``,
   ``secret``, ``token``, ``credential``, or one of Flink's own sensitive keys (Flink hides
   the same keys in its logs: ``apikey``, ``api-key``, ``auth-params``, ``service-key``,
   ``basic-auth``, ``jaas.config``, ``http-headers``, ``fs.azure.account.key``), or
   ``access-key``/``access.key``/``accesskey``/``access_key``;
2. or the name, split into words at ``.``, ``-``, ``_`` and lowerCamelCase humps, ends with
   the word ``key`` (``s3.encryption.key``, ``fs.s3a.bucket.b.encryption.key``,
   ``api_key``, ``privateKey``) or contains the word ``pwd`` or ``sas`` (Azure SAS tokens).

So ``state.backend.type``, ``pipeline.auto-generate-uids``, ``table.exec.state.ttl``,
``spark.io.encryption.keySizeBits`` or ``security.ssl.rest.key-alias`` are not secret, while
``s3.secret-key``, ``s3.encryption.key``, ``fs.s3a.session.token``,
``security.ssl.rest.keystore-password`` and ``spark.executorEnv.API_KEY`` are.

Secret values never appear in output, warnings or errors: :func:`redact` replaces them with
``******``. Only the Spark translation handed to ``spark-submit`` (through a private file)
carries the real values; :func:`spark_redaction_regex` extends Spark's own
``spark.redaction.regex`` so that Spark's UI, event logs and REST API hide them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "REDACTED",
    "SPARK_DEFAULT_REDACTION",
    "is_secret",
    "key_words",
    "redact",
    "spark_redaction_regex",
]

REDACTED = "******"

#: Substrings that make a key secret (compared lower-case). Flink's GlobalConfiguration hides
#: keys containing its "sensitive keys" (the second line); the rest cover cloud credentials.
SENSITIVE_WORDS: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "apikey",
    "api-key",
    "auth-params",
    "service-key",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "fs.azure.account.key",
    "access-key",
    "access.key",
    "access_key",
    "accesskey",
)

#: Whole words that make a key secret wherever they appear in it.
SENSITIVE_ANYWHERE: frozenset[str] = frozenset({"pwd", "sas"})

#: Whole words that make a key secret when they end it (``s3.encryption.key``).
SENSITIVE_LAST: frozenset[str] = frozenset({"key", "keys"})

#: Spark 4's default ``spark.redaction.regex`` (kept in front of flinkish's patterns).
SPARK_DEFAULT_REDACTION = "(?i)secret|password|token|access[.]?key|credential"

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def key_words(key: str) -> list[str]:
    """``key`` split into lower-case words at ``.``, ``-``, ``_`` and camelCase humps."""
    return [word.lower() for part in re.split(r"[.\-_]+", key) for word in _WORD.findall(part)]


def is_secret(key: str) -> bool:
    """Whether the value of ``key`` (a Flink, Spark or Hadoop key) must never be shown."""
    lowered = key.lower()
    if any(word in lowered for word in SENSITIVE_WORDS):
        return True
    words = key_words(key)
    if not words:
        return False
    return words[-1] in SENSITIVE_LAST or any(word in SENSITIVE_ANYWHERE for word in words)


def redact(key: str, value: str) -> str:
    """``value`` for display: ``******`` when ``key`` is secret, else unchanged."""
    return REDACTED if is_secret(key) else value


# The same rule as a Java regular expression, at least as broad (Spark matches it against every
# key and every value with find(); (?-i:...) marks the parts where case matters).
_JAVA_RULE: tuple[str, ...] = (
    *(re.escape(word) for word in SENSITIVE_WORDS),
    "pwd",
    "sas(?-i:(?![a-z]))",
    # the last word is "key"/"keys": "fs.s3a.encryption.key", "API_KEY", "encryptionKey"
    "(?-i:(?:(?:^|[^A-Za-z])keys?|Keys?|(?:^|[^A-Z])KEYS?)$)",
)


def spark_redaction_regex(user_regex: str | None = None, extra_keys: Iterable[str] = ()) -> str:
    """``spark.redaction.regex``: Spark's default, then flinkish's rule and ``extra_keys``.

    ``user_regex`` (a ``spark.redaction.regex`` the user set) takes the place of Spark's
    default and is kept as written. ``extra_keys`` are Spark keys that are secret for another
    reason (their value came from a ``${env:...}``/``${file:...}`` reference); they are
    matched exactly.
    """
    ours = list(_JAVA_RULE)
    ours += [f"^{re.escape(key)}$" for key in sorted(set(extra_keys))]
    return f"{user_regex or SPARK_DEFAULT_REDACTION}|(?i:{'|'.join(ours)})"
