"""The generated reference pages of the documentation site, made from the code.

Each module renders one page under ``docs/reference/`` from the definitions the product
itself runs on, so the page cannot drift from the code:

- :mod:`.cli`: ``cli.md``, every command and option from the click definitions, the exit
  statuses from :mod:`flinkish_cli.errors` and the ``--output json`` documents from the
  commands' sources;
- :mod:`.rest`: ``rest-api.md``, every route of ``flinkish web``'s route table with the
  statuses its handler answers;
- :mod:`.metrics`: ``metrics.md``, every Prometheus metric family ``flinkish web`` exposes;
- :mod:`.scripts`: ``scripts.md``, each script's own ``--help``.

``python -m scripts.docs --write`` regenerates them all (and ``docs/configuration.md``);
``python -m scripts.docs --check`` fails when a committed page differs from its generator's
output, as the tests under ``tests/docs`` do.
"""
