"""A YARN application of a job, through the ResourceManager's and NodeManager's REST APIs.

A ``-t yarn-application`` job's driver runs in the application's first container (Spark's
cluster mode, the ApplicationMaster). It records the application's id in the job's status
(:func:`application_of_container`, from the ``CONTAINER_ID`` YARN gives every container);
``list`` shows it, ``cancel`` ends the application (:func:`kill`), ``logs`` reads the driver's
log live from the NodeManager that runs it (:func:`driver_log`: the application's attempts on
the ResourceManager name the container and its node). When YARN starts another attempt of
the application (``yarn.application-attempts``), the new driver reads its attempt number from
its container id (:func:`attempt_of_container`) and why the previous attempt ended from the
ResourceManager (:func:`previous_attempt_cause`). Before any driver runs, the job's supervisor
finds its application by the tag ``spark-submit`` gives it (:func:`job_tag`,
:func:`tagged_application`) as soon as YARN has accepted it. The ResourceManager's web address is
that of ``HADOOP_CONF_DIR`` (or ``YARN_CONF_DIR``)'s yarn-site.xml, as Spark's own client
finds the cluster. Standard library only: no Spark, no Hadoop client.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flinkish_cli.errors import UsageError

#: ``container_[e<epoch>_]<cluster timestamp>_<application>_<attempt>_<container>``
_CONTAINER = re.compile(r"^container_(?:e\d+_)?(\d+)_(\d+)_(\d+)_\d+$")
TIMEOUT = 10.0


def application_of_container(container_id: str | None) -> str | None:
    """``application_<cluster timestamp>_<sequence>`` of a container id, else None."""
    match = _CONTAINER.match(container_id or "")
    return f"application_{match.group(1)}_{match.group(2)}" if match else None


def attempt_of_container(container_id: str | None) -> int | None:
    """The application attempt (1, 2, ...) a container belongs to, else None."""
    match = _CONTAINER.match(container_id or "")
    return int(match.group(3)) if match else None


def job_tag(job_id: str) -> str:
    """The YARN application tag of a job's applications (``spark.yarn.tags``; YARN keeps tags
    in lower case, as a JobID is written)."""
    return f"flinkish-job-{job_id.lower()}"


def newest_application(report: Any, known: str | None = None) -> str | None:
    """The newest application of a ResourceManager's list of applications (``/apps``), when
    it is not ``known``: the one a supervisor's ``spark-submit`` has just had accepted."""
    apps = ((report or {}).get("apps") or {}).get("app") or []
    ids = [str(app["id"]) for app in apps if str(app.get("id", "")).startswith("application_")]
    newest = max(ids, key=lambda i: tuple(int(n) for n in i.split("_")[1:3]), default=None)
    return newest if newest != known else None


def tagged_application(job_id: str, known: str | None = None) -> str | None:
    """The id of the job's newest YARN application (:func:`job_tag`) once YARN has accepted
    it, unless it is ``known``; None before then or when the ResourceManager does not answer."""
    try:
        url = f"{web_address()}/ws/v1/cluster/apps?applicationTags={job_tag(job_id)}"
        return newest_application(_call(url), known)
    except (OSError, ValueError, KeyError, UsageError):
        return None


def previous_attempt_cause(app_id: str, attempt: int) -> str:
    """Why YARN started ``attempt`` of ``app_id``: the previous attempt's driver ended, with
    the ResourceManager's word on that attempt (its state and diagnostics, the exit status of
    its container) when it answers. One line."""
    cause = (
        f"The driver of YARN application attempt {attempt - 1} of {app_id} ended "
        f"(its ApplicationMaster container was lost); YARN started attempt {attempt}."
    )
    try:
        said = _attempt_report(app_id, attempt - 1)
    except (OSError, ValueError, KeyError, UsageError):  # the RM is silent: no diagnostics
        return cause
    words = " ".join(said.split())
    return f"{cause} YARN: {words}" if words else cause


def last_attempt_cause(app_id: str) -> str | None:
    """Why YARN ended ``app_id`` without another attempt, when its last attempt's driver
    could not say so itself (its ApplicationMaster container lost): that attempt, the
    application's final state and the ResourceManager's word on the attempt. None while the
    application runs or the ResourceManager does not answer. One line."""
    try:
        app = application(app_id)
        if str(app.get("state", "")) not in ("FINISHED", "FAILED", "KILLED"):
            return None
        base = f"{web_address()}/ws/v1/cluster/apps/{app_id}/appattempts"
        listed = (_call(base).get("appAttempts") or {}).get("appAttempt") or []
        last = max((int(a.get("id", 0)) for a in listed), default=0)
        said = _attempt_report(app_id, last) if last else ""
    except (OSError, ValueError, KeyError, UsageError):
        return None
    words = " ".join(said.split())
    cause = (
        f"The driver of YARN application attempt {last} of {app_id} ended (its "
        f"ApplicationMaster container was lost), the application's last attempt: YARN ended "
        f"it {app.get('state')}."
    )
    return f"{cause} YARN: {words}" if words else cause


def _attempt_report(app_id: str, attempt: int) -> str:
    """The ResourceManager's state and diagnostics of one attempt of an application."""
    attempt_id = f"appattempt_{app_id.removeprefix('application_')}_{attempt:06d}"
    base = f"{web_address()}/ws/v1/cluster/apps/{app_id}/appattempts"
    listed = (_call(base).get("appAttempts") or {}).get("appAttempt") or []
    state = next((a.get("appAttemptState") for a in listed if a.get("id") == attempt), None)
    try:
        report = _call(f"{base}/{attempt_id}")
    except urllib.error.HTTPError:  # a ResourceManager without the attempt's own page
        report = {}
    report = report.get("appAttempt", report) if isinstance(report, dict) else {}
    diagnostics = str(report.get("diagnosticsInfo") or "").strip()
    state = state or report.get("appAttemptState")
    parts = [f"attempt {attempt} {state}" if state else "", diagnostics]
    return ": ".join(part for part in parts if part)


def is_live(app_id: str) -> bool:
    """Whether the ResourceManager still runs the application (a new attempt may be on its
    way); True when it does not answer, as its silence proves nothing."""
    try:
        state = str(application(app_id).get("state", ""))
    except (OSError, ValueError, KeyError, UsageError):
        return True
    return state not in ("FINISHED", "FAILED", "KILLED")


#: Where Spark's client puts the Hadoop configuration in a YARN container of its application
#: (the container's working directory).
CONTAINER_CONF_DIR = "__spark_conf__/__hadoop_conf__"


def conf_dir() -> str | None:
    """The client's Hadoop configuration directory (``HADOOP_CONF_DIR``, else
    ``YARN_CONF_DIR``), if set; in a container of a Spark application, the one Spark's client
    shipped with it."""
    given = os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")
    if given:
        return given
    if os.environ.get("CONTAINER_ID") and os.path.isdir(CONTAINER_CONF_DIR):
        return os.path.abspath(CONTAINER_CONF_DIR)
    return None


def site() -> dict[str, str]:
    """The properties of the client's yarn-site.xml (empty without one)."""
    import xml.etree.ElementTree as ET

    directory = conf_dir()
    if not directory:
        return {}
    try:
        root = ET.parse(Path(directory, "yarn-site.xml")).getroot()
    except (OSError, ET.ParseError):
        return {}
    return {p.findtext("name", ""): p.findtext("value", "") for p in root.iter("property")}


def is_loopback() -> bool:
    """Whether the client's ResourceManager is on this machine's loopback (its address, else
    its host name, 127.x or localhost): a single-node YARN such as start-cluster.sh's."""
    conf = site()
    host = (conf.get("yarn.resourcemanager.address") or "").rsplit(":", 1)[0] or conf.get(
        "yarn.resourcemanager.hostname", ""
    )
    return host.startswith("127.") or host == "localhost"


def web_address() -> str:
    """``http://host:port`` of the ResourceManager's web app and REST API."""
    conf = site()
    address = conf.get("yarn.resourcemanager.webapp.address") or (
        f"{conf.get('yarn.resourcemanager.hostname') or '0.0.0.0'}:8088"
    )
    if not conf:
        raise UsageError(
            "The YARN application cannot be reached without the cluster's Hadoop configuration.",
            "Set HADOOP_CONF_DIR (or YARN_CONF_DIR) to the directory of yarn-site.xml.",
        )
    return f"http://{address}"


def _call(url: str, method: str = "GET", body: Any = None, accept_json: bool = True) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": "application/json" if accept_json else "text/plain"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        text = response.read().decode("utf-8", "replace")
    return json.loads(text) if accept_json else text


def application(app_id: str) -> dict[str, Any]:
    """The ResourceManager's report of an application (``state``, ``finalStatus``, ...)."""
    return dict(_call(f"{web_address()}/ws/v1/cluster/apps/{app_id}")["app"])


def kill(app_id: str) -> str:
    """Ask the ResourceManager to end the application (state KILLED); the state it reports
    afterwards. An application that has already ended keeps its final state."""
    url = f"{web_address()}/ws/v1/cluster/apps/{app_id}/state"
    try:
        state = _call(url, "PUT", {"state": "KILLED"})
        return str(state.get("state", ""))
    except urllib.error.HTTPError as error:
        if error.code in (400, 409):  # already finished: nothing to kill
            return str(application(app_id).get("state", ""))
        raise


def driver_container(app_id: str) -> tuple[str, str] | None:
    """The current attempt's ApplicationMaster container (the driver) and its NodeManager's
    web address ``host:port``, or None before YARN has given it one."""
    attempts = _call(f"{web_address()}/ws/v1/cluster/apps/{app_id}/appattempts")
    found = ((attempts or {}).get("appAttempts") or {}).get("appAttempt") or []
    if not found:
        return None
    latest = max(found, key=lambda a: int(a.get("id", 0)))
    container, node = latest.get("containerId"), latest.get("nodeHttpAddress")
    return (str(container), str(node)) if container and node else None


#: The driver's log files in its container: Spark's and flinkish's log lines (log4j's
#: console), then what the JVM and Python write to standard error.
DRIVER_LOGS = ("stdout", "stderr")


def _contents(text: str) -> str:
    """A NodeManager's log response without its framing (the header up to
    ``LogContents:``, the trailer from ``End of LogType:``)."""
    start = text.find("LogContents:\n")
    body = text[start + len("LogContents:\n") :] if start >= 0 else text
    end = body.rfind("End of LogType:")
    return body[:end] if end >= 0 else body


def driver_log(app_id: str, name: str = "stdout") -> str:
    """One log file of the driver's container (:data:`DRIVER_LOGS`), as the NodeManager
    serves it, live; empty before the container has started."""
    found = driver_container(app_id)
    if found is None:
        return ""
    container, node = found
    url = f"http://{node}/ws/v1/node/containers/{container}/logs/{name}"
    try:
        return _contents(str(_call(url, accept_json=False)))
    except urllib.error.HTTPError as error:
        if error.code == 404:  # not started yet, or its logs already removed
            return ""
        raise


# -- the checks before a submission ----------------------------------------------------------
_SIZE = re.compile(r"^(\d+)([kmgt]?)b?$", re.IGNORECASE)
_MB_PER = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}
#: Spark's smallest memory overhead of a container (MB) and its share of the heap.
MIN_OVERHEAD_MB = 384
OVERHEAD_FACTOR = 0.10


def _megabytes(size: str) -> int:
    """A Spark size (``640m``, ``1g``, a number of MB) in MB, rounded up."""
    match = _SIZE.match(size.strip())
    if not match:
        return 0
    return int(-(-int(match.group(1)) * _MB_PER[match.group(2).lower()] // 1))


def container_mb(properties: Mapping[str, str], role: str) -> int:
    """The container YARN is asked for a driver (``role`` driver) or an executor: Spark's
    heap plus its overhead (set, else max(384 MB, 10 %))."""
    heap = _megabytes(properties.get(f"spark.{role}.memory", "1g"))
    overhead = properties.get(f"spark.{role}.memoryOverhead")
    extra = _megabytes(overhead) if overhead else max(MIN_OVERHEAD_MB, int(heap * OVERHEAD_FACTOR))
    return heap + extra


def _queues(scheduler: Any) -> dict[str, Any]:
    """Every leaf queue of the scheduler's report, by name (the capacity scheduler's nest)."""
    found: dict[str, Any] = {}

    def walk(queue: Any) -> None:
        children = ((queue.get("queues") or {}).get("queue")) or []
        if not children and queue.get("queueName"):
            found[str(queue["queueName"])] = queue
        for child in children:
            walk(child)

    walk((scheduler.get("scheduler") or {}).get("schedulerInfo") or {})
    return found


def check_submission(properties: Mapping[str, str], cluster_mode: bool) -> None:
    """Refuse, before ``spark-submit`` asks YARN for anything, a submission YARN would refuse
    or queue for ever: a ResourceManager that does not answer, a queue it does not have, a
    container larger than its largest. One :class:`UsageError` naming the fix."""
    base = web_address()
    try:
        _call(f"{base}/ws/v1/cluster/info")
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise UsageError(
            f"The YARN ResourceManager at {base} does not answer ({reason}).",
            "Start it, or set HADOOP_CONF_DIR to the configuration of a running cluster.",
        ) from None
    queues = _queues(_call(f"{base}/ws/v1/cluster/scheduler"))
    queue = properties.get("spark.yarn.queue")
    if queue and queues and queue.removeprefix("root.") not in queues:
        raise UsageError(
            f"YARN has no queue '{queue}' (its queues: {', '.join(sorted(queues))}).",
            "Set yarn.application.queue to one of them.",
        )
    largest = _largest_container(queues.get((queue or "default").removeprefix("root.")))
    if not largest:
        return
    asks = [("executor", container_mb(properties, "executor"))]
    if cluster_mode:
        asks.insert(0, ("driver", container_mb(properties, "driver")))
    for role, size in asks:
        if size > largest:
            key = {"driver": "jobmanager", "executor": "taskmanager"}[role]
            article = "A" if role == "driver" else "An"
            raise UsageError(
                f"{article} {role} container of {size} MB is larger than YARN's largest, "
                f"{largest} MB.",
                f"Lower {key}.memory.process.size to at most {largest}m, or raise the "
                "cluster's yarn.scheduler.maximum-allocation-mb.",
            )


def _largest_container(queue: Any) -> int:
    """The largest container a queue grants (MB), 0 when the report does not say."""
    if not queue:
        return 0
    allocation = queue.get("maximumAllocation") or {}
    return int(allocation.get("memory") or 0)
