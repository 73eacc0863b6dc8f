"""Submitting a job: validate the request, plan it, package it, start its driver.

:func:`prepare` does everything that can fail on bad input before anything is written or
started (missing or broken job file, unknown target, bad configuration); :func:`start`
then records the job as CREATED and starts its driver. Callable without click.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flinkish_cli.autoscaler.settings import check_can_scale
from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.plan.job import PLAN_CONF_KEY, Entry, JobPlan, RestorePlan
from flinkish_cli.plan.rundir import PROPERTIES_FILE, make_run_dir
from flinkish_cli.registry import program, status_writer
from flinkish_cli.registry.jobid import new_job_id
from flinkish_cli.registry.logs import log_path as job_log_path
from flinkish_cli.registry.program import ProgramRecord
from flinkish_cli.registry.store import JobRegistry, registry_for
from flinkish_cli.spark import cds, yarn
from flinkish_cli.spark.install import check_java, pyspark_home
from flinkish_cli.submission import launcher, packaging, shipping
from flinkish_cli.submission.pyflink import module_source, refuse_pyflink
from flinkish_cli.submission.spark_submit import (
    YARN_APPLICATION,
    YARN_SESSION,
    Deployment,
    SubmitCommand,
    build_command,
    build_session_command,
    resolve_deployment,
    yarn_restarts,
)
from flinkish_cli.submission.warm_runner import WarmRunner


@dataclass
class RunRequest:
    """What ``flinkish run`` was asked, in Flink's terms."""

    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    py_files: list[str] = field(default_factory=list)
    py_archives: list[str] = field(default_factory=list)
    py_executable: str | None = None
    py_client_executable: str | None = None
    py_requirements: str | None = None
    py_python_path: str | None = None
    parallelism: int | None = None
    detached: bool = False
    target: str | None = None
    jobmanager: str | None = None
    from_savepoint: str | None = None
    allow_non_restored_state: bool = False
    claim_mode: str = "no_claim"
    shutdown_on_attached_exit: bool = False  # -sae
    #: ``flinkish upgrade``: the job this one replaces, and whether it is a rollback
    upgraded_from: str | None = None
    rolled_back: bool = False
    #: the program was checked against the state already (``upgrade``, before it touched the
    #: old job): what its restore leaves out (``-n``); None: ``-s`` checks it (see
    #: :mod:`.restore_check`)
    leave_out: dict[str, list[int]] | None = None

    def config_flags(self) -> dict[str, str]:
        """The configuration keys that this request's flags set (they win over -D); which
        flag sets which key is the option table's (:data:`~flinkish_cli.config.options.FLAGS`)."""
        from flinkish_cli.config.options import FLAGS

        given = {
            "-p": None if self.parallelism is None else str(self.parallelism),
            "-t": self.target,
            "-d": "false" if self.detached else None,
            "-pyfs": ",".join(self.py_files),
            "-pyarch": ",".join(self.py_archives),
            "-pyexec": self.py_executable,
            "-pyclientexec": self.py_client_executable,
            "-pyreq": self.py_requirements,
            "-pypath": self.py_python_path,
        }
        return {FLAGS[flag]: value for flag, value in given.items() if value}


@dataclass
class PreparedJob:
    """A job ready to start: its plan, command and private run directory."""

    plan: JobPlan
    command: SubmitCommand
    deployment: Deployment
    run_dir: Path
    log_path: Path
    registry: JobRegistry
    package: packaging.JobPackage | None
    #: what the registry keeps of the program (for an upgrade's rollback), and its files
    program: ProgramRecord
    kept_files: list[Path] = field(default_factory=list)
    upgraded_from: str | None = None
    rolled_back: bool = False
    #: what the user should know of how the job was placed (e.g. an address in its old
    #: meaning); the caller shows them
    notices: list[str] = field(default_factory=list)

    def discard(self) -> None:
        """Remove what preparing wrote (nothing else was touched)."""
        shutil.rmtree(self.run_dir, ignore_errors=True)


def check_program(request: RunRequest) -> Path | None:
    """The job's script, validated: present, a file, valid Python."""
    if bool(request.script) == bool(request.module):
        raise UsageError(
            "Name the job's program: a script (job.py, or -py job.py) or a module (-pym).",
            "Run 'flinkish run --help' for the forms.",
        )
    if request.module:
        if not request.py_files:
            raise UsageError(
                f"-pym {request.module} needs -pyfs with the files that hold the module.",
                "For example: flinkish run -pym mypkg.job -pyfs ./src",
            )
        found = module_source(request.module, request.py_files)
        if found is not None:
            refuse_pyflink(found.read_bytes(), f"-pym {request.module} ({found})")
        return None
    script = Path(request.script or "")
    if not script.exists():
        raise JobError(f"The job file {script} does not exist.", "Check the path of the job.")
    if not script.is_file():
        raise JobError(f"The job file {script} is not a file.", "Name the job's Python script.")
    try:
        source = script.read_bytes()
        compile(source, str(script), "exec")
    except SyntaxError as error:
        raise JobError(
            f"The job file {script} is not valid Python: {error.msg} "
            f"(line {error.lineno}, column {error.offset}).",
            "Fix the syntax error and run the job again.",
        ) from None
    except (OSError, ValueError) as error:
        raise JobError(f"The job file {script} cannot be read: {error}.") from None
    refuse_pyflink(source, str(script))
    return script.resolve()


def prepare(request: RunRequest, config: Any, restore: RestorePlan | None = None) -> PreparedJob:
    """Validate and plan the job; writes only its private run directory."""
    from flinkish_cli.config import to_spark

    script = check_program(request)
    for item in request.py_files + [a.split("#", 1)[0] for a in request.py_archives]:
        if "://" not in item and not Path(item).exists():
            raise JobError(f"{item} (given with -pyfs/-pyarch) does not exist.")
    if request.py_requirements and not Path(request.py_requirements.split("#")[0]).is_file():
        raise JobError(f"The requirements file {request.py_requirements} does not exist.")
    translation = to_spark(config)
    check_can_scale(config)
    session = config.get("rest.address")
    deployment = resolve_deployment(
        request.target,
        request.jobmanager,
        translation.master,
        str(config.get("execution.target") or "local"),
        f"{session}:{config.get('rest.port').first}" if session else None,
    )
    checkpoint_root = str(config.get("execution.checkpointing.dir"))
    notices: list[str] = []
    if deployment.endpoint:
        from flinkish_cli.submission.endpoint import session_cluster

        token = config.get("flinkish.web.auth-token")
        found = session_cluster(deployment.endpoint, str(token) if token else None)
        deployment = dataclasses.replace(deployment, master=found.master)
        notices += [found.notice] if found.notice else []
    shipping.check_kafka_sink(config)
    if deployment.session:
        shipping.check_session_cluster(deployment.master)
        shipping.refuse_session_connectors(config)
        shipping.refuse_session_exactly_once(config)
    else:
        shipping.ship_connectors(config, translation.conf)
        shipping.ship_s3a(checkpoint_root, translation.conf)
        check_java()
    job_id = new_job_id()
    log_dir = Path(str(config.get("env.log.dir"))).expanduser()
    log_path = Path(job_log_path(str(log_dir), job_id))
    run_dir = make_run_dir(log_dir, job_id)
    try:
        prepared = _plan(
            request,
            config,
            translation,
            deployment,
            script,
            job_id,
            checkpoint_root,
            log_path,
            run_dir,
            restore,
        )
        prepared.notices = notices
        return prepared
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _plan(
    request: RunRequest,
    config: Any,
    translation: Any,
    deployment: Deployment,
    script: Path | None,
    job_id: str,
    checkpoint_root: str,
    log_path: Path,
    run_dir: Path,
    restore: RestorePlan | None,
) -> PreparedJob:
    package = packaging.package_job(script, run_dir) if script else None
    shipped = [packaging.as_py_file(item, run_dir) for item in request.py_files]
    if request.py_requirements:
        shipped.append(str(packaging.install_requirements(request.py_requirements, run_dir)))
    py_files = ([str(package.zip_path)] if package else []) + shipped
    if not deployment.driver_is_local:
        py_files.append(str(packaging.package_flinkish(run_dir)))
    archives = list(request.py_archives)
    name = str(
        config.get("pipeline.name")
        or config.get("yarn.application.name")
        or (script.stem if script else request.module)
    )
    entry = Entry(
        kind="file" if script else "module",
        target=str(script) if script else str(request.module),
        archive_name=package.script_in_zip if package else None,
        args=list(request.args),
    )
    interval = config.get("execution.checkpointing.interval")
    mode = str(config.get("execution.runtime-mode") or "STREAMING").upper()
    plan = JobPlan(
        job_id=job_id,
        name=name,
        entry=entry,
        checkpoint_root=checkpoint_root,
        flink_conf=config.to_flat(include_secrets=False),
        master=deployment.master,
        deploy_mode=deployment.deploy_mode,
        target=deployment.target,
        runtime_mode="BATCH" if mode == "BATCH" else "STREAMING",
        trigger_interval_ms=int(interval.total_seconds() * 1000) if interval else None,
        heartbeat_interval_s=config.get("heartbeat.interval").total_seconds(),
        heartbeat_timeout_s=config.get("heartbeat.timeout").total_seconds(),
        parallelism=int(config.get("parallelism.default")),
        log_path=str(log_path),
        run_dir=str(run_dir) if deployment.driver_is_local else None,
        restore=restore,
        detached=request.detached,
    )
    spark_conf = {k: v for k, v in translation.conf.items() if k != "spark.master"}
    spark_conf[PLAN_CONF_KEY] = plan.encode()
    spark_conf.pop("spark.submit.pyFiles", None)
    if deployment.target == YARN_APPLICATION:
        for key, value in yarn_restarts(config).items():
            spark_conf.setdefault(key, value)
        # the supervisor finds the application by it once YARN accepted it (run -d returns)
        given = spark_conf.get("spark.yarn.tags")
        spark_conf["spark.yarn.tags"] = ",".join(
            [*([given] if given else []), yarn.job_tag(plan.job_id)]
        )
    if deployment.session:
        command = build_session_command(
            deployment,
            run_dir=str(run_dir),
            py_files=py_files,
            archives=archives,
            spark_conf=spark_conf,
            python=str(config.get("python.client.executable") or "") or None,
        )
    else:
        cds_options, cds_missing = driver_archive(config, deployment.deploy_mode)
        command = build_command(
            deployment,
            name=name,
            properties_file=str(run_dir / PROPERTIES_FILE),
            py_files=py_files,
            archives=archives,
            spark_conf=spark_conf,
            run_dir=str(run_dir),
            cds_options=cds_options,
            cds_missing=cds_missing,
            log_file=str(log_path),
        )
    if deployment.target in (YARN_SESSION, YARN_APPLICATION):
        yarn.check_submission(command.properties, deployment.deploy_mode == "cluster")
    registry = registry_for(config)
    kept = [package.zip_path] if package else []
    kept += [Path(item) for item in shipped if "://" not in item]
    program = ProgramRecord(
        kind=entry.kind,
        target=package.script_in_zip if package else entry.target,
        args=list(request.args),
        archives=archives,
        options={"jobmanager": request.jobmanager} if request.jobmanager else {},
        conf=dict(plan.flink_conf),
        origin=entry.target,
    )
    return PreparedJob(
        plan,
        command,
        deployment,
        run_dir,
        log_path,
        registry,
        package,
        program,
        packaging.distinct_names(kept, run_dir),
        request.upgraded_from,
        request.rolled_back,
    )


def driver_archive(config: Any, deploy_mode: str) -> tuple[list[str], str | None]:
    """The JVM options that map the drivers' class-data sharing archive, for a driver started
    on this machine (``deploy_mode`` client) with ``env.java.class-data-sharing`` on and the
    archive whole; and the archive's path when it is not there yet (the driver then runs
    without it, says so once and has one made)."""
    if deploy_mode != "client" or not config.get("env.java.class-data-sharing"):
        return [], None
    archive = cds.archive_path(pyspark_home())
    if archive is None:
        return [], None
    if cds.usable(archive):
        return cds.driver_options(archive), None
    return [], str(archive)


def start(
    prepared: PreparedJob,
    watch_cli: bool = False,
    pipe_output: bool | None = None,
    environment: dict[str, str] | None = None,
    warm: WarmRunner | None = None,
) -> launcher.Launched:
    """Record the job as CREATED and start its supervisor, which starts its driver.

    ``watch_cli`` (``-sae``): the job is cancelled when this process exits, however it exits.
    ``pipe_output``: the driver's output piped to this process (default: when attached);
    ``environment``: the supervisor's environment instead of this process's; ``warm``: the
    warm runner a detached session-cluster job may start in (:func:`launcher.launch`).
    """
    plan = prepared.plan
    created = status_writer.record_created(
        prepared.registry, plan, prepared.upgraded_from, prepared.rolled_back
    )
    program.keep(prepared.registry, plan.job_id, prepared.program, prepared.kept_files)
    try:
        return launcher.launch(
            prepared.command,
            prepared.run_dir,
            prepared.log_path,
            attached=not plan.detached if pipe_output is None else pipe_output,
            environment=environment,
            job_id=plan.job_id,
            checkpoint_root=plan.checkpoint_root,
            restarts_here=prepared.deployment.target != YARN_APPLICATION,
            watch_pid=os.getpid() if watch_cli else None,
            client=prepared.deployment.session,
            warm=warm,
        )
    except OSError as error:
        cause = f"spark-submit could not start: {error}"
        status_writer.record_launch_failed(prepared.registry, created, cause)
        prepared.discard()
        raise JobError(cause) from error
