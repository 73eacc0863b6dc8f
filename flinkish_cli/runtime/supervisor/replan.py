"""The next drivers of an in-place rescale, replanned at the new parallelism: the job's
properties and ``spark-submit``'s command line, as ``run -p`` sets them.
"""

from __future__ import annotations

from flinkish_cli.plan.rundir import parse_properties, replace_property


def replan(properties: str, argv: list[str], parallelism: int, savepoint: str, rescale: str) -> str:
    """The properties file's text ``properties`` for drivers at ``parallelism``, their
    queries' state repartitioned in place (from ``savepoint`` where needed): the plan,
    Spark's partitions and a local master's threads (in ``argv``, changed in place), as
    ``run -p`` sets them, and on a standalone cluster the cores the job's executors take
    (``spark.cores.max``, by the rule ``run -p`` follows:
    :func:`~flinkish_cli.config.mappings.standalone_cores`)."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.config.mappings import CORES_MAX, local_master, standalone_cores
    from flinkish_cli.config.mappings import parallelism as partitions
    from flinkish_cli.plan.job import PLAN_CONF_KEY, JobPlan, RestorePlan

    values = parse_properties(properties)
    plan = JobPlan.decode(values[PLAN_CONF_KEY])
    plan.parallelism = parallelism
    plan.flink_conf["parallelism.default"] = str(parallelism)
    plan.restore = RestorePlan(source=savepoint, rescale=rescale)
    text = replace_property(properties, PLAN_CONF_KEY, plan.encode())
    config = Configuration.from_flat(plan.flink_conf)
    for key, value in partitions(parallelism, config).items():
        if key in values:
            text = replace_property(text, key, value)
    for index, word in enumerate(argv[:-1]):
        if word == "--master" and argv[index + 1].startswith("local["):
            argv[index + 1] = local_master(config)
        if word == "--master" and argv[index + 1].startswith("spark://"):
            cores = standalone_cores(parallelism, values, plan.flink_conf.get(CORES_MAX))
            if CORES_MAX in values:
                text = replace_property(text, CORES_MAX, cores)
            else:
                text = text.rstrip("\n") + f"\n{CORES_MAX}={cores}\n"
    return text
