"""From configuration and command-line arguments to a started job: the CLI's side of a run.

- :mod:`.submit`       checks the program and the configuration, decides the job's plan.
- :mod:`.packaging`    zips the job's own directory (or package) for the executors, and the
  ``-pyfs`` and ``-pyreq`` files shipped beside it.
- :mod:`.shipping`     the connectors and S3A jars a job ships, the exactly-once Kafka sink's
  requirements, a session cluster that answers.
- :mod:`.spark_submit` the ``spark-submit`` command (or session client) for each Flink target.
- :mod:`.launcher`     writes the private run directory and starts the job's supervisor.
- :mod:`.follow`, :mod:`.run`  follows an attached job to its end, or a detached one until
  it runs.
- :mod:`.restore_check` checks the program against the state it restores (``run -s``,
  ``upgrade``) before anything starts.
- :mod:`.upload`       a program sent to ``flinkish web`` (``web.submit.enable``): the CLI zips
  it, the server unpacks it privately and starts it with the configuration sent, in an
  environment without the server's secrets.
- :mod:`.warm_runner`  the server's pool of warm runners: one spare supervisor started ahead
  of a job, handed the next job's run directory (the protocol is
  :mod:`flinkish_cli.runtime.warm`'s).

The plan itself is :mod:`flinkish_cli.plan`'s; what runs in the job's processes is
:mod:`flinkish_cli.runtime`'s.

Modules not named above:

- :mod:`.endpoint`: ``-m host:port``, as in Flink.
- :mod:`.pyflink`: a Flink user's first mistake, caught before any JVM starts.
"""
