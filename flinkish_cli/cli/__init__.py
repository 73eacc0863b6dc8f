"""The ``flinkish`` command line: parses arguments and presents results, nothing more.

Each command lives in :mod:`flinkish_cli.cli.commands`, reads the configuration and acts
through the job client (:class:`flinkish_cli.client.jobs.JobClient`), as Flink's CLI acts
through its ``ClusterClient``; nothing below the CLI imports click.
"""
