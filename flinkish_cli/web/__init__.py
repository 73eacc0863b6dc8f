"""``flinkish web``: Flink's REST API over the registry, and Prometheus metrics.

A front end like the CLI: it parses HTTP requests and presents the job client's answers in
Flink's JSON, and acts only through :class:`~flinkish_cli.client.jobs.JobClient`. It keeps no
state of its own (triggers and their results live in each job's control channel, disposals
in the registry), so stopping or restarting it never touches a job; an upgrade it carries
out for the CLI is finished before it exits (:mod:`.upgrades`).

- :mod:`.settings`: what the endpoint allows, from the configuration;
- :mod:`.server`: binding (loopback unless told otherwise; Flink's port lists) and serving;
- :mod:`.protocol`: the HTTP connection's limits (a deadline in every state: slow heads,
  the linger after an early refusal, a client that stops reading; a cap on connections that
  closes the idle ones first; malformed requests answered in Flink's JSON);
- :mod:`.limits`: long requests (follows of logs, actions that wait) on threads of their
  own, capped, never the shared ones; the server's stopping, which ends them;
- :mod:`.security`: the guard before every route (the Host, cross-site requests, the bearer
  token, body size and time) and the headers every answer carries;
- :mod:`.app`: the application (routes with and without Flink's ``/v1`` prefix, their paths
  from :mod:`flinkish_cli.rest.messages`; errors as Flink's ``{"errors": [...]}``);
- the handlers, by audience, each through the job client: :mod:`.flink_api` (Flink's REST
  API), :mod:`.rescales` (Flink's rescale routes and the rescale history),
  :mod:`.registry_api` (flinkish's own routes for its CLI), :mod:`.uploads` (programs
  uploaded, run and upgraded here), :mod:`.dashboard_api` (the dashboard's documents);
  :mod:`.handling` what they share (the client, the pools, a job's 404, an action's 409);
- :mod:`.parsing` reads requests, :mod:`.replies` writes answers (and a route from its
  message);
- :mod:`.flink_json`: flinkish's job statuses in the field names of Flink's REST API;
  :mod:`.dashboard`: the page and its own documents; :mod:`.metrics`: ``/metrics``, with
  Flink's metric names; :mod:`.upgrades`: an upgrade the CLI asked for, carried out in a
  thread of its own, its lines streamed back.

Imported only by ``flinkish web``: Starlette, uvicorn and prometheus_client (the ``web``
extra) never load for any other command.
"""
