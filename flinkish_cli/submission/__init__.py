"""From configuration and command-line arguments to a running ``spark-submit``.

- :mod:`.plan`        the :class:`JobPlan`: everything decided about a job before it starts.
- :mod:`.packaging`   zips the job's own directory (or package) for the executors.
- :mod:`.spark_submit` the ``spark-submit`` command for each Flink target.
- :mod:`.launcher`    writes the private run directory and starts the driver process.
"""
