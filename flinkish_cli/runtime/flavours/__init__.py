"""The two flavours of Spark a job's program talks to: classic (py4j, the driver's own JVM)
and Spark Connect (a session cluster's server), one protocol with two implementations.

- :mod:`.flavour`              the seam: the :class:`~.flavour.Flavour` protocol the runtime
                               is written against, and :func:`~.flavour.by_name`, the one
                               place that chooses a flavour.
- :mod:`.classic`              the classic flavour: pyspark's classic classes, py4j.
- :mod:`.connect`              the Spark Connect flavour: pyspark's Connect classes, gRPC.
- :mod:`.session`              a job's own Spark Connect session in a session cluster.
- :mod:`.offline_repartition`  ``python -m flinkish_cli.runtime.flavours.offline_repartition``:
                               a stopped query's state repartitioned in a local classic Spark
                               of its own, for the Connect flavour, which has no such call (the
                               job's client starts it).
"""
