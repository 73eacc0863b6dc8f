"""The Spark side of a configuration: :func:`to_spark` and :class:`SparkTranslation`.

Every key that is set contributes the Spark settings its registry entry declares; a few keys
(``parallelism.default``, ``state.backend.type``, ``execution.checkpointing.num-retained``)
contribute even at their default, because Flink's default differs from Spark's and matters
for Flink-like behaviour. ``spark.*`` keys pass through last and win over translated values.
The result holds real secret values (the job needs them); callers redact for display using
:attr:`SparkTranslation.secret_keys`. Pure: no I/O, no pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flinkish_cli.config import mappings
from flinkish_cli.config import options as opts
from flinkish_cli.config.model import Configuration
from flinkish_cli.config.secrets import is_secret, redact

__all__ = ["SparkTranslation", "to_spark"]


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
            k: "******" if k in self.secret_keys else redact(k, v) for k, v in self.conf.items()
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
        secret = is_secret(key) or (info.option is not None and info.option.secret)
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
    for spark_key, value in passthrough.items():
        conf[spark_key] = value
        if is_secret(spark_key):
            secret_keys.add(spark_key)
        else:
            secret_keys.discard(spark_key)
    master = conf.get("spark.master") or mappings.local_master(config)
    return SparkTranslation(
        conf=dict(sorted(conf.items())),
        secret_keys=frozenset(secret_keys),
        master=master,
        approximate=approximate,
    )
