"""Spark and its JVM as every layer finds them, without a job.

- :mod:`.install`: where pyspark's Spark and its Java are (no import of pyspark, no JVM).
- :mod:`.cds`: the fresh driver's class-data sharing archive, made and chosen.
- :mod:`.local`: a quiet local Spark session inside the CLI (``info``, ``savepoint info``).
- :mod:`.local_fs`: flinkish's Hadoop local file system for a local driver's files.
- :mod:`.loopback`: whether a driver binds and advertises 127.0.0.1 only (local, standalone
  and YARN masters of this machine), and its settings.
- :mod:`.yarn`: a job's YARN application through the ResourceManager's and NodeManager's
  REST APIs (its id, its driver's log, its end).
- :mod:`.failures`: a Spark or Python failure put in a few lines for a user.
- :mod:`.converters`: pyspark's py4j converters of NumPy values, without importing pandas.
- :mod:`.maven`: Maven coordinates as cached jar files, resolved with the machine's ``mvn``.
- :mod:`.connectors`: the connectors a job ships (``flinkish.connectors``,
  ``spark.jars.packages``), matched to the installed Spark.

Below every other package but :mod:`flinkish_cli.plan` and :mod:`flinkish_cli.errors`,
which are all it imports.
"""
