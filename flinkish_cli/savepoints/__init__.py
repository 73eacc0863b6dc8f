"""Savepoints for Spark: consistent, self-contained, relocatable copies of a job's checkpoints.

A savepoint is a directory ``savepoint-<first 6 of JobID>-<12 hex>`` holding, for each query
of the job, the files of its Spark checkpoint needed to resume at its last committed
micro-batch, and a manifest ``_metadata`` written last (see :mod:`.manifest`).

- :mod:`.layout`    what Spark keeps in a query's checkpoint and which files a batch needs.
- :mod:`.manifest`  the ``_metadata`` document and its validation.
- :mod:`.create`    taking a savepoint (run by the job's driver).
- :mod:`.restore`   checking a savepoint before a job starts, and restoring it into a job.
- :mod:`.dispose`   deleting a savepoint, and nothing that is not one.
- :mod:`.retention` which savepoints of a job's history to dispose of, and disposing of them.
- :mod:`.inspect`: ``flinkish savepoint info``.
- :mod:`.integrity`: trusting nothing in a checkpoint or savepoint tree.
"""
