"""``flinkish info <job.py>``: a dry run of a job's program on this machine, as Flink's
``flink info`` shows a program's plan without running it: the script runs in a quiet local
Spark session without starting any query, and each query's plan is read. Not a job action
(no registry, no transport): the CLI calls it directly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flinkish_cli.planning.planner import QueryPlan


def explain(config: Any, script: str, args: list[str]) -> tuple[str, list[QueryPlan]]:
    """The script's path and each query's plan. The session maps the drivers' class-data
    sharing archive, as a driver does (``env.java.class-data-sharing``)."""
    from flinkish_cli.config import to_spark
    from flinkish_cli.plan.job import Entry
    from flinkish_cli.planning.planner import plan_queries
    from flinkish_cli.spark.install import check_java
    from flinkish_cli.submission.shipping import ship_connectors
    from flinkish_cli.submission.submit import RunRequest, check_program

    path = check_program(RunRequest(script=script))
    check_java()
    translation = to_spark(config)
    ship_connectors(config, translation.conf)  # its connectors, as its job gets them
    master = translation.master if translation.master.startswith("local") else "local[*]"
    conf = {k: v for k, v in translation.conf.items() if k != "spark.master"}
    entry = Entry(kind="file", target=str(path), args=args)
    sharing = bool(config.get("env.java.class-data-sharing"))
    return str(path), plan_queries(entry, conf, master, sharing)
