"""The job client: one place that acts on jobs, for every front end.

- :mod:`.base`: the job client's interface and what it does alike over either transport
  (the waiting actions), as Flink's ``ClusterClient`` serves both Flink's CLI and its web UI.
- :mod:`.jobs`: :class:`~.jobs.JobClient` (list, logs, cancel, stop, savepoint, checkpoint,
  dispose, inspect) over the registry in storage; :mod:`.rest`: the same through
  ``flinkish web``; :mod:`.connect` picks one for a command, and says where ``run`` and
  ``upgrade`` are carried out (in the ``flinkish web`` that ``-m`` names, or here).
- :mod:`.asking`: sending a command to a job's driver through the control channel, waiting
  for its answer, and withdrawing it when the caller gives up.
- :mod:`.upgrade`: ``flinkish upgrade``, a client of the job client: its state machine, with
  :mod:`.upgrade_outcome` (request, presenter, outcome), :mod:`.upgrade_checks`,
  :mod:`.upgrade_rollback` (the previous program) and :mod:`.upgrade_stability` (the verdict).

Above the submission layer and below the CLI: the CLI (and later the REST API) parse and
present; they never talk to the registry's control channel themselves.
"""
