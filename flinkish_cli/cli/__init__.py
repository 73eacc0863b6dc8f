"""The ``flinkish`` command line: parses arguments and presents results, nothing more.

Each command lives in :mod:`flinkish_cli.cli.commands` and calls the work in the packages
below (configuration, submission, registry, savepoints), which never import click.
"""
