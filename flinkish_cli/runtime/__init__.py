"""Code that runs in a job's own processes: its supervisor, and its Spark driver (or a
session job's Connect client) around the user's unmodified PySpark script.

One sub-package per process and concern, in layers (top to bottom; each imports only those
below it, imports inside functions included: the ``runtime`` contract in pyproject.toml):

- :mod:`.supervisor`  the job's first process: starts the driver, restarts a dead one.
- :mod:`.driver`      the driver process: plan in, the job's state machine, its attempts,
                      the control channel, the JVMs it runs on. Independent of the supervisor:
                      the two processes share only this package's root modules.
- :mod:`.queries`     the job's streaming queries: hooks, identities, restores, checkpoint
                      rules, savepoints and checkpoints, what each takes on storage.
- :mod:`.scaling`     the driver's side of a rescale and of the autoscaler (independent of
                      the queries).
- :mod:`.connectors`  what a source or sink needs beside Spark's own: Kafka's checks, offsets
                      and exactly-once sink, a file source's backlog.
- :mod:`.explain`     a query's plan as Spark explains it, and the graph built from it.
- :mod:`.flavours`    classic Spark or a Spark Connect session cluster, behind one seam.
- the root, which both processes use (independent of each other):

  - :mod:`.status_keeper`  the job's status, its lock and the heartbeat that writes it.
  - :mod:`.restart`        Flink's restart strategies, and the one record of a failure.
  - :mod:`.warm`           the warm runners' protocol, and the spares' side of it: a
                           session-cluster job's supervisor and client started before the
                           job exists.
  - :mod:`.faults`         named points where tests kill the job's own processes.

- ``entry/``  the files Spark runs by path (no package): the driver's, the Connect client's,
  the Python daemon and its forked workers, the class-data sharing workload.

The dry runs the CLI starts (``flinkish info``, a restore's state check) are
:mod:`flinkish_cli.planning`'s; the server's pool of spares is
:mod:`flinkish_cli.submission.warm_runner`.
"""
