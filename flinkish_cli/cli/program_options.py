"""The options that name a job's program and how it runs: ``run``'s, shared by the
commands that start a program (``run``, ``run-application``, ``upgrade``).

:func:`program_options` declares them in Flink's names; :func:`program_request` turns what
was given into a :class:`~flinkish_cli.submission.submit.RunRequest`, refusing Java's
options and forms as Flink's Python users would expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flinkish_cli.cli.flink_args import refuse_java
from flinkish_cli.cli.options import common_options, general_options, output_option
from flinkish_cli.cli.output import echo

if TYPE_CHECKING:
    from flinkish_cli.submission.submit import RunRequest

#: Flink's deprecation line for -rm (printed on standard error).
RESTORE_MODE_DEPRECATED = "The option 'restoreMode' is deprecated. Please use 'claimMode' instead."
#: The parameters :func:`program_options` adds (what :func:`program_request` reads).
PROGRAM_PARAMS = (
    "job",
    "job_args",
    "python_file",
    "py_module",
    "py_files",
    "py_archives",
    "py_executable",
    "py_client_executable",
    "py_requirements",
    "py_python_path",
    "parallelism",
    "detached",
    "from_savepoint",
    "allow_non_restored",
    "claim_mode",
    "restore_mode",
    "shutdown_on_exit",
    "java_class",
    "java_classpath",
    "java_jar",
)


def _split(values: tuple[str, ...]) -> list[str]:
    """Flink's list flags are comma-separated and may be repeated."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def program_options(func: Any) -> Any:
    """The options of ``run`` (and ``run-application``, ``upgrade``), in Flink's names:
    the program, its arguments, and how it runs."""
    options = [
        click.argument("job", required=False, metavar="<job.py>"),
        click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[job arguments]"),
        click.option(
            "-py",
            "--python",
            "python_file",
            metavar="<pythonFile>",
            help="Python script with the job's entry point (same as <job.py>).",
        ),
        click.option(
            "-pym",
            "--pyModule",
            "py_module",
            metavar="<pythonModule>",
            help="Python module with the job's entry point; needs -pyfs.",
        ),
        click.option(
            "-pyfs",
            "--pyFiles",
            "py_files",
            multiple=True,
            metavar="<pythonFiles>",
            help="Files, directories or zips shipped to the executors (comma-separated).",
        ),
        click.option(
            "-pyarch",
            "--pyArchives",
            "py_archives",
            multiple=True,
            metavar="<arg>",
            help="Archives extracted on the executors; 'archive.zip#dir' names the directory.",
        ),
        click.option(
            "-pyexec",
            "--pyExecutable",
            "py_executable",
            metavar="<arg>",
            help="Python interpreter of the executors (python.executable).",
        ),
        click.option(
            "-pyclientexec",
            "--pyClientExecutable",
            "py_client_executable",
            metavar="<arg>",
            help="Python interpreter of the driver (python.client.executable).",
        ),
        click.option(
            "-pyreq",
            "--pyRequirements",
            "py_requirements",
            metavar="<arg>",
            help="requirements.txt installed and shipped to the executors "
            "('requirements.txt#cache_dir' installs offline).",
        ),
        click.option(
            "-pypath",
            "--pyPythonPath",
            "py_python_path",
            metavar="<arg>",
            help="Python paths of the workers, ':'-separated (python.pythonpath).",
        ),
        click.option(
            "-p",
            "--parallelism",
            type=click.IntRange(min=1),
            metavar="<parallelism>",
            help="Parallelism of the job (parallelism.default).",
        ),
        click.option("-d", "--detached", is_flag=True, help="Return once the job runs."),
        click.option(
            "-s",
            "--fromSavepoint",
            "from_savepoint",
            metavar="<savepointPath>",
            help="Savepoint, or <execution.checkpointing.dir>/<JobID>, to resume from.",
        ),
        click.option(
            "-n",
            "--allowNonRestoredState",
            "allow_non_restored",
            is_flag=True,
            help="Skip savepoint state of queries the job no longer has.",
        ),
        click.option(
            "-cm",
            "--claimMode",
            "claim_mode",
            type=click.Choice(["no_claim", "claim"], case_sensitive=False),
            default=None,
            help="no_claim (default) never modifies the savepoint; claim lets the job take it "
            "over.",
        ),
        click.option(
            "-rm",
            "--restoreMode",
            "restore_mode",
            hidden=True,
            type=click.Choice(["no_claim", "claim"], case_sensitive=False),
            help="Deprecated: use -cm.",
        ),
        click.option(
            "-sae",
            "--shutdownOnAttachedExit",
            "shutdown_on_exit",
            is_flag=True,
            help="Attached: cancel the job when this command ends abruptly, even killed.",
        ),
        click.option("-c", "--class", "java_class", hidden=True, help="Refused (Java only)."),
        click.option(
            "-C", "--classpath", "java_classpath", multiple=True, hidden=True, help="Refused."
        ),
        click.option("-j", "--jarfile", "java_jar", hidden=True, help="Refused (Java only)."),
        common_options,
        output_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def program_request(action: str, params: dict[str, Any]) -> RunRequest:
    """The run request ``params`` (the values of :func:`program_options`) describe; a
    :class:`~flinkish_cli.errors.UsageError` for Java's options and a missing program."""
    from flinkish_cli.client.base import resolve_local
    from flinkish_cli.errors import UsageError
    from flinkish_cli.submission.submit import RunRequest

    p = {name: params.get(name) for name in PROGRAM_PARAMS}
    if p["java_class"] is not None:
        raise refuse_java("-c", f"-c/--class {p['java_class']} (a Java entry class)")
    if p["java_classpath"]:
        raise refuse_java("-C", "-C/--classpath (the classpath of Java user code)")
    if p["java_jar"] is not None:
        raise refuse_java("jar", f"-j/--jarfile {p['java_jar']} (a Java program)")
    general = general_options()
    if general.yarn_application_id is not None:
        raise UsageError(
            f"-yid/--yarnapplicationId cannot be used with '{action}': Spark starts one YARN "
            "application per job and cannot join a running one.",
            "Use -t yarn-application (the job in its own application) or -t yarn-session.",
        )
    job, module = p["job"], p["py_module"]
    script = p["python_file"]
    args = list(p["job_args"] or ())
    if script and job:
        args.insert(0, job)
    elif not script and not module:
        script = job
    elif module and job:
        args.insert(0, job)
    if not script and not module:
        raise UsageError(
            "No job given.", f"Usage: flinkish {action} [OPTIONS] <job.py> [arguments]"
        )
    if script and script.lower().endswith(".jar"):
        raise refuse_java("jar", f"{script} (a Java program)")
    if p["restore_mode"] is not None:
        echo(RESTORE_MODE_DEPRECATED, err=True)
    from_savepoint = p["from_savepoint"]
    return RunRequest(
        script=script,
        module=module,
        args=args,
        py_files=_split(p["py_files"] or ()),
        py_archives=_split(p["py_archives"] or ()),
        py_executable=p["py_executable"],
        py_client_executable=p["py_client_executable"],
        py_requirements=p["py_requirements"],
        py_python_path=p["py_python_path"],
        parallelism=p["parallelism"],
        detached=bool(p["detached"]),
        target=general.execution_target,
        jobmanager=general.jobmanager,
        from_savepoint=resolve_local(from_savepoint) if from_savepoint else None,
        allow_non_restored_state=bool(p["allow_non_restored"]),
        claim_mode=(p["claim_mode"] or p["restore_mode"] or "no_claim").lower(),
        shutdown_on_attached_exit=bool(p["shutdown_on_exit"]),
    )
