"""The ``flinkish`` command line: parses arguments and presents results, nothing more.

Each command lives in :mod:`flinkish_cli.cli.commands`, reads the configuration and acts
through the job client (:class:`flinkish_cli.client.jobs.JobClient`), as Flink's CLI acts
through its ``ClusterClient``; nothing below the CLI imports click.

Modules not named above:

- :mod:`.flink_args`: Flink's command-line rules that click does not know, shared by the
  actions.
- :mod:`.live`: the live view of an attached job on a terminal (rich).
- :mod:`.main`: the ``flinkish`` click group.
- :mod:`.options`: options shared by every action, as Flink's CLI has them.
- :mod:`.output`: how results reach the user.
- :mod:`.program_options`: the options that name a job's program and how it runs.
"""
