"""The wire between ``flinkish web`` and its clients, with one owner each: below the web
server and the REST job client alike, so that both (and ``run -m``'s look at an endpoint)
take it from here and neither writes it again.

- :mod:`.messages`: every route, as Flink's ``MessageHeaders``: its method, its path and
  path parameters, its request and response types.
- :mod:`.bodies`: the trigger messages' JSON bodies, field by field (their names on the
  wire and their types), read by the server and written by the client.
- :mod:`.wire`: what travels beside the bodies: flinkish's request headers, the events of
  an upgrade carried out on the server, and the job client's errors sent whole.

Imports nothing of flinkish's but :mod:`flinkish_cli.errors`.
"""
