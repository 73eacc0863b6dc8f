"""flinkish: Apache Flink's command line, running PySpark jobs on Apache Spark.

The package is laid out one concern per sub-package, in layers (top to bottom; a package
imports only those below it, checked by ``lint-imports``, see pyproject.toml):

- :mod:`flinkish_cli.cli`         the ``flinkish`` command: parsing and presentation only.
- :mod:`flinkish_cli.client`      the job client: every action on jobs, for every front end.
- :mod:`flinkish_cli.submission`  the CLI's side of a run: plan, packaging, ``spark-submit``.
- :mod:`flinkish_cli.runtime`     the job's processes: its supervisor and its Spark driver.
- :mod:`flinkish_cli.savepoints`  savepoints: snapshot, validate, restore, dispose.
- :mod:`flinkish_cli.registry`    job identity, status and control requests, beside the
  checkpoints.
- :mod:`flinkish_cli.storage`     local, S3 and HDFS file access.
- :mod:`flinkish_cli.config`      Flink configuration read, validated and translated to Spark.
- :mod:`flinkish_cli.spark`       Spark's and Java's installation, the driver's CDS archive.
- :mod:`flinkish_cli.plan`        what travels to the job's processes (no dependencies).

Nothing here imports pyspark at import time; only the runtime and the commands that need a
Spark session import it, lazily.
"""

__version__ = "0.1.0"
