"""The driver process: Spark's driver (or a session job's Connect client) around the user's
script.

- :mod:`.driver`           the entry point ``spark-submit`` runs: plan in, attempts, end.
- :mod:`.job`              the job's state machine: threads, ending, final state.
- :mod:`.parts`            what the state machine is built from: one settings value and its
                           collaborators (their one factory).
- :mod:`.attempts`         the program's attempts, and what their failures were.
- :mod:`.program`          runs the user's script or module as ``__main__``.
- :mod:`.control_server`   carries out control requests (cancel, stop, savepoint, checkpoint).
- :mod:`.jvm_watch`        whether Spark's JVM is still there for a classic driver.
- :mod:`.process_metrics`  the JVMs a job runs on, measured into the registry for
                           ``/metrics``.
"""
