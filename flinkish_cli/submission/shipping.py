"""What a job ships and what its target must offer, decided before anything starts: its
connectors and Spark's S3A file system resolved into jar files (never left to Spark's Ivy), the
exactly-once Kafka sink's requirements (a session cluster's job cannot have it), and a session
cluster that answers (its server loads its connectors when it starts, not per job)."""

from __future__ import annotations

from typing import Any

from flinkish_cli.errors import ConfigError, JobError
from flinkish_cli.spark import connectors
from flinkish_cli.spark.install import pyspark_home


def check_session_cluster(url: str, timeout: float = 3.0) -> None:
    """A session cluster must answer at ``url`` (``sc://host:port``) before a job is sent."""
    import socket

    host, _, port = url.removeprefix("sc://").split("/", 1)[0].split(";", 1)[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port or 15002)), timeout=timeout):
            return
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise JobError(
            f"No session cluster answers at {url} ({reason}).",
            "Start one with scripts/start-cluster.sh --session (it prints its address), or "
            "check -m / rest.address and rest.port.",
        ) from None


def ship_connectors(config: Any, spark_conf: dict[str, str]) -> None:
    """``flinkish.connectors`` and ``spark.jars.packages``, resolved with Maven (the machine's
    settings; from the cache once warm) into jar files that join ``spark.jars``: Spark's own
    Ivy resolves nothing, and a cluster never resolves anything at start."""
    names = list(config.get("flinkish.connectors") or [])
    packages = spark_conf.pop("spark.jars.packages", "")
    if not names and not packages.strip():
        return
    found = connectors.jars(names, [packages], connectors.installed(pyspark_home()))
    shipped = [jar for jar in spark_conf.get("spark.jars", "").split(",") if jar]
    shipped += [str(jar) for jar in found if str(jar) not in shipped]
    spark_conf["spark.jars"] = ",".join(shipped)


def check_kafka_sink(config: Any) -> None:
    """``exactly-once`` Kafka sinks need a transactional id prefix and confluent-kafka."""
    from flinkish_cli.runtime.connectors.kafka_sink import EXACTLY_ONCE, GUARANTEE_KEY, PREFIX_KEY

    if config.get(GUARANTEE_KEY) != EXACTLY_ONCE:
        return
    if not str(config.get(PREFIX_KEY) or "").strip():
        raise ConfigError(
            f"{GUARANTEE_KEY}: exactly-once needs {PREFIX_KEY} (the Kafka sink's "
            "transactional ids are <prefix>-<query>-<partition>).",
            f"Set {PREFIX_KEY} to a name unique to this job, e.g. -D {PREFIX_KEY}=orders-job.",
        )
    import importlib.util

    if importlib.util.find_spec("confluent_kafka") is None:
        raise ConfigError(
            f"{GUARANTEE_KEY}: exactly-once writes with confluent-kafka, which is not installed.",
            "Install it where the job runs: pip install 'flinkish[kafka]'.",
        )


def refuse_session_exactly_once(config: Any) -> None:
    """A Spark Connect session cluster's job has no exactly-once Kafka sink: the sink writes
    each batch's partitions in the executors' Python workers (``DataFrame.rdd``), which a
    Connect DataFrame does not have."""
    from flinkish_cli.runtime.connectors.kafka_sink import EXACTLY_ONCE, GUARANTEE_KEY

    if config.get(GUARANTEE_KEY) == EXACTLY_ONCE:
        raise ConfigError(
            f"{GUARANTEE_KEY}: exactly-once is not available on a Spark Connect session "
            "cluster (its Kafka transactions are written from the executors' Python workers, "
            "which a Connect job cannot reach).",
            "Run the job on a cluster of its own (without -m), or set "
            f"{GUARANTEE_KEY}=at-least-once.",
        )


def refuse_session_connectors(config: Any) -> None:
    """A session cluster's server loads its connectors when it starts, not per job."""
    names = list(config.get("flinkish.connectors") or [])
    if names:
        raise ConfigError(
            f"flinkish.connectors: {', '.join(names)} cannot be added to a running session "
            "cluster (its server loads connectors when it starts).",
            "Start the session cluster with them: scripts/start-cluster.sh --session "
            f"--session-conf spark.jars=$(python -m flinkish_cli.spark.connectors {names[0]}), "
            "and run without flinkish.connectors.",
        )


#: Hadoop's S3A classes, for ``s3://`` as well as ``s3a://`` (Flink's scheme is ``s3://``).
S3A_FILE_SYSTEMS = {
    "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
}


#: the prefix of the Spark settings of S3A (where Flink's ``s3.*`` keys go)
S3A_SETTINGS = "spark.hadoop.fs.s3a."
#: S3A's credentials when the configuration gives no keys and names no provider: S3A's own
#: keys first (a cluster's ``core-site.xml`` may hold them), then the AWS SDK's default
#: chain, which reads the profile file as boto3 does; S3A's own default chain does not.
S3A_CREDENTIALS_CHAIN = (
    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,"
    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider,"
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
)


def ship_s3a(checkpoint_root: str, spark_conf: dict[str, str]) -> None:
    """A job that reaches S3: Spark writes there through Hadoop's S3A file system, which
    pyspark does not include. A job reaches S3 when its checkpoint directory is there, or when
    its configuration has S3 settings (Flink's ``s3.*`` keys, which reach S3A as
    ``fs.s3a.*``): its script may then name ``s3://`` paths of its own (a
    ``checkpointLocation``, a file sink), as a Flink job does once ``flink-s3-fs-hadoop`` is
    in ``plugins/``. Unless the job ships it already (``pipeline.jars``,
    ``spark.jars.packages``, ``flinkish.connectors: s3a``), flinkish ships ``hadoop-aws`` of
    Spark's Hadoop version with the AWS SDK bundle it needs (resolved with Maven once, then
    from the cache: :mod:`flinkish_cli.spark.connectors`), and serves ``s3://`` with S3A too,
    so the job's paths stay as written. Without keys or a provider of the job's, S3A looks
    for credentials where boto3 does (:data:`S3A_CREDENTIALS_CHAIN`)."""
    configured = any(key.startswith(S3A_SETTINGS) for key in spark_conf)
    if not checkpoint_root.startswith(("s3://", "s3a://")) and not configured:
        return
    bundled = any((pyspark_home() / "jars").glob("hadoop-aws-*.jar"))
    shipped = [jar for jar in spark_conf.get("spark.jars", "").split(",") if jar]
    if not bundled and not any("hadoop-aws" in jar for jar in shipped):
        found = connectors.jars(["s3a"], [], connectors.installed(pyspark_home()))
        shipped += [str(jar) for jar in found if str(jar) not in shipped]
        spark_conf["spark.jars"] = ",".join(shipped)
    for key, value in S3A_FILE_SYSTEMS.items():
        spark_conf.setdefault(key, value)
    if not any(
        S3A_SETTINGS + key in spark_conf for key in ("access.key", "aws.credentials.provider")
    ):
        spark_conf[S3A_SETTINGS + "aws.credentials.provider"] = S3A_CREDENTIALS_CHAIN
