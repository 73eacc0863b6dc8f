"""flinkish benchmarks: flinkish side by side with plain ``spark-submit``, on one machine.

One entry point, ``python -m benchmarks`` (``scripts/bench``; ``scripts/bench --quick`` for
a small backlog), runs every measurement in one go and writes ``docs/benchmarks.md`` and
``benchmarks/results.json``. Every figure comes from the run that wrote it, and each is given
as a ratio against a reference taken in the same run:

1. :mod:`.backlog`: one unmodified stateful script over a backlog of JSON files, run by
   flinkish (BATCH mode), by plain ``spark-submit`` with PySpark's defaults, and by
   ``spark-submit`` hand-tuned with the Spark settings flinkish derives;
2. :mod:`.streaming`: steady-state throughput and micro-batch latency of an example job fed
   at a fixed rate, flinkish against hand-tuned ``spark-submit``;
3. :mod:`.cli_latency`: ``flinkish --help``, ``list`` (50 jobs, local disk and S3) and
   ``config`` against the interpreter's own start-up;
4. :mod:`.lifecycle`: ``run -d``, ``savepoint``, ``stop``, ``run -s`` with 100 thousand and
   1 million keys of state, on local disk and S3 (a moto server), against what Spark and a
   plain copy take for the same work;
5. :mod:`.profiling`: where the time goes (imports, JVM start, registry reads, savepoints);
6. :mod:`.session`: a session cluster (Spark Connect, ``scripts/start-cluster.sh --session``)
   against a fresh driver per job: ``run -d`` to RUNNING, and a small BATCH job end to end;
7. :mod:`.cds` (full runs; quick with ``BENCH_CDS=1``): an experiment with a Java class-data
   sharing archive for the fresh driver's JVM;
8. :mod:`.flink` (full runs; quick with ``BENCH_FLINK=1``): Apache Flink's own session
   cluster (``pip install apache-flink`` into a cached virtual environment), ``flink run -d``
   next to section 6's figures;
11. :mod:`.kafka` (full runs; quick with ``BENCH_KAFKA=1``): Kafka to Kafka on a real broker,
   flinkish beside ``spark-submit`` (throughput, recovery, lag, exactly-once), and
   :mod:`.kafka_flink` beside Apache Flink 2.3's same pipeline (throughput, end-to-end
   latency; with ``BENCH_FLINK=1`` in quick runs); :mod:`.kafka_clients` holds their broker's
   clients.

:mod:`.harness` holds processes, configuration and timing helpers; :mod:`.report` the result
model, its validation and the Markdown/JSON writers.
"""
