"""The job client: one place that acts on jobs, for every front end (the CLI and
``flinkish web``), as Flink's ``ClusterClient`` serves both Flink's CLI and its web UI.

- :mod:`.base`: the job client's interface and what it does alike over either transport
  (the waiting actions, :func:`~.base.resolve_local`, :func:`~.base.savepoint_target`).
- :mod:`.jobs`: :class:`~.jobs.JobClient` (list, logs, cancel, stop, savepoint, checkpoint,
  dispose, inspect, state, the dashboard's documents) over the registry in storage, and
  flinkish web's upload services.
- :mod:`.rest`: :class:`~.rest.RestJobClient`, the same through ``flinkish web``: its HTTP
  transport and its requests, built from :mod:`flinkish_cli.rest.messages`.
- :mod:`.connect`: the one factory: which transport a command uses, and where ``run`` and
  ``upgrade`` are carried out (in the ``flinkish web`` that ``-m`` names, or here).
- :mod:`.asking`: sending a command to a job's driver through the control channel, waiting
  for its answer, and withdrawing it when the caller gives up.
- :mod:`.state_reads`: state read in a child process for a long-lived caller (flinkish web).
- :mod:`.upgrade`: ``flinkish upgrade``, a client of the job client: its state machine, with
  :mod:`.upgrade_outcome` (request, presenter, outcome), :mod:`.upgrade_checks`,
  :mod:`.upgrade_rollback` (the previous program) and :mod:`.upgrade_stability` (the verdict).

Above the submission layer and below the web server and the CLI, which parse and present;
they never talk to the registry's control channel themselves.
"""
