"""``flinkish info <job.py>``: the plan of each of the job's streaming queries (Spark's explain)."""

from __future__ import annotations

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, load_config, output_option
from flinkish_cli.cli.output import echo, print_json


@click.command(
    cls=FlinkCommand,
    context_settings={"allow_interspersed_args": False},
    short_help="Show a job's query plans.",
)
@click.argument("job", metavar="<job.py>")
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[job arguments]")
@click.option("-p", "--parallelism", type=click.IntRange(min=1), help="Parallelism of the job.")
@click.option("-c", "--class", "java_class", hidden=True, help="Refused (Java only).")
@common_options
@output_option
def info(
    job: str,
    job_args: tuple[str, ...],
    parallelism: int | None,
    java_class: str | None,
    dynamic: tuple[str, ...],
    conf_dir: str | None,
    verbose: bool,
    output: str,
) -> None:
    """Print the plan of each streaming query of a job without running it."""
    import logging

    from flinkish_cli.cli.flink_args import refuse_java

    if java_class is not None:
        raise refuse_java("-c", f"-c/--class {java_class} (a Java entry class)")
    if job.lower().endswith(".jar"):
        raise refuse_java("jar", f"{job} (a Java program)")

    from flinkish_cli.client.jobs import JobClient

    flags = {"parallelism.default": str(parallelism)} if parallelism else {}
    client = JobClient(load_config(conf_dir, dynamic, flags))
    logging.getLogger("py4j").setLevel(logging.ERROR)
    script, plans = client.explain(job, list(job_args))
    if output == "json":
        print_json({"job": script, "queries": [p.__dict__ for p in plans]})
        return
    if not plans:
        echo("The job starts no streaming query.")
    for plan in plans:
        echo(f"== Query '{plan.name}' ==")
        if plan.note:
            echo(f"-- {plan.note}")
        echo(plan.plan)
        echo()
