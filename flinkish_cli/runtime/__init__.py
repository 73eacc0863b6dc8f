"""Code that runs in a job's own processes: its supervisor, and its Spark driver around the
user's unmodified PySpark script.

- :mod:`.supervisor`        the job's first process: starts the driver, restarts a dead one.
- :mod:`.driver`            the entry point ``spark-submit`` runs: plan in, attempts, end.
- :mod:`.job`               the job's state machine: threads, ending, final state.
- :mod:`.attempts`          the program's attempts, and what their failures were.
- :mod:`.status_keeper`     the job's status, its lock and the heartbeat that writes it.
- :mod:`.queries`           the queries as the hooks start them and the listener reports them.
- :mod:`.control_server`    carries out control requests (cancel, stop, savepoint, checkpoint).
- :mod:`.snapshots`         savepoints (recorded in the history) and checkpoints.
- :mod:`.periodic`          periodic savepoints and the savepoint policy.
- :mod:`.footprints`        measures each query's checkpoint on storage, part by part.
- :mod:`.jvm_watch`         whether Spark's JVM is still there for a classic driver.
- :mod:`.hooks`             patches ``DataStreamWriter`` so every query gets its stable
                            checkpoint and trigger, and defers starts until all are validated.
- :mod:`.identity`          a query's stable name, validated.
- :mod:`.program`           runs the user's script or module as ``__main__``.
- :mod:`.listener`          Spark's query events, into the job's status.
- :mod:`.restart`           Flink's restart strategies, and the one record of a failure.
- :mod:`.checkpoint_rules`  checkpoint timeout, tolerable failures, min-pause, retention.
- :mod:`.restoring`         restoring queries from a savepoint or retained checkpoint.
- :mod:`.flavour`, :mod:`.session`  classic Spark or a Spark Connect session cluster.
- :mod:`.planner`           the program's dry run in a quiet local session (``flinkish info``,
                            the state check).
- :mod:`.state_check`       ``python -m flinkish_cli.runtime.state_check``: a new program
                            planned against the state it restores, in a process of its own.
- :mod:`.compatibility`     whether a program fits the state it restores (no Spark).
"""
