"""flinkish: Apache Flink's command line, running PySpark jobs on Apache Spark.

The package is laid out one concern per sub-package, in the order data flows:

- :mod:`flinkish_cli.config`      Flink configuration read, validated and translated to Spark.
- :mod:`flinkish_cli.submission`  the plan of a job and the ``spark-submit`` command that runs it.
- :mod:`flinkish_cli.runtime`     code that runs inside the job's Spark driver.
- :mod:`flinkish_cli.registry`    job identity and status, kept beside the checkpoints.
- :mod:`flinkish_cli.storage`     local, S3 and HDFS file access shared by all of the above.
- :mod:`flinkish_cli.savepoints`  savepoints: snapshot, validate, restore, dispose.
- :mod:`flinkish_cli.cli`         the ``flinkish`` command: parsing and presentation only.

Nothing here imports pyspark at import time; only the runtime and the commands that need a
Spark session import it, lazily.
"""

__version__ = "0.1.0"
