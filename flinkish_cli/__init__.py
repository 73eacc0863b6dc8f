"""flinkish: Apache Flink's command line, running PySpark jobs on Apache Spark.

The package is laid out one concern per sub-package, in layers (top to bottom; a package
imports only those below it, checked by ``lint-imports``, see pyproject.toml):

- :mod:`flinkish_cli.cli`         the ``flinkish`` command: parsing and presentation only.
- :mod:`flinkish_cli.web`         ``flinkish web``: Flink's REST API, the dashboard, metrics.
- :mod:`flinkish_cli.client`      the job client: every action on jobs, for every front end.
- :mod:`flinkish_cli.submission`  the CLI's side of a run: plan, packaging, ``spark-submit``.
- :mod:`flinkish_cli.planning`    dry runs of a program for the CLI and ``flinkish web``:
  ``flinkish info``'s plan, a restore's state check.
- :mod:`flinkish_cli.runtime`     the job's processes: its supervisor and its Spark driver
  (layers of its own inside, the ``runtime`` contract).
- :mod:`flinkish_cli.state`, :mod:`flinkish_cli.autoscaler`  reading query state; the
  autoscaler's pure decision.
- :mod:`flinkish_cli.savepoints`  savepoints: snapshot, validate, restore, dispose.
- :mod:`flinkish_cli.registry`    job identity, status and control requests, beside the
  checkpoints.
- :mod:`flinkish_cli.storage`     local, S3 and HDFS file access.
- :mod:`flinkish_cli.config`, :mod:`flinkish_cli.spark`  Flink configuration read,
  validated and translated to Spark; Spark's and Java's installation, the CDS archive.
- :mod:`flinkish_cli.plan`, :mod:`flinkish_cli.rest`  what travels to the job's processes;
  the REST routes and what travels on them (the web server's and its clients' one wire).
- :mod:`flinkish_cli.errors`      flinkish's errors and their exit statuses.

Nothing here imports pyspark at import time; only the runtime and the commands that need a
Spark session import it, lazily.
"""

__version__ = "0.1.0"
