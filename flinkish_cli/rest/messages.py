"""Every route of ``flinkish web``, declared once: its method, its path (with its path
parameters as ``{name}``), and the types of its request and response bodies, as Flink's
``MessageHeaders`` declare each message of its REST API once for its server's handlers and
its ``RestClient``. The server registers its routes from these (:mod:`flinkish_cli.web`),
the REST job client builds its requests from them (:mod:`flinkish_cli.client.rest`), and
``run -m`` asks :data:`CLUSTER` (:mod:`flinkish_cli.submission.endpoint`): no path is written
anywhere else (tests/rest/test_messages.py checks).

The body types are Flink's class names where the message is Flink's (what Flink's errors
name: "Request did not match expected format JarRunRequestBody."), else flinkish's own. The
trigger messages' bodies are declared field by field in :mod:`.bodies`, read by the server
and written by the client; the other documents are written by
:mod:`flinkish_cli.web.flink_json` and read by the client. Flink's routes are served with
and without :data:`VERSION_PREFIX`; flinkish's own live under ``/flinkish/`` (never a path
of Flink's: :mod:`.wire` says what travels on them besides the bodies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from flinkish_cli.rest.bodies import (
    AsynchronousOperationResult,
    CheckpointTriggerRequestBody,
    JarUpload,
    RequestBody,
    SavepointDisposalRequest,
    SavepointTriggerRequestBody,
    StopWithSavepointRequestBody,
    TriggerResponse,
)

#: Flink's REST API version prefix: every Flink route is served under it too.
VERSION_PREFIX = "/v1"

_PARAMETER = re.compile(r"\{([a-z]+)\}")


@dataclass(frozen=True)
class Message:
    """One route: ``method path``, the body it takes (``request``) and the one it answers
    (``response``), None for none or for text: a class of :mod:`.bodies` where the body is
    declared there, else its type's name."""

    method: str
    path: str
    request: type[RequestBody] | str | None = None
    response: type[RequestBody] | str | None = None

    @property
    def parameters(self) -> tuple[str, ...]:
        """The path's parameters, in order (``jobid``, ``triggerid``...)."""
        return tuple(_PARAMETER.findall(self.path))

    def url(self, **values: str) -> str:
        """The path with each parameter's value (quoted); a ``KeyError`` for a parameter
        not given, a ``TypeError`` for one the path does not have."""
        extra = set(values) - set(self.parameters)
        if extra:
            raise TypeError(f"{self.path} has no parameter {sorted(extra)[0]}")
        return _PARAMETER.sub(lambda m: quote(values[m.group(1)], safe=""), self.path)


# -- Flink's REST API (served with and without /v1) ------------------------------------------
DASHBOARD_CONFIG = Message("GET", "/config", response="DashboardConfiguration")
CLUSTER_OVERVIEW = Message("GET", "/overview", response="ClusterOverviewWithVersion")
JOB_IDS = Message("GET", "/jobs", response="JobIdsWithStatusOverview")
JOBS_OVERVIEW = Message("GET", "/jobs/overview", response="MultipleJobsDetails")
JOB_DETAILS = Message("GET", "/jobs/{jobid}", response="JobDetailsInfo")
#: ``?mode=cancel`` (the only mode)
JOB_CANCEL = Message("PATCH", "/jobs/{jobid}", response="EmptyResponseBody")
JOB_STATUS = Message("GET", "/jobs/{jobid}/status", response="JobStatusInfo")
JOB_CONFIG = Message("GET", "/jobs/{jobid}/config", response="JobConfigInfo")
JOB_PLAN = Message("GET", "/jobs/{jobid}/plan", response="JobPlanInfo")
CHECKPOINT_STATISTICS = Message(
    "GET", "/jobs/{jobid}/checkpoints", response="CheckpointingStatistics"
)
CHECKPOINT_TRIGGER = Message(
    "POST", "/jobs/{jobid}/checkpoints", CheckpointTriggerRequestBody, TriggerResponse
)
CHECKPOINT_STATUS = Message(
    "GET", "/jobs/{jobid}/checkpoints/{triggerid}", response=AsynchronousOperationResult
)
JOB_EXCEPTIONS = Message("GET", "/jobs/{jobid}/exceptions", response="JobExceptionsInfoWithHistory")
STOP_WITH_SAVEPOINT = Message(
    "POST", "/jobs/{jobid}/stop", StopWithSavepointRequestBody, TriggerResponse
)
SAVEPOINT_TRIGGER = Message(
    "POST", "/jobs/{jobid}/savepoints", SavepointTriggerRequestBody, TriggerResponse
)
SAVEPOINT_STATUS = Message(
    "GET", "/jobs/{jobid}/savepoints/{triggerid}", response=AsynchronousOperationResult
)
SAVEPOINT_DISPOSAL = Message(
    "POST", "/savepoint-disposal", SavepointDisposalRequest, TriggerResponse
)
SAVEPOINT_DISPOSAL_STATUS = Message(
    "GET", "/savepoint-disposal/{triggerid}", response=AsynchronousOperationResult
)
RESOURCE_REQUIREMENTS = Message(
    "GET", "/jobs/{jobid}/resource-requirements", response="JobResourceRequirementsBody"
)
RESOURCE_REQUIREMENTS_UPDATE = Message(
    "PUT", "/jobs/{jobid}/resource-requirements", "JobResourceRequirementsBody", TriggerResponse
)
RESOURCE_REQUIREMENTS_STATUS = Message(
    "GET", "/jobs/{jobid}/resource-requirements/{triggerid}", response=AsynchronousOperationResult
)
RESCALES_HISTORY = Message("GET", "/jobs/{jobid}/rescales/history", response="JobRescalesHistory")
RESCALES_OVERVIEW = Message(
    "GET", "/jobs/{jobid}/rescales/overview", response="JobRescalesOverview"
)
RESCALES_SUMMARY = Message("GET", "/jobs/{jobid}/rescales/summary", response="JobRescalesSummary")
RESCALE_DETAILS = Message(
    "GET", "/jobs/{jobid}/rescales/details/{rescaleuuid}", response="JobRescaleDetails"
)

# -- flinkish's own routes for its CLI (flinkish_cli.rest.wire) -------------------------------
#: which registry this server serves, its session cluster, whether it takes programs
CLUSTER = Message("GET", "/flinkish/cluster", response="ClusterDocument")
REGISTRY_JOBS = Message("GET", "/flinkish/registry/jobs", response="JobListing")
REGISTRY_JOB = Message("GET", "/flinkish/registry/jobs/{jobid}", response="JobStatus")
CONTROL_ANSWER = Message(
    "GET", "/flinkish/registry/jobs/{jobid}/control/{triggerid}", response="ControlAnswer"
)
CONTROL_FORGET = Message("DELETE", "/flinkish/registry/jobs/{jobid}/control/{triggerid}")
CONTROL_WITHDRAW = Message(
    "POST", "/flinkish/registry/jobs/{jobid}/control/{triggerid}/withdraw", response="Withdrawn"
)
#: ``?follow=true``, ``?lines=N``; plain text, streamed
REGISTRY_LOG = Message("GET", "/flinkish/registry/jobs/{jobid}/log")
REGISTRY_JOB_SAVEPOINTS = Message(
    "GET", "/flinkish/registry/jobs/{jobid}/savepoints", response="SavepointRecords"
)
REGISTRY_SAVEPOINTS = Message("GET", "/flinkish/registry/savepoints", response="SavepointRecords")
#: ``?jobs=<JobID>,...``
LAST_SAVEPOINTS = Message("GET", "/flinkish/registry/last-savepoints", response="LastSavepoints")
REGISTRY_JOB_RESCALES = Message(
    "GET", "/flinkish/registry/jobs/{jobid}/rescales", response="RescaleHistory"
)
JAR_UPLOAD = Message("POST", "/flinkish/jars/upload", JarUpload, "JarUploadResponseBody")
JAR_RUN = Message("POST", "/flinkish/jars/{jarid}/run", "JarRunRequestBody", "JarRunResponseBody")
#: answered with events, one JSON object a line (:func:`.wire.event`)
JAR_UPGRADE = Message("POST", "/flinkish/jars/{jarid}/upgrade", "UpgradeRequest", "UpgradeEvents")

# -- the dashboard's own documents (flinkish_cli.web.dashboard) ------------------------------
DASHBOARD_JOBS = Message("GET", "/flinkish/jobs", response="JobRows")
DASHBOARD_SERIES = Message("GET", "/flinkish/jobs/{jobid}/series", response="Series")
DASHBOARD_SAVEPOINTS = Message("GET", "/flinkish/jobs/{jobid}/savepoints", response="Savepoints")
DASHBOARD_PLAN = Message("GET", "/flinkish/jobs/{jobid}/plan", response="GraphView")
#: ``flinkish info <JobID> --output json``'s document (the CLI reads it through an endpoint)
JOB_INFO = Message("GET", "/flinkish/jobs/{jobid}/info", response="JobInfo")
DASHBOARD_CHECKPOINT_SIZE = Message(
    "GET", "/flinkish/jobs/{jobid}/checkpoint-size", response="CheckpointSize"
)
DASHBOARD_STATE = Message("GET", "/flinkish/jobs/{jobid}/state", response="StateListing")
DASHBOARD_STATE_ROWS = Message(
    "GET", "/flinkish/jobs/{jobid}/state/{query}/{operator}", response="StateRows"
)

# -- the rest of the server ------------------------------------------------------------------
#: Prometheus' text format (:mod:`flinkish_cli.web.metrics`)
METRICS = Message("GET", "/metrics")
#: the dashboard's page, at both paths, and its scripts and styles under :data:`ASSETS`
PAGE = Message("GET", "/")
PAGE_INDEX = Message("GET", "/index.html")
ASSETS = "/assets"


def catalogue() -> dict[str, Message]:
    """Every message of this module, by its name."""
    return {name: value for name, value in globals().items() if isinstance(value, Message)}
