"""``flinkish info <job.py>``: the plan of each of the job's streaming queries (Spark's explain).

``flinkish info <JobID>``: for each query of a submitted job, its graph (its operators, the
exchanges between them and each one's latest figures: :mod:`flinkish_cli.registry.graph_view`)
and what its checkpoint takes on storage, part by part, as its driver last measured it, and
for the parts that grow with age (a file source's log, a file sink's log) why and what to do
(:mod:`flinkish_cli.registry.footprint`). ``--output json`` gives both per query: its
``checkpoint``, ``footprint`` and ``graph``. Through the REST endpoint when ``-m host:port``
or ``rest.address`` names one, as every job action
(:func:`flinkish_cli.cli.options.job_client`). A script's plans are always made here.
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
    each query's graph with its latest figures and what its checkpoint takes on storage."""
    import logging

    from flinkish_cli.cli.flink_args import refuse_java
    from flinkish_cli.registry.jobid import is_job_id

    if java_class is not None:
        raise refuse_java("-c", f"-c/--class {java_class} (a Java entry class)")
    if job.lower().endswith(".jar"):
        raise refuse_java("jar", f"{job} (a Java program)")

    from flinkish_cli.client.explain import explain

    flags = {"parallelism.default": str(parallelism)} if parallelism else {}
    config = load_config(conf_dir, dynamic, flags)
    if is_job_id(job) and not os.path.exists(job):
        _job_info(job_client(config).job_info(job), _trailing_output(job_args, output))
        return
    logging.getLogger("py4j").setLevel(logging.ERROR)
    script, plans = explain(config, job, list(job_args))  # a local session
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


def _job_info(document: dict[str, Any], output: str) -> None:
    """``info <JobID>``: each query's graph, its checkpoint by part, and what grows with age."""
    from flinkish_cli.cli.output import print_table

    if output == "json":
        print_json(document)
        return
    echo(f"Job {document['jid']} ({document['name']}, {document['state']}).")
    if not document["queries"]:
        echo("The job has started no streaming query yet.")
    for name, query in document["queries"].items():
        echo()
        _graph(name, query["graph"])
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


def _graph(name: str, graph: dict[str, Any] | None) -> None:
    """A query's graph as a table: each operator, what feeds it, and its latest figures."""
    from flinkish_cli.cli.output import print_table

    if graph is None or not graph["nodes"]:
        echo(f"== Query '{name}': no graph yet (it has completed no batch) ==")
        return
    figures = graph["figures"]
    busy = figures["busy-time-ms-per-second"]
    head = f"== Query '{name}': graph of batch {graph['batch']}"
    if figures["batch"] is not None:
        head += f", figures of batch {figures['batch']}, busy {busy / 10:.0f}% of the time"
    echo(head + (" ==" if graph["complete"] else " (from its progress report: no plan yet) =="))
    labels = {node["id"]: node["label"] for node in graph["nodes"]}
    rows = []
    for node in graph["nodes"]:
        inputs = [
            f"{labels[e['source']]} ({_strategy(e)})"
            for e in graph["edges"]
            if e["target"] == node["id"]
        ]
        rows.append([node["label"], _details(node), "; ".join(inputs), _figures(node)])
    print_table(None, ["Operator", "Details", "Inputs", "Latest batch"], rows)
    echo()


def _strategy(edge: dict[str, Any]) -> str:
    text = edge["ship-strategy"]
    if edge["keys"]:
        text += f" {', '.join(edge['keys'])}"
    if edge["partitions"]:
        text += f" into {edge['partitions']}"
    return f"{edge['side']}: {text}" if edge["side"] else text


def _details(node: dict[str, Any]) -> str:
    parts = [node["description"]] if node["description"] else []
    if node["operator-id"] is not None:
        parts.append(f"operator {node['operator-id']}, {node['partitions']} partitions")
    if node["stores"]:
        parts.append(f"stores {', '.join(node['stores'])}")
    if node["state-variables"]:
        parts.append(f"state {', '.join(node['state-variables'])}")
    return "; ".join(parts)


def _figures(node: dict[str, Any]) -> str:
    metrics = node["metrics"]
    shown = [
        ("input-rows-per-second", "{:.1f} in/s"),
        ("processed-rows-per-second", "{:.1f} processed/s"),
        ("state-rows", "{} state rows"),
        ("state-rows-updated", "{} updated"),
        ("rows-dropped-by-watermark", "{} dropped by watermark"),
        ("output-rows", "{} rows out"),
    ]
    parts = [form.format(metrics[key]) for key, form in shown if metrics.get(key) is not None]
    if metrics.get("state-memory-bytes") is not None:
        parts.append(f"{human_bytes(metrics['state-memory-bytes'])} state memory")
    if metrics.get("watermark") and node["kind"] in ("watermark", "stateful"):
        parts.append(f"watermark {metrics['watermark']}")
    return ", ".join(parts)


_GROWS = {"age": "with age", "state": "with the state", "bounded": "bounded"}
