"""Code that runs inside a job's Spark driver, around the user's unmodified PySpark script.

- :mod:`.plan_io`   reads the job's plan that the submission put into the Spark configuration.
- :mod:`.hooks`     patches ``DataStreamWriter`` so every query gets its stable checkpoint and
                    trigger, and defers starts until all of the job's queries are validated.
- :mod:`.listener`  turns Spark's query progress events into the job's status.
- :mod:`.job`       the job's life: heartbeat, control requests, graceful stop, final state.
- :mod:`.driver`    the entry point ``spark-submit`` runs.
"""
