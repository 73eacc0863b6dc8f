"""``docs/reference/metrics.md``: every Prometheus metric family ``flinkish web`` exposes on
``/metrics``, from the tables :mod:`flinkish_cli.web.metrics` builds them from (name, help,
labels); every family is a gauge (the code makes each a ``GaugeMetricFamily``)."""

from __future__ import annotations

from flinkish_cli.web import metrics
from scripts.docs.common import code, header, prose, table

PAGE = "reference/metrics.md"

_INTRO = """
`flinkish web` serves every job of the registry as Prometheus metrics on `GET /metrics`
(Prometheus' text format), read afresh at each scrape: nothing is kept between scrapes.
Where Flink has the metric, the name is the one Flink's Prometheus reporter exposes, so a
Grafana dashboard made for Flink finds it; Spark's own figures, the checkpoints' size on
storage and the autoscaler's have `flinkish_` names. Every metric is a **gauge**.
"""


def render() -> str:
    """The page's Markdown."""
    rows = [[code(metrics.REGISTRY_UP[0]), metrics.REGISTRY_UP[1], "(none)"]]
    for _key, name, documentation, labels in metrics.METRICS:
        rows.append([code(name), documentation, _labels(labels)])
    text = header("Metrics reference", _INTRO) + "\n## Jobs and queries\n\n"
    text += table(["Metric", "Help", "Labels"], rows)
    jvm_rows = []
    for prefix, labels in ((metrics.JOBMANAGER, metrics.JM), (metrics.TASKMANAGER, metrics.TM)):
        for _attribute, name, documentation in metrics.PROCESS_GAUGES:
            jvm_rows.append([code(prefix + name), documentation, _labels(labels)])
        for suffix, documentation in metrics.GC_GAUGES:
            name = f"{prefix}GarbageCollector_<collector>_{suffix}"
            help_text = documentation.format(what="the collector")
            jvm_rows.append([code(name), help_text, _labels(labels)])
    text += (
        "\n## JobManager and TaskManager JVMs\n\n"
        "For each job that is not over: its driver as Flink's JobManager (`flink_jobmanager_`) "
        "and each executor that runs tasks as a TaskManager (`flink_taskmanager_`, `tm_id` "
        "Spark's executor id), from the job's record of its JVMs. `<collector>` is the "
        "garbage collector's name as Flink's reporter writes it (`G1_Young_Generation`), and "
        "`All` for every collector together.\n\n"
    )
    text += table(["Metric", "Help", "Labels"], jvm_rows)
    text += "\n## What the metrics mean\n\n" + _module_notes() + "\n"
    return text


def _labels(labels: tuple[str, ...]) -> str:
    return ", ".join(code(label) for label in labels) if labels else "(none)"


def _module_notes() -> str:
    """The module's docstring: what each metric is in Spark's terms."""
    doc = prose(metrics.__doc__ or "").strip()
    return doc.split("\n\n", 1)[1] + "\n"  # after its title line
