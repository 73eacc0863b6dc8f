"""What is decided about a job before it starts, and how it travels to the job's processes.

- :mod:`.job`: the :class:`~.job.JobPlan` (built once by the CLI, read by the driver) and
  the Spark settings that carry it.
- :mod:`.rundir`: the job's private run directory, its file names and formats.

The bottom layer with :mod:`flinkish_cli.errors`: it imports nothing of flinkish's, and
every other package may import it.

Modules not named above:

- :mod:`.child`: the child-process protocol (a state check, a state read, an offline
  repartition): one JSON request in, one JSON answer out, bounded in time on both sides.
"""
