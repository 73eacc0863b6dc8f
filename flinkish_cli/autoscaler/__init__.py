"""The autoscaler's core: Flink Kubernetes Operator's autoscaler, for a Spark job.

It watches each streaming query's true processing rate and backlog and picks the parallelism
that keeps up with the input at ``job.autoscaler.utilization.target`` and works a backlog off
within ``job.autoscaler.catch-up.duration``, and scales back down when the load drops. A
flinkish job's parallelism is job-wide (local[N] slots, shuffle partitions, state partitions
on a rescale), so the decision is job-wide: the largest parallelism any query needs.

Pure and deterministic; the runtime evaluates it periodically and applies a rescale.

- :mod:`.settings` the ``job.autoscaler.*`` keys as one typed value.
- :mod:`.metrics`  a query's figures over the metrics window, in Flink's terms.
- :mod:`.decide`   the decision: the new parallelism, or why there is none.

The decisions are recorded in the job's rescale history,
:mod:`flinkish_cli.registry.rescales`.
"""
