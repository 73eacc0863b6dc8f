"""``flinkish upgrade``: a client of the job client that replaces a running job's program
and keeps its state, or brings the previous program back.

- :mod:`.machine`: :class:`~.machine.Upgrade`, the upgrade's state machine (check, take the
  savepoint, start the new program, judge it, roll back), and
  :class:`~.machine.Launching`, how it starts programs (here, or as ``flinkish web``
  starts submitted ones);
- :mod:`.outcome`: the request, the presenter, the outcome and its final line (what
  travels to and from a ``flinkish web`` that carries an upgrade out);
- :mod:`.checks`: step 1's checks of the old job and the savepoint directory;
- :mod:`.rollback`: the previous program, kept and brought back;
- :mod:`.stability`: step 4's verdict on the new job, and the commit logs the rollback
  guarantee reads.

Where it runs, here or in the ``flinkish web`` that ``-m`` names,
:func:`flinkish_cli.client.connect.upgrade` decides.
"""
