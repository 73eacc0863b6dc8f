"""The dashboard of ``flinkish web``: its page and assets, and the few documents of flinkish's
own that it reads beside Flink's REST API (under ``/flinkish/``, so they never shadow a path
of Flink's).

- ``GET /`` the page (one HTML file; the views are ``#/overview`` and ``#/job/<JobID>``, as
  in Flink's Web UI), ``GET /assets/<file>`` its scripts, style and the vendored charting
  and graph-layout libraries (uPlot and dagre, both MIT, their licences beside them). No
  asset comes from a CDN: it works offline. The page and assets hold no job data, so they
  are served without the token; every document the page then reads needs it, which the page
  asks for when the endpoint answers 401.
- ``GET /flinkish/cluster`` the session cluster this endpoint fronts (its Connect address),
  which ``flinkish run -m host:port`` asks for (:mod:`flinkish_cli.submission.endpoint`), and
  the registry it serves, which every other command of the CLI checks first
  (:mod:`flinkish_cli.client.connect`).
- ``GET /flinkish/jobs`` a row per job for the job list: state, uptime, last checkpoint, its
  rates, last savepoint.
- ``GET /flinkish/jobs/:jobid/series`` the job's figures over time, for the charts
  (:mod:`flinkish_cli.registry.series`, with the newest batches of its status).
- ``GET /flinkish/jobs/:jobid/plan`` the job graph with each node's latest figures
  (:func:`flinkish_cli.registry.graph_view.job_view`; each query's is what
  ``flinkish info <JobID> --output json`` shows under its ``graph``), drawn in the Graph tab
  with the vendored graph-layout library (dagre, MIT, its licence beside it).
- ``GET /flinkish/jobs/:jobid/savepoints`` its savepoint history (and its lineage's, across
  upgrades), newest first.
- ``GET /flinkish/jobs/:jobid/checkpoint-size`` what each query's checkpoint takes on
  storage, part by part, as the driver last measured it, and for the parts that grow with age
  why and what to do (the document ``flinkish info <JobID> --output json`` prints).
- ``GET /flinkish/jobs/:jobid/state`` its state as ``flinkish state ls <JobID> --output json``
  prints it (queries, stateful operators, stores, schemas, rows, bytes), and
  ``GET /flinkish/jobs/:jobid/state/:query/:operator?store=&key=&limit=`` the biggest keys of
  a store (or one key's rows), as ``state show --output json``: each read runs in a child
  process (the server never starts a JVM itself), one at a time per job, cached until the job
  commits another batch (:mod:`flinkish_cli.client.state_reads`).
- ``GET /flinkish/registry/jobs/:jobid/rescales`` (served by :mod:`flinkish_cli.web.rescales`)
  the autoscaler's rescale history as the registry holds it: the Autoscaler tab, shown once
  it has evaluated the job, charts the job's parallelism from its records over the series'
  input rate and backlog, and lists the records and the latest evaluation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flinkish_cli.registry.graph_view import job_summary
from flinkish_cli.registry.history import SavepointRecord
from flinkish_cli.registry.series import FIELDS, Series
from flinkish_cli.registry.status import JobStatus, parse_timestamp
from flinkish_cli.registry.store import RegistryIdentity
from flinkish_cli.rest import messages
from flinkish_cli.submission.endpoint import (
    REGISTRY_KEY,
    SESSION_KEY,
    SUBMIT_KEY,
    VERSION_KEY,
)
from flinkish_cli.web.flink_json import job_overview

ASSETS = Path(__file__).with_name("assets")
#: Paths served without the token: the page and its assets, which hold no job data.
PUBLIC_PATHS = (messages.PAGE.path, messages.PAGE_INDEX.path)
PUBLIC_PREFIX = messages.ASSETS + "/"


def cluster(
    session_cluster: str | None, version: str, registry: RegistryIdentity, submit: bool = False
) -> dict[str, Any]:
    """``GET /flinkish/cluster``: the session cluster, whether it takes programs, the version,
    and the registry served (its location and id: no secret)."""
    return {
        SESSION_KEY: session_cluster,
        SUBMIT_KEY: submit and session_cluster is not None,
        VERSION_KEY: version,
        REGISTRY_KEY: {"location": registry.location, "id": registry.id},
    }


def job_row(
    status: JobStatus, now: float | None = None, last_savepoint: SavepointRecord | None = None
) -> dict[str, Any]:
    """One row of the job list: Flink's JobDetails and the figures the list shows, its
    queries' latest batches' and its last savepoint (the history's newest completed)."""
    now = time.time() if now is None else now
    latest = status.latest_batches().values()
    last_checkpoint = max((parse_timestamp(p.timestamp) for p in latest), default=None)
    return {
        **job_overview(status, now),
        "queries": len(status.queries),
        "restarts": status.restarts,
        "last-checkpoint": last_checkpoint,
        "input-rate": round(sum(p.input_rows_per_second for p in latest), 3),
        "processing-rate": round(sum(p.processed_rows_per_second for p in latest), 3),
        "last-savepoint": last_savepoint.summary() if last_savepoint else None,
    }


def job_rows(
    statuses: list[JobStatus],
    unreadable: int,
    last_savepoints: Mapping[str, SavepointRecord | None] | None = None,
) -> dict[str, Any]:
    """``GET /flinkish/jobs``: newest first, and how many jobs could not be read;
    ``last_savepoints`` holds each job's last savepoint by JobID (the job client's
    ``last_savepoints``), a job without one shows none."""
    now = time.time()
    savepoints = last_savepoints or {}
    rows = [job_row(s, now, savepoints.get(s.job_id)) for s in statuses]
    rows.sort(key=lambda r: r["start-time"], reverse=True)
    return {"jobs": rows, "unreadable": unreadable, "now": int(now * 1000)}


def series(status: JobStatus, kept: Series) -> dict[str, Any]:
    """``GET /flinkish/jobs/:jobid/series``: per query, its points oldest first, and its
    stateful operators' state rows and bytes over time (``operators``)."""
    return {
        "jid": status.job_id,
        "fields": list(FIELDS),
        "queries": kept.queries,
        "operators": kept.operators,
    }


def checkpoint_size(status: JobStatus) -> dict[str, Any]:
    """``GET /flinkish/jobs/:jobid/checkpoint-size``: the registry's document of each query's
    checkpoint by part (:func:`flinkish_cli.registry.graph_view.job_summary`)."""
    return job_summary(status)


def savepoints(records: list[SavepointRecord]) -> dict[str, Any]:
    """``GET /flinkish/jobs/:jobid/savepoints``: the records in the order given (the job
    client's history: newest first), as ``savepoint list --output json`` shows them."""
    return {"savepoints": [record.summary() for record in records]}


def is_public(path: str) -> bool:
    """True for the page and its assets (served without the token)."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)
