"""``flinkish info <job.py>``: the plan of each of the job's streaming queries (Spark's explain).

``flinkish info <JobID>``: what each query's checkpoint of a submitted job takes on storage,
part by part, as its driver last measured it, and for the parts that grow with age (a file
source's log, a file sink's log) why and what to do (:mod:`flinkish_cli.registry.footprint`);
through the REST endpoint when ``-m host:port`` or ``rest.address`` names one, as every job
action (:func:`flinkish_cli.cli.options.job_client`). A script's plans are always made here.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import click

from flinkish_cli.cli.flink_args import FlinkCommand
from flinkish_cli.cli.options import common_options, job_client, load_config, output_option
from flinkish_cli.cli.output import echo, print_json
from flinkish_cli.config.units import human_bytes


@click.command(
    cls=FlinkCommand,
    context_settings={"allow_interspersed_args": False},
    short_help="Show a job's query plans.",
)
@click.argument("job", metavar="<job.py | JobID>")
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
    """Print the plan of each streaming query of a job without running it; given a JobID,
    what each of its queries' checkpoints takes on storage."""
    import logging

    from flinkish_cli.cli.flink_args import refuse_java
    from flinkish_cli.registry.jobid import is_job_id

    if java_class is not None:
        raise refuse_java("-c", f"-c/--class {java_class} (a Java entry class)")
    if job.lower().endswith(".jar"):
        raise refuse_java("jar", f"{job} (a Java program)")

    from flinkish_cli.client.jobs import JobClient

    flags = {"parallelism.default": str(parallelism)} if parallelism else {}
    config = load_config(conf_dir, dynamic, flags)
    if is_job_id(job) and not os.path.exists(job):
        output = _trailing_output(job_args, output)
        _checkpoint_sizes(job_client(config).checkpoint_sizes(job), output)
        return
    logging.getLogger("py4j").setLevel(logging.ERROR)
    script, plans = JobClient(config).explain(job, list(job_args))  # a local session
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


def _trailing_output(args: tuple[str, ...], output: str) -> str:
    """``info <JobID> --output json``: a JobID takes no job arguments, so options after it
    are the command's own (only ``-o/--output`` means anything here)."""
    from flinkish_cli.errors import UsageError

    rest = list(args)
    while rest:
        word = rest.pop(0)
        value = word.split("=", 1)[1] if word.startswith("--output=") else None
        if value is None and word in ("-o", "--output") and rest:
            value = rest.pop(0)
        if value not in ("text", "json"):
            raise UsageError(
                f"'{word}' after a JobID: 'flinkish info <JobID>' takes only -o/--output.",
                "Run 'flinkish info --output json <JobID>' or 'flinkish info <JobID>'.",
            )
        output = value
    return output


def _checkpoint_sizes(document: dict[str, Any], output: str) -> None:
    """``info <JobID>``: each query's checkpoint by part, and what grows with age."""
    from flinkish_cli.cli.output import print_table

    if output == "json":
        print_json(document)
        return
    echo(f"Checkpoints of job {document['jid']} ({document['name']}, {document['state']}).")
    if not document["queries"]:
        echo("The job has started no streaming query yet.")
    for name, query in document["queries"].items():
        echo()
        footprint = query["footprint"]
        if footprint is None:
            echo(f"== Query '{name}' ({query['checkpoint']}): not measured yet ==")
            continue
        measured = datetime.datetime.fromtimestamp(footprint["measured"] / 1000)
        echo(
            f"== Query '{name}' ({query['checkpoint']}): {human_bytes(footprint['bytes'])}, "
            f"measured {measured.isoformat(sep=' ', timespec='seconds')} =="
        )
        rows = [
            [part, str(size["files"]), human_bytes(size["bytes"]), _GROWS.get(size["grows"], "")]
            for part, size in footprint["parts"].items()
        ]
        print_table(None, ["Part", "Files", "Size", "Grows"], rows)
        for growing in footprint["growing"]:
            echo(f"-- {growing['part']} grows for as long as the query runs: {growing['why']}.")
            echo(f"   What to do: {growing['advice']}.")


_GROWS = {"age": "with age", "state": "with the state", "bounded": "bounded"}
