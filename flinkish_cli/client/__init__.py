"""The job client: one place that acts on jobs, for every front end (the CLI and
``flinkish web``), as Flink's ``ClusterClient`` serves both Flink's CLI and its web UI.

- :mod:`.base`: the job client's interface and what it does alike over either transport
  (the waiting actions, a trigger's result, :func:`~.base.resolve_local`,
  :func:`~.base.savepoint_target`), and the control-channel names the front ends need.
- :mod:`.jobs`: :class:`~.jobs.JobClient` (list, logs, cancel, stop, savepoint, checkpoint,
  dispose, state, the dashboard's documents) over the registry in storage.
- :mod:`.rest`: :class:`~.rest.RestJobClient`, the same through ``flinkish web``, its
  requests built from :mod:`flinkish_cli.rest.messages`; :mod:`.http` its HTTP transport
  (:class:`~.http.Endpoint`); :mod:`.remote` the registry's jobs and a job's control
  channel through the endpoint.
- :mod:`.connect`: the one factory, the only module that knows both transports and the
  upgrade: which transport a command uses, and where ``run`` and ``upgrade`` are carried
  out (in the ``flinkish web`` that ``-m`` names, or here).
- :mod:`.asking`: sending a command to a job's driver through the control channel, waiting
  for its answer, and withdrawing it when the caller gives up.
- :mod:`.uploads`: ``flinkish web``'s services for programs sent to it (upload, run,
  upgrade, sweep, the warm runner), out of the job client the CLI uses.
- :mod:`.state_actions`: the job client's ``state`` actions (ls, show, export, a job's
  state as a document), a part of :class:`~.jobs.JobClient`.
- :mod:`.state_reads`: state read in a child process for a long-lived caller (flinkish web).
- :mod:`.explain`: ``flinkish info <job.py>``, a program's plans from a local session.
- :mod:`.yarn_logs`: a YARN job's driver log, read from the NodeManager that runs it.
- :mod:`.upgrade`: ``flinkish upgrade``, a client of the job client (its state machine,
  request and outcome, checks, rollback and verdict), a package of its own.

Above the submission layer and below the web server and the CLI, which parse and present;
they never talk to the registry's control channel themselves.
"""
