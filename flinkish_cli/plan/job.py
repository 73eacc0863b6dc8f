"""The plan of a job: what to run, where, and with which Flink semantics.

A :class:`JobPlan` is built once by the CLI from the effective configuration and the ``run``
arguments, and travels to the job's driver inside the Spark configuration (base64 JSON under
``spark.flinkish.plan``). It never holds secrets: those reach Spark only through the private
properties file (see :mod:`flinkish_cli.plan.rundir`).

This module imports nothing of flinkish's: every layer may use it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PLAN_CONF_KEY = "spark.flinkish.plan"
#: Where a session job's client finds what spark-submit's --py-files/--archives would give.
SESSION_PY_FILES = "spark.flinkish.session.pyFiles"
SESSION_ARCHIVES = "spark.flinkish.session.archives"
#: The Spark settings that carry the S3 credentials to a job's processes (never in the plan:
#: in the private properties file), by the Flink key each one is read back as.
SECRET_FROM_SPARK = {
    "s3.access-key": "spark.hadoop.fs.s3a.access.key",
    "s3.secret-key": "spark.hadoop.fs.s3a.secret.key",
    "s3.session.token": "spark.hadoop.fs.s3a.session.token",
}


def secrets_from(spark_value: Callable[[str], str | None]) -> dict[str, str | None]:
    """The S3 credentials a job's process was given, by Flink key, from ``spark_value`` (a
    Spark setting's value by its key: ``SparkConf.get``, or the properties file's ``get``)."""
    return {key: spark_value(spark_key) for key, spark_key in SECRET_FROM_SPARK.items()}


def storage_flat_conf(plan: JobPlan, secrets: dict[str, str | None]) -> dict[str, str]:
    """The Flink configuration of the job, with the S3 secrets its process was given."""
    flat = dict(plan.flink_conf)
    flat.update({key: value for key, value in secrets.items() if value})
    return flat


def job_root(script: Path) -> Path:
    """The directory whose content becomes the import root of the job: the script's own,
    or above it while it is a package (has ``__init__.py``)."""
    directory = script.resolve().parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


@dataclass
class Entry:
    """The job's main program: a script file or a module."""

    kind: str  # "file" | "module"
    target: str  # absolute path of the script, or the module name
    archive_name: str | None = None  # the script's path inside the job's zip (cluster mode)
    args: list[str] = field(default_factory=list)


@dataclass
class RestorePlan:
    """Where the job's queries start from (a savepoint or a retained checkpoint)."""

    source: str
    allow_non_restored_state: bool = False
    claim_mode: str = "no_claim"
    #: query -> ids of its stateful operators whose state the restore leaves out: the last
    #: operators of a query the new program no longer has, skipped with -n (the state check
    #: found them; Spark refuses a restored query with state its plan does not have)
    leave_out: dict[str, list[int]] = field(default_factory=dict)
    #: an in-place rescale's id: the job's own checkpoints are repartitioned to the job's
    #: parallelism, and restored from ``source`` (the rescale's savepoint) only where a
    #: checkpoint is missing or its repartition was interrupted
    rescale: str | None = None


@dataclass
class JobPlan:
    """Everything decided about a job before it starts."""

    job_id: str
    name: str
    entry: Entry
    checkpoint_root: str
    flink_conf: dict[str, str]
    master: str
    deploy_mode: str = "client"
    target: str = "local"
    runtime_mode: str = "STREAMING"
    trigger_interval_ms: int | None = None
    heartbeat_interval_s: float = 10.0
    heartbeat_timeout_s: float = 50.0
    parallelism: int = 1
    log_path: str | None = None
    run_dir: str | None = None
    restore: RestorePlan | None = None
    detached: bool = False
    #: 0 for the job's first driver; n for the n-th driver its supervisor restarted
    attempt: int = 0

    @property
    def job_dir(self) -> str:
        """``<checkpoint root>/<JobID>``."""
        return f"{self.checkpoint_root.rstrip('/')}/{self.job_id}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobPlan:
        data: dict[str, Any] = json.loads(text)
        data["entry"] = Entry(**data["entry"])
        if data.get("restore"):
            data["restore"] = RestorePlan(**data["restore"])
        return cls(**data)

    def encode(self) -> str:
        """The plan as one base64 token, safe inside a Java properties file."""
        return base64.b64encode(self.to_json().encode()).decode()

    @classmethod
    def decode(cls, token: str) -> JobPlan:
        return cls.from_json(base64.b64decode(token.encode()).decode())
