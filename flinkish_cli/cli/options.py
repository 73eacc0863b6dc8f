"""Options shared by every action, as Flink's CLI has them.

:func:`common_options` gives every action Flink's general options and flinkish's own:

- ``-D key=value`` (repeatable), ``--conf-dir``, ``-v/--verbose`` (Flink accepts and ignores
  ``-v``; in flinkish it shows Python tracebacks on errors);
- ``-m/--jobmanager``, ``-t/--target``, ``-e/--executor`` (deprecated alias of ``-t``),
  ``-z/--zookeeperNamespace`` and ``-yid/--yarnapplicationId``.

The general options of the second group are not handed to the command function (so that a
command written before them keeps its signature); :func:`general_options` reads them from
the click context. Their meaning in flinkish:

- ``-t`` / ``-e``: ``execution.target`` for every action (:func:`load_config` adds it); only
  ``run`` acts on it, the job actions reach jobs the same way whatever the target.
- ``-m``: for ``run``, the address handed to submission (a Spark master, or a session
  cluster's ``host:port``); for the job actions (``list``, ``cancel``, ``stop``,
  ``savepoint``, ``checkpoint``, ``info <JobID>``, ``logs``), ``host:port`` is the REST
  endpoint (``flinkish web``) they go through, as Flink's CLI goes through its JobManager
  (:func:`job_client`; a Spark master there names no endpoint).
- ``-z``: accepted and ignored with a warning (flinkish has no ZooKeeper high availability).
- ``-yid``: accepted and ignored with a warning on registry actions; ``run`` refuses it.

:func:`load_config` turns these, ``-D`` and the command's own flags into the effective
:class:`~flinkish_cli.config.Configuration`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: Where the general options are kept in ``click.Context.meta``.
META_KEY = "flinkish.general-options"

#: Set by ``--verbose`` on any action (read by the entry point to show tracebacks).
VERBOSE = {"on": False}


@dataclass
class GeneralOptions:
    """Flink's general options as given on the command line (None: not given)."""

    jobmanager: str | None = None
    target: str | None = None
    executor: str | None = None
    zookeeper_namespace: str | None = None
    yarn_application_id: str | None = None

    @property
    def execution_target(self) -> str | None:
        """``-t``, else the deprecated ``-e`` (``-t`` wins when both are given, as in Flink)."""
        return self.target or self.executor


def general_options(ctx: click.Context | None = None) -> GeneralOptions:
    """The general options of the command being run (all None outside a click command)."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return GeneralOptions()
    return ctx.meta.setdefault(META_KEY, GeneralOptions())


def _store(attribute: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        options = ctx.meta.setdefault(META_KEY, GeneralOptions())
        if value is not None:
            setattr(options, attribute, value)
        return value

    return callback


def _verbose(_ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        VERBOSE["on"] = True
    return value


def common_options(func: F) -> F:
    """Add Flink's general options and ``-D``, ``--conf-dir``, ``--verbose`` to a command.

    The command function receives ``dynamic``, ``conf_dir`` and ``verbose``; the others are
    read with :func:`general_options`.
    """
    general = [
        (
            ("-m", "--jobmanager"),
            "jobmanager",
            "<host:port>",
            "The REST endpoint (flinkish web) the job actions go through; for run, also a "
            "Spark master or a session cluster's host:port.",
        ),
        (
            ("-t", "--target"),
            "target",
            "<arg>",
            "Deployment target (execution.target): local, remote, yarn-session, "
            "yarn-application, kubernetes-session or kubernetes-application.",
        ),
        (("-e", "--executor"), "executor", "<arg>", "Deprecated: use -t."),
        (
            ("-z", "--zookeeperNamespace"),
            "zookeeper_namespace",
            "<zookeeperNamespace>",
            "Accepted and ignored: flinkish has no ZooKeeper high availability.",
        ),
        (
            ("-yid", "--yarnapplicationId"),
            "yarn_application_id",
            "<arg>",
            "Accepted and ignored by the job actions; run refuses it.",
        ),
    ]
    for flags, attribute, metavar, text in reversed(general):
        func = click.option(
            *flags,
            attribute,
            metavar=metavar,
            expose_value=False,
            callback=_store(attribute),
            hidden=attribute in ("executor", "yarn_application_id"),
            help=text,
        )(func)
    func = click.option(
        "-D",
        "dynamic",
        multiple=True,
        metavar="<property=value>",
        help="Override a configuration key (repeatable); wins over the configuration file.",
    )(func)
    func = click.option(
        "--conf-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Directory holding flink-conf.yaml or config.yaml "
        "(FLINK_CONF_DIR wins; default ./conf).",
    )(func)
    func = click.option(
        "-v",
        "--verbose",
        is_flag=True,
        default=False,
        callback=_verbose,
        help="Show Python tracebacks on errors.",
    )(func)
    return func


def output_option(func: F) -> F:
    """Add ``--output text|json`` (``-o``) for commands that scripts read."""
    return click.option(
        "-o",
        "--output",
        "output",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format; json is stable for scripts.",
    )(func)


def load_config(
    conf_dir: str | None, dynamic: tuple[str, ...], flags: Mapping[str, str] | None = None
) -> Any:
    """Read the effective configuration (file, then ``-D``, then command flags); its
    warnings (deprecated or not-applicable keys, ignored general options) go to standard
    error. ``-t``/``-e`` of the running command set ``execution.target``."""
    from flinkish_cli.cli.output import warn
    from flinkish_cli.config import load_configuration

    general = general_options()
    merged = dict(flags or {})
    if general.execution_target and "execution.target" not in merged:
        merged["execution.target"] = general.execution_target
    config = load_configuration(conf_dir=conf_dir, dynamic=dynamic, flags=merged)
    for message in config.warnings:
        warn(message)
    for message in ignored_general_options(general):
        warn(message)
    _sweep_dead_runs(config)
    return config


def _sweep_dead_runs(config: Any) -> None:
    """Every command sweeps the run directories of jobs whose supervisor was killed: their
    private Spark properties file (secrets included) must not outlive the job. A log
    directory without run directories costs one listing (the sweeper is not even imported)."""
    import contextlib
    import os
    from pathlib import Path

    from flinkish_cli.plan.rundir import RUN_DIR_PREFIX

    log_dir = Path(str(config.get("env.log.dir"))).expanduser()
    with contextlib.suppress(Exception):  # housekeeping never fails a command
        with os.scandir(log_dir) as entries:
            if not any(entry.name.startswith(RUN_DIR_PREFIX) for entry in entries):
                return
        from flinkish_cli.submission.launcher import sweep_run_dirs

        sweep_run_dirs(log_dir)


def job_client(config: Any) -> Any:
    """The job client of a job action: through the REST endpoint that ``-m host:port`` (or
    ``rest.address``) names, or over the registry in storage
    (:func:`flinkish_cli.client.connect.job_client`); ``--verbose`` says which."""
    import os

    from flinkish_cli.cli.output import echo
    from flinkish_cli.client.connect import job_client as connect

    def note(line: str) -> None:
        if VERBOSE["on"] or os.environ.get("FLINKISH_VERBOSE"):
            echo(f"INFO: {line}", err=True)

    return connect(config, general_options().jobmanager, note)


def ignored_general_options(general: GeneralOptions, action: str | None = None) -> list[str]:
    """Warnings for general options that flinkish accepts and ignores."""
    messages = []
    if general.zookeeper_namespace is not None:
        messages.append(
            "-z/--zookeeperNamespace is ignored: flinkish has no ZooKeeper high availability "
            "(jobs are found through execution.checkpointing.dir)."
        )
    if general.yarn_application_id is not None and action != "run":
        messages.append(
            "-yid/--yarnapplicationId is ignored: jobs are found by JobID through "
            "execution.checkpointing.dir, whatever YARN application runs them."
        )
    return messages


def savepoint_type_option(
    help: str = "canonical or native (Spark has one format; both give the same).",
) -> Callable[[F], F]:
    """Flink's ``-type/--type canonical|native``, in any case."""
    from flinkish_cli.cli.flink_args import FORMAT_TYPES

    return click.option(
        "-type",
        "--type",
        "savepoint_type",
        type=click.Choice(FORMAT_TYPES, case_sensitive=False),
        default=None,
        help=help,
    )


def savepoint_dir_option(
    short: str, long: str, dest: str, metavar: str, help: str
) -> Callable[[F], F]:
    """A savepoint directory given with a flag whose value may be left out (Flink's
    optional argument): the flag alone means ``execution.checkpointing.savepoint-dir``."""
    from flinkish_cli.cli.flink_args import NO_VALUE

    return click.option(
        short,
        long,
        dest,
        is_flag=False,
        flag_value=NO_VALUE,
        default=None,
        metavar=metavar,
        help=help,
    )


def detached_trigger_option(func: F) -> F:
    """Flink's ``-detached`` of ``savepoint`` and ``stop``: trigger, print the id, return."""
    return click.option(
        "-detached",
        "--detached",
        "detached",
        is_flag=True,
        help="Return once the request is written, printing its trigger id; the job carries it out.",
    )(func)
