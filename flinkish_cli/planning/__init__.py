"""Dry runs of a job's program, in the CLI or in a child process the CLI or ``flinkish web``
starts (never in the job's own processes): the program runs under the runtime's hooks in a
quiet local Spark, and its queries are recorded instead of started.

- :mod:`.planner`        the program's dry run in a quiet local session (``flinkish info``,
                         the state check).
- :mod:`.state_check`    ``python -m flinkish_cli.planning.state_check``: a new program
                         planned against the state it restores, in a process of its own.
- :mod:`.compatibility`  whether a program fits the state it restores (no Spark).
"""
