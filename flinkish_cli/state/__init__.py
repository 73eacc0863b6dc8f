"""Reading a query's state: what ``flinkish state ls|show|export`` and ``savepoint info`` see.

Over a savepoint, a job's retained checkpoint (or one query's) or a JobID, with Spark's state
data source in a local Spark session (Spark 4.3: ``format("statestore")`` and
``format("state-metadata")``). One concern, one owner: every reader of state rows in
flinkish comes through here. It sits between the runtime and savepoints in the layers: it
reads the layouts that :mod:`flinkish_cli.savepoints` owns and the registry's jobs.

- :mod:`.model`   what a query's state is made of (operators, stores, schemas, rows, bytes),
                  and the JSON documents of ``ls`` and ``show``: plain data, no Spark;
- :mod:`.source`  what the user named, found and checked before Spark starts; a checkpoint
                  (a running job's too) is read from a copy, never in place;
- :mod:`.reader`  Spark's state reader: operators and stores, counts, rows biggest keys
                  first, a key filter;
- :mod:`.export`  a store's rows as Parquet or JSON lines, on local disk or S3;
- :mod:`.api`     the entry points the job client calls (list, show, export);
- ``python -m flinkish_cli.state``: one read in a child process, for ``flinkish web``,
                  which never starts a JVM in its own process (:mod:`.__main__`).

Importing this package (and :mod:`.model`, :mod:`.source`) never imports pyspark.

Modules not named above:

- :mod:`.metadata`: Spark's operator metadata in a query's checkpoint, read without Spark, and
  the stores it means for ``flinkish state``.
"""
