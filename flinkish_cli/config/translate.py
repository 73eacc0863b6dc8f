"""The Spark side of a configuration: :func:`to_spark` and :class:`SparkTranslation`.

Every key that is set contributes the Spark settings its registry entry declares; a few keys
(``parallelism.default``, ``state.backend.type``, ``execution.checkpointing.num-retained``)
contribute even at their default, because Flink's default differs from Spark's and matters
for Flink-like behaviour. ``spark.*`` keys pass through last and win over translated values.
The result holds real secret values (the job needs them); callers redact for display using
:attr:`SparkTranslation.secret_keys`. ``spark.redaction.regex`` is always set: Spark's own
pattern (or the user's ``spark.redaction.regex``) extended with flinkish's secret rule and
the exact Spark keys whose values came from ``${env:...}``/``${file:...}`` references, so
that Spark's UI, event logs and REST API hide every value flinkish hides. Pure: no I/O, no
pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import flinkish_cli.config.mappings as mappings
import flinkish_cli.config.options as opts
from flinkish_cli.config.model import Configuration
from flinkish_cli.config.secrets import REDACTED, is_secret, spark_redaction_regex

__all__ = ["PLAN_KEYS", "REDACTION_KEY", "SparkTranslation", "to_spark"]

REDACTION_KEY = "spark.redaction.regex"
#: flinkish's own Spark settings (the job's plan, which carries the configuration): hidden
#: in Spark's UI when a value in it came from a reference.
PLAN_KEYS = r"^spark\.flinkish\."


@dataclass(frozen=True)
class SparkTranslation:
    """Spark settings for a configuration (unredacted), its master and its approximations."""

    conf: dict[str, str]
    secret_keys: frozenset[str]
    master: str
    approximate: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> dict[str, str]:
        """``conf`` for display: secret values replaced by ``******``."""
        return {
            k: REDACTED if k in self.secret_keys or is_secret(k) else v
            for k, v in self.conf.items()
        }


def _contributors(config: Configuration) -> list[str]:
    keys = set(config.keys())
    keys.update(o.key for o in opts.OPTIONS if o.emit_default)
    return sorted(keys)


def to_spark(config: Configuration) -> SparkTranslation:
    """Translate ``config`` to Spark settings (see the module docstring)."""
    conf: dict[str, str] = {}
    origin: dict[str, str] = {}
    secret_keys: set[str] = set()
    approximate: dict[str, str] = {}
    passthrough: dict[str, str] = {}
    for key in _contributors(config):
        info = opts.classify(key)
        settings = config.spark_settings(key)
        if info.status == opts.PASSTHROUGH:
            passthrough.update(settings)
            continue
        secret = config.is_hidden(key)
        for spark_key, value in settings.items():
            if spark_key in conf and conf[spark_key] != value:
                raise AssertionError(
                    f"{origin[spark_key]} and {key} translate to different values of {spark_key}"
                )
            conf[spark_key] = value
            origin[spark_key] = key
            if secret or is_secret(spark_key):
                secret_keys.add(spark_key)
        if info.status == opts.APPROXIMATE and settings:
            note = info.option.note if info.option is not None else ""
            approximate[key] = note or (info.family.description if info.family else "")
    referenced: set[str] = set()
    for key in config.referenced_keys():
        referenced.update(config.spark_settings(key))
    for spark_key, value in passthrough.items():
        conf[spark_key] = value
        if is_secret(spark_key) or spark_key in referenced:
            secret_keys.add(spark_key)
        else:
            secret_keys.discard(spark_key)
    secret_keys.discard(REDACTION_KEY)
    regex = spark_redaction_regex(passthrough.get(REDACTION_KEY), secret_keys)
    if config.referenced_keys():
        regex += "|" + PLAN_KEYS
    conf[REDACTION_KEY] = regex
    master = conf.get("spark.master") or mappings.local_master(config)
    return SparkTranslation(
        conf=dict(sorted(conf.items())),
        secret_keys=frozenset(secret_keys),
        master=master,
        approximate=approximate,
    )
