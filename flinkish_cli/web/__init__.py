"""``flinkish web``: Flink's REST API over the registry, and Prometheus metrics.

A front end like the CLI: it parses HTTP requests and presents the job client's answers in
Flink's JSON, and acts only through :class:`~flinkish_cli.client.jobs.JobClient`. It keeps no
state of its own (triggers and their results live in each job's control channel, disposals
in the registry), so stopping or restarting it never touches a job.

- :mod:`.flink_json`: flinkish's job statuses in the field names of Flink's REST API;
- :mod:`.app`: the routes (with and without Flink's ``/v1`` prefix), errors as Flink's
  ``{"errors": [...]}``, the size limit and the bearer token;
- :mod:`.metrics`: the ``/metrics`` collector, with Flink's metric names;
- :mod:`.server`: binding (loopback unless told otherwise) and serving.

Imported only by ``flinkish web``: Starlette, uvicorn and prometheus_client (the ``web``
extra) never load for any other command.
"""
