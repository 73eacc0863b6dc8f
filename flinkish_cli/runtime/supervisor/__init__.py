"""The supervisor: a job's first process (``python -m flinkish_cli.runtime.supervisor``).

- :mod:`.supervisor`  starts the driver (``spark-submit`` or a session job's Connect client),
                      watches it, keeps the heartbeat while no driver runs, restarts a dead
                      one under the restart strategy, owns the job's temporary directory.
- :mod:`.exits`       how a driver process ended, in the words of the job's failure cause.
- :mod:`.waits`       what it waits out instead of counting it against the driver: the
                      registry's store down or slow, YARN's next attempt of a silent driver.
- :mod:`.replan`      the next drivers of an in-place rescale, at the new parallelism.

It imports nothing of the driver's (:mod:`flinkish_cli.runtime.driver`): the two processes
meet in the registry and share only the root modules of :mod:`flinkish_cli.runtime`.
"""
