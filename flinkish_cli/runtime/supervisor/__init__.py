"""The supervisor: a job's first process (``python -m flinkish_cli.runtime.supervisor``).

- :mod:`.supervisor`  starts the driver (``spark-submit`` or a session job's Connect client),
                      watches it, keeps the heartbeat while no driver runs, restarts a dead
                      one under the restart strategy, owns the job's temporary directory.

It imports nothing of the driver's (:mod:`flinkish_cli.runtime.driver`): the two processes
meet in the registry and share only the root modules of :mod:`flinkish_cli.runtime`.
"""
