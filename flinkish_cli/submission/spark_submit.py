"""The ``spark-submit`` command for a job, for each of Flink's deployment targets.

=====================  ========================  ===========  ============================
Flink target (``-t``)  ``-m``                    deploy mode  notes
=====================  ========================  ===========  ============================
local (default)        ``local[N]``              client       N = max(slots, parallelism)
remote                 ``host:port`` or          session      a session cluster (Spark
                       ``sc://host:port``                     Connect): no spark-submit
remote                 ``spark://host:port``     client       Spark standalone
yarn-session           ``yarn``                  client       needs HADOOP_CONF_DIR
yarn-application       ``yarn``                  cluster      driver runs in YARN
kubernetes-session     ``k8s://https://...``     client
kubernetes-application ``k8s://https://...``     cluster      needs an image, upload path
=====================  ========================  ===========  ============================

``-m`` alone picks the target from its value, as Flink's ``-m yarn-cluster`` does; a bare
``host:port`` is, as in Flink, the cluster's REST endpoint (``rest.address`` and
``rest.port`` name it in the configuration): ``flinkish web``, which names its session
cluster's Connect server (:mod:`.endpoint`); ``sc://host:port`` names that server directly.
The command line holds paths only: every setting, secrets included, travels in the private
properties file (see :mod:`.launcher`), so nothing secret shows in ``ps``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flinkish_cli.config.mappings import CORES_MAX, standalone_cores
from flinkish_cli.errors import UsageError
from flinkish_cli.plan.job import SESSION_ARCHIVES, SESSION_PY_FILES
from flinkish_cli.plan.rundir import LOG4J2_FILE
from flinkish_cli.runtime.warm import connect_client_file
from flinkish_cli.spark import loopback
from flinkish_cli.spark.install import pyspark_home
from flinkish_cli.submission.endpoint import is_spark_master

LOCAL = "local"
REMOTE = "remote"
YARN_SESSION = "yarn-session"
YARN_APPLICATION = "yarn-application"
K8S_SESSION = "kubernetes-session"
K8S_APPLICATION = "kubernetes-application"
TARGETS = (LOCAL, REMOTE, YARN_SESSION, YARN_APPLICATION, K8S_SESSION, K8S_APPLICATION)
CLUSTER_MODE_TARGETS = (YARN_APPLICATION, K8S_APPLICATION)
#: Spark's setting for the module of its Python daemon, and flinkish's for local jobs (their
#: executors run this Python): :mod:`flinkish_cli.runtime.entry.pyspark_daemon`.
PYTHON_DAEMON_MODULE = "spark.python.daemon.module"
LOCAL_PYTHON_DAEMON = "flinkish_cli.runtime.entry.pyspark_daemon"
#: Spark's setting for JVM options put before ``spark.driver.extraJavaOptions``.
DRIVER_DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


@dataclass(frozen=True)
class Deployment:
    """Where the job runs: the Flink target, the Spark master and the deploy mode."""

    target: str
    master: str
    deploy_mode: str
    #: the REST endpoint (``host:port``) to ask for the session cluster's Connect address,
    #: when the job goes to a session cluster named by its endpoint (``master`` is then
    #: the endpoint's address as ``sc://``, until :mod:`.endpoint` resolves it)
    endpoint: str | None = None

    @property
    def driver_is_local(self) -> bool:
        """True when the driver runs on this machine (client mode and session clusters)."""
        return self.deploy_mode in ("client", "session")

    @property
    def session(self) -> bool:
        """True for a session cluster: the job's program is a Spark Connect client."""
        return self.deploy_mode == "session"


def resolve_deployment(
    target: str | None,
    jobmanager: str | None,
    configured_master: str,
    configured_target: str,
    session_address: str | None = None,
) -> Deployment:
    """Decide the deployment from ``-t``, ``-m`` and the configuration, refusing conflicts.

    ``configured_master`` is the translated master (``spark.master`` or ``local[N]``),
    ``configured_target`` is ``execution.target`` and ``session_address`` the REST endpoint
    that ``rest.address``/``rest.port`` name (``host:port``), if any.
    """
    if target is not None and target not in TARGETS:
        raise UsageError(
            f"Unknown target '{target}'.", f"Use one of: {', '.join(TARGETS)} (-t/--target)."
        )
    master = _master_from_jobmanager(jobmanager) if jobmanager else None
    # a bare host:port (from -m, or rest.address/rest.port) is a REST endpoint to ask
    endpoint = jobmanager.strip() if jobmanager and _is_endpoint(jobmanager, master) else None
    implied = _target_of_master(master) if master else None
    if target is None:
        target = implied if implied is not None else configured_target or LOCAL
    if master is None:
        master, endpoint = _default_master(target, configured_master, session_address)
    _check_pair(target, master)
    if master.startswith("sc://"):
        return Deployment(target=target, master=master, deploy_mode="session", endpoint=endpoint)
    mode = "cluster" if target in CLUSTER_MODE_TARGETS else "client"
    return Deployment(target=target, master=master, deploy_mode=mode)


def _master_from_jobmanager(value: str) -> str:
    value = value.strip()
    if value == "yarn-cluster":
        return "yarn"
    if is_spark_master(value):
        return value
    host, _, port = value.rpartition(":")
    if host and port.isdigit() and "/" not in value:  # Flink's meaning: a session cluster
        return f"sc://{value}"
    raise UsageError(
        f"'{value}' is not the address of a session cluster or a Spark master.",
        "Use -m host:port or sc://host:port (a session cluster: scripts/start-cluster.sh "
        "--session), local[N], spark://host:port, yarn or k8s://https://host:port.",
    )


def _is_endpoint(jobmanager: str, master: str | None) -> bool:
    """-m gave a bare host:port: a REST endpoint (Flink's meaning), not ``sc://``."""
    return (
        bool(master) and master.startswith("sc://") and not jobmanager.strip().startswith("sc://")
    )


def _target_of_master(master: str) -> str:
    if master.startswith("local"):
        return LOCAL
    if master.startswith(("spark://", "sc://")):
        return REMOTE
    if master == "yarn":
        return YARN_APPLICATION
    return K8S_APPLICATION


def _default_master(
    target: str, configured_master: str, session: str | None
) -> tuple[str, str | None]:
    """The master when ``-m`` names none, and the REST endpoint to ask for it when it comes
    from ``rest.address``/``rest.port`` (``session``)."""
    if target == LOCAL:
        return configured_master if configured_master.startswith("local") else "local[*]", None
    if target == REMOTE:
        if configured_master.startswith(("spark://", "sc://")):
            return configured_master, None
        if session:
            return f"sc://{session}", session  # until the endpoint names its Connect server
        raise UsageError(
            "Target 'remote' needs the address of a session cluster or a Spark master.",
            "Pass -m host:port (a session cluster, or set rest.address and rest.port), or "
            "-m spark://host:port (a Spark standalone master).",
        )
    if target in (YARN_SESSION, YARN_APPLICATION):
        return "yarn", None
    if configured_master.startswith("k8s://"):
        return configured_master, None
    raise UsageError(
        f"Target '{target}' needs the Kubernetes API server.",
        "Pass -m k8s://https://<api-server>:<port>, or set spark.master in the configuration.",
    )


def _check_pair(target: str, master: str) -> None:
    expected: str | tuple[str, ...] = {
        LOCAL: "local",
        REMOTE: ("spark://", "sc://"),
        YARN_SESSION: "yarn",
        YARN_APPLICATION: "yarn",
        K8S_SESSION: "k8s://",
        K8S_APPLICATION: "k8s://",
    }[target]
    if not master.startswith(expected):
        shown = " or ".join(expected) if isinstance(expected, tuple) else expected
        raise UsageError(
            f"Target '{target}' does not run on '{master}'.",
            f"A '{target}' job needs -m starting with {shown}; drop -t or -m.",
        )


@dataclass(frozen=True)
class SubmitCommand:
    """A ``spark-submit`` invocation: arguments (no secrets), environment and properties."""

    argv: list[str]
    env: dict[str, str]
    properties: dict[str, str] = field(repr=False)
    #: The class-data sharing archive this driver would map if it existed (made in the
    #: background once the job has started; see :mod:`.cds`).
    cds_missing: str | None = None


def spark_submit_binary() -> str:
    """pyspark's own ``spark-submit``."""
    return str(pyspark_home() / "bin" / "spark-submit")


def driver_entry_file() -> str:
    """The main file that ``spark-submit`` runs for every job."""
    return str(Path(__file__).resolve().parent.parent / "runtime" / "entry" / "flinkish_driver.py")


def build_command(
    deployment: Deployment,
    *,
    name: str,
    properties_file: str,
    py_files: list[str],
    archives: list[str],
    spark_conf: Mapping[str, str],
    run_dir: str,
    cds_options: list[str] | None = None,
    cds_missing: str | None = None,
    log_file: str | None = None,
) -> SubmitCommand:
    """The command that submits a job. ``spark_conf`` goes to the properties file only.

    A local-master driver writes its files on local disk through flinkish's Hadoop local file
    system when setup.sh made it (:mod:`flinkish_cli.spark.local_fs`: its jar last on the
    class path, ``SPARK_DIST_CLASSPATH``, so that the archive below still maps).

    A client-mode driver (its JVM on this machine) keeps the run directory off its class
    path, so that it can map a class-data sharing archive (``cds_options``, see :mod:`.cds`):
    ``SPARK_CONF_DIR`` is a fixed empty directory, the log configuration
    (``<run_dir>/log4j2.properties``) is named by ``-Dlog4j.configurationFile``, and the
    JVM's own warnings go to standard error (the job's log). In cluster mode the run
    directory is the local ``spark-submit``'s configuration directory, as before.
    """
    properties = dict(spark_conf)
    properties.setdefault("spark.ui.showConsoleProgress", "false")
    if deployment.driver_is_local:
        properties.setdefault("spark.pyspark.driver.python", sys.executable)
    if deployment.target in (LOCAL, REMOTE):
        properties.setdefault("spark.pyspark.python", sys.executable)
    if deployment.target == LOCAL and properties["spark.pyspark.python"] == sys.executable:
        properties.setdefault(PYTHON_DAEMON_MODULE, LOCAL_PYTHON_DAEMON)
    if deployment.master.startswith("spark://") and "spark.default.parallelism" in properties:
        # the parallelism is the cores the job holds on a standalone cluster, as a rescale sets
        parallelism = int(properties["spark.default.parallelism"])
        own = properties.get(CORES_MAX)  # the translation passes a -D of it through
        properties[CORES_MAX] = standalone_cores(parallelism, properties, own)
    if deployment.target == K8S_APPLICATION:
        _require(properties, "spark.kubernetes.container.image", "kubernetes.container.image.ref")
        _require(properties, "spark.kubernetes.file.upload.path", None)
    if deployment.target in (YARN_SESSION, YARN_APPLICATION) and not (
        os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")
    ):
        raise UsageError(
            "Submitting to YARN needs the cluster's Hadoop configuration.",
            "Set HADOOP_CONF_DIR (or YARN_CONF_DIR) to the directory of yarn-site.xml.",
        )
    yarn_env: dict[str, str] = {}
    if deployment.target in (YARN_SESSION, YARN_APPLICATION):
        yarn_env = yarn_settings(properties)
    python = properties.get("spark.pyspark.python")
    if deployment.target == YARN_APPLICATION and python:
        properties.setdefault("spark.yarn.appMasterEnv.PYSPARK_PYTHON", python)
    if deployment.target == K8S_APPLICATION and python:
        properties.setdefault("spark.kubernetes.driverEnv.PYSPARK_PYTHON", python)
    argv = [
        spark_submit_binary(),
        "--master",
        deployment.master,
        "--deploy-mode",
        deployment.deploy_mode,
        "--name",
        name,
        "--properties-file",
        properties_file,
    ]
    if py_files:
        argv += ["--py-files", ",".join(py_files)]
    if archives:
        argv += ["--archives", ",".join(archives)]
    argv.append(driver_entry_file())
    if deployment.deploy_mode == "client":
        from flinkish_cli.spark import cds

        options = [f"-Dlog4j.configurationFile={Path(run_dir, LOG4J2_FILE)}"]
        if log_file:  # Flink's name for it, for a log4j configuration of the user's own
            options.append(f"-Dlog.file={log_file}")
        options += cds.jvm_logging_options() + list(cds_options or [])
        default = properties.get(DRIVER_DEFAULT_JAVA_OPTIONS)
        properties[DRIVER_DEFAULT_JAVA_OPTIONS] = " ".join(
            [*options, *([default] if default else [])]
        )
        env = {"SPARK_CONF_DIR": str(cds.spark_conf_dir(fallback=Path(run_dir)))}
    else:
        env = {"SPARK_CONF_DIR": run_dir}
    env.update(yarn_env)
    loopback.apply(deployment.master, properties, env, os.environ)
    if deployment.target == LOCAL:  # executors in the driver's JVM: the jar is everywhere
        from flinkish_cli.spark import local_fs

        local = local_fs.driver_settings(pyspark_home())
        if local is not None:
            conf, env["SPARK_DIST_CLASSPATH"] = local
            for key, value in conf.items():
                properties.setdefault(key, value)
    return SubmitCommand(argv=argv, env=env, properties=properties, cds_missing=cds_missing)


def yarn_settings(properties: dict[str, str]) -> dict[str, str]:
    """The YARN targets: Spark's jars and pyspark's Python archives from this installation
    (``local:`` paths, which the NodeManager links rather than the client uploading about
    300 MB per job), unless ``yarn.provided.lib.dirs`` (``spark.yarn.jars``) names others.
    Loopback on a ResourceManager of this machine is :mod:`flinkish_cli.spark.loopback`'s.
    Sets defaults in ``properties``; returns the environment of ``spark-submit``."""
    home = pyspark_home()
    properties.setdefault("spark.yarn.jars", f"local:{home / 'jars'}/*")
    archives = sorted((home / "python" / "lib").glob("*.zip"))
    return {"PYSPARK_ARCHIVES_PATH": ",".join(f"local:{path}" for path in archives)}


def yarn_restarts(config: Any) -> dict[str, str]:
    """yarn-application: the job's restart strategy as YARN's application attempts.

    The driver runs in YARN's application master; when it dies YARN starts a new attempt
    (the program runs again and its queries resume from their checkpoints), up to
    ``spark.yarn.maxAppAttempts`` (capped by the cluster's
    ``yarn.resourcemanager.am.max-attempts``). Failures older than
    ``spark.yarn.am.attemptFailuresValidityInterval`` stop counting, as Flink's failure-rate
    interval and exponential-delay reset threshold do.
    """
    kind = str(config.get("restart-strategy.type") or "disable")

    def seconds(key: str) -> str:
        return f"{int(config.get(key).total_seconds())}s"

    if kind == "fixed-delay":
        attempts = int(config.get("restart-strategy.fixed-delay.attempts")) + 1
        return {"spark.yarn.maxAppAttempts": str(attempts)}
    if kind == "failure-rate":
        prefix = "restart-strategy.failure-rate."
        return {
            "spark.yarn.maxAppAttempts": str(
                int(config.get(prefix + "max-failures-per-interval")) + 1
            ),
            "spark.yarn.am.attemptFailuresValidityInterval": seconds(
                prefix + "failure-rate-interval"
            ),
        }
    if kind == "exponential-delay":
        prefix = "restart-strategy.exponential-delay."
        attempts = min(int(config.get(prefix + "attempts-before-reset-backoff")), 99) + 1
        return {
            "spark.yarn.maxAppAttempts": str(attempts),
            "spark.yarn.am.attemptFailuresValidityInterval": seconds(
                prefix + "reset-backoff-threshold"
            ),
        }
    return {"spark.yarn.maxAppAttempts": "1"}


def build_session_command(
    deployment: Deployment,
    *,
    run_dir: str,
    py_files: list[str],
    archives: list[str],
    spark_conf: Mapping[str, str],
    python: str | None = None,
) -> SubmitCommand:
    """The client process of a job in a session cluster: no spark-submit, no JVM.

    The client runs the job's program against the session cluster (Spark Connect); its
    settings, secrets included, travel in the same private properties file as a classic
    driver's, and the job's packages are added to its path and shipped to the cluster.
    """
    properties = dict(spark_conf)
    properties[SESSION_PY_FILES] = ",".join(py_files)
    properties[SESSION_ARCHIVES] = ",".join(archives)
    argv = [python or sys.executable, connect_client_file(), run_dir]
    env = {"SPARK_REMOTE": deployment.master}
    return SubmitCommand(argv=argv, env=env, properties=properties)


def _require(properties: dict[str, str], key: str, flink_key: str | None) -> None:
    if properties.get(key):
        return
    also = f" (or {flink_key})" if flink_key else ""
    raise UsageError(
        f"A kubernetes-application job needs {key}{also}.",
        f"Set it with -D {key}=... or in the configuration file.",
    )
