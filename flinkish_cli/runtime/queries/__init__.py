"""A job's streaming queries inside its driver.

- :mod:`.queries`           the queries as the hooks start them and the listener reports them.
- :mod:`.stopping`          a query stopped between two micro-batches; what its handle says.
- :mod:`.hooks`             patches ``DataStreamWriter`` so every query gets its stable
                            checkpoint and trigger, and defers starts until all are validated.
- :mod:`.identity`          a query's stable name, validated.
- :mod:`.listener`          Spark's query events, into the job's status.
- :mod:`.checkpoint_rules`  checkpoint timeout, tolerable failures, min-pause, retention.
- :mod:`.restoring`         restoring queries from a savepoint or retained checkpoint.
- :mod:`.snapshots`         savepoints (recorded in the history) and checkpoints.
- :mod:`.periodic`          periodic savepoints and the savepoint policy.
- :mod:`.footprints`        measures each query's checkpoint on storage, part by part.
"""
