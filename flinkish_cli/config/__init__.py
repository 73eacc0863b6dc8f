"""Flink configuration for flinkish: read, validated, and translated to Spark.

Users keep Flink's ``config.yaml`` (standard YAML) or legacy ``flink-conf.yaml``; flinkish
reads it, checks every value as Flink would, and translates it to Spark settings.

Precedence, lowest to highest::

    registry default  <  configuration file  <  -D key=value  <  command flags (-p, -t, ...)

The file is ``config.yaml`` or ``flink-conf.yaml`` in ``FLINK_CONF_DIR``, else in the
``conf_dir`` argument (``--conf-dir``), else in ``./conf``; ``config.yaml`` wins when both
exist. Within one layer the current key wins over a deprecated alias, and a later line or
``-D`` over an earlier one. ``spark.*`` keys pass through verbatim and win over translated
Spark settings.

Public API (other packages rely on exactly this)::

    load_configuration(conf_dir=None, dynamic=(), flags=None) -> Configuration
    Configuration.get(key), .entries(), .warnings, .to_flat(), Configuration.from_flat(),
        .with_overrides(flags), .conf_dir, .source_file, .is_hidden(key), .is_referenced(key)
    ConfigEntry                      one key for display (value, text, source, status, spark)
    to_spark(config) -> SparkTranslation(conf, secret_keys, master, approximate)
    is_secret(key), redact(key, value)

Values may refer to environment variables and files (``${env:NAME}``, ``${file:PATH}``),
resolved when loading; such values, like secrets, are never shown (see :mod:`.references`).

Modules: :mod:`.units` (value syntax), :mod:`.valuetypes` (typed values and range checks),
:mod:`.options` (the registry), :mod:`.mappings` (Spark translations), :mod:`.model`
(resolution and validation), :mod:`.loader` (files, ``-D``, flags), :mod:`.yamlnodes`
(bounded YAML reading), :mod:`.references` (``${env:...}``, ``${file:...}``),
:mod:`.notices` (warnings, each once), :mod:`.translate` (:func:`to_spark`),
:mod:`.secrets` (the secret rule and ``spark.redaction.regex``), :mod:`.reference`
(docs/configuration.md). Nothing here imports pyspark.

Modules not named above:

- :mod:`.sources`: a setting as the user wrote it, where it came from, and how the effective
  configuration shows it.
"""

from __future__ import annotations

from flinkish_cli.config.loader import load_configuration
from flinkish_cli.config.model import Configuration
from flinkish_cli.config.secrets import is_secret, redact
from flinkish_cli.config.sources import ConfigEntry, Source
from flinkish_cli.config.translate import SparkTranslation, to_spark

__all__ = [
    "ConfigEntry",
    "Configuration",
    "Source",
    "SparkTranslation",
    "is_secret",
    "load_configuration",
    "redact",
    "to_spark",
]
