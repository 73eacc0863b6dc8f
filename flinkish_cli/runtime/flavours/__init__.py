"""The two flavours of Spark a job's program talks to: classic (py4j, the driver's own JVM)
and Spark Connect (a session cluster's server), behind one seam.

- :mod:`.flavour`              the seam: the classes each flavour's program uses, and what
                               differs between them (explain text, repartition, session).
- :mod:`.session`              a job's own Spark Connect session in a session cluster.
- :mod:`.offline_repartition`  ``python -m flinkish_cli.runtime.flavours.offline_repartition``:
                               a stopped query's state repartitioned in a local classic Spark
                               of its own, for the Connect flavour, which has no such call (the
                               job's client starts it).
"""
