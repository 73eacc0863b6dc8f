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
- :mod:`.offline_repartition`  a stopped query's state repartitioned for ``run -s -p``, in a
                            process of its own.
- :mod:`.rescaling`         the driver's side of an in-place rescale: done, or given up.
- :mod:`.autoscaling`       the autoscaler in the driver: evaluate, record, rescale.
- :mod:`.file_backlog`      a file source's backlog: the input it has not taken yet.
- :mod:`.kafka_checks`      Kafka sources checked before their query starts (broker, topics,
                            offsets of the savepoint).
- :mod:`.kafka_offsets`     each committed batch's end offsets, committed to the source's
                            consumer group where Kafka's tools see them.
- :mod:`.kafka_sink`        exactly once into Kafka: transactions per sink partition, with
                            the marker of the last batch each committed.
- :mod:`.spark_plan`        Spark's physical plan as its explain text tells it.
- :mod:`.graph_builder`     a query's graph from its plan and progress, in both flavours.
- :mod:`.graphs`            the graph of each query, recorded when it starts a new run.
- :mod:`.process_metrics`   the JVMs a job runs on, measured into the registry for
                            ``/metrics``.
- :mod:`.warm`              warm runners: a session-cluster job's supervisor and client
                            started before the job exists.
- :mod:`.faults`            named points where tests kill the job's own processes.
- ``entry/``                the files Spark runs by path (no package): the driver's, the
                            Connect client's, the Python daemon and its forked workers,
                            the class-data sharing workload.
"""
