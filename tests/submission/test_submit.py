"""Checks ``run`` makes before anything is written or started."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from flinkish_cli.config import load_configuration
from flinkish_cli.errors import ConfigError, JobError
from flinkish_cli.spark import cds
from flinkish_cli.spark.install import pyspark_home
from flinkish_cli.submission.shipping import (
    S3A_CREDENTIALS_CHAIN,
    check_session_cluster,
    refuse_session_connectors,
    refuse_session_exactly_once,
    ship_connectors,
    ship_s3a,
)
from flinkish_cli.submission.submit import driver_archive


def test_a_session_cluster_that_answers_passes() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_session_cluster(f"sc://127.0.0.1:{server.getsockname()[1]}")  # no error
        server.settimeout(10)
        connection, _ = server.accept()  # the check really connected to this server
        connection.close()


def test_no_session_cluster_is_one_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(JobError, match=f"No session cluster answers at sc://127.0.0.1:{port}"):
            check_session_cluster(f"sc://127.0.0.1:{port}")


def test_the_drivers_map_the_archive_unless_class_data_sharing_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh driver on this machine maps the archive; ``env.java.class-data-sharing: false``
    or a driver in the cluster (YARN's, Kubernetes' application mode) never does. (That a
    driver given the options really maps it: tests/spark/test_cds.py, from /proc.)"""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    archive = cds.archive_path(pyspark_home())
    assert archive is not None
    on, off = (
        load_configuration(tmp_path),
        load_configuration(tmp_path, ["env.java.class-data-sharing=false"]),
    )
    assert driver_archive(on, "client") == ([], str(archive))  # none yet: the driver says so
    archive.parent.mkdir(parents=True)
    archive.write_bytes((0xF00BABA8).to_bytes(4, sys.byteorder) + b" classes")
    options, missing = driver_archive(on, "client")
    assert f"-XX:SharedArchiveFile={archive}" in options and missing is None
    assert driver_archive(off, "client") == ([], None)
    assert driver_archive(on, "cluster") == ([], None)


def test_connectors_and_packages_are_shipped_as_files_beside_pipeline_jars(
    tmp_path: Path,
) -> None:
    """``flinkish.connectors: kafka`` becomes jar files (from Maven's cache) that join the
    ``spark.jars`` of ``pipeline.jars``; ``spark.jars.packages`` never reaches Spark's Ivy."""
    own = tmp_path / "own.jar"
    own.write_bytes(b"")
    config = load_configuration(tmp_path, ["flinkish.connectors=kafka", f"pipeline.jars={own}"])
    spark_conf = {"spark.jars": str(own), "spark.jars.packages": ""}
    ship_connectors(config, spark_conf)
    shipped = spark_conf["spark.jars"].split(",")
    assert shipped[0] == str(own)
    assert any("spark-sql-kafka-0-10_2.13-" in jar for jar in shipped)
    assert all(Path(jar).is_file() for jar in shipped)
    assert "spark.jars.packages" not in spark_conf


def test_checkpoints_on_s3_ship_s3a_matched_to_sparks_hadoop(tmp_path: Path) -> None:
    """A checkpoint directory on S3, or S3 settings in the configuration: hadoop-aws of
    pyspark's Hadoop version and the AWS SDK bundle it depends on join ``spark.jars`` (from
    Maven's cache), and ``s3://`` is served by S3A; elsewhere nothing changes, and a job that
    ships its own hadoop-aws keeps it."""
    hadoop = sorted((pyspark_home() / "jars").glob("hadoop-client-api-*.jar"))[-1].name
    version = hadoop.removeprefix("hadoop-client-api-").removesuffix(".jar")
    own = tmp_path / "own.jar"
    own.write_bytes(b"")
    spark_conf = {"spark.jars": str(own)}
    ship_s3a("s3://bucket/checkpoints", spark_conf)
    shipped = spark_conf["spark.jars"].split(",")
    assert shipped[0] == str(own)
    assert any(Path(jar).name == f"hadoop-aws-{version}.jar" for jar in shipped), shipped
    assert any(Path(jar).name.startswith("bundle-2.") for jar in shipped), shipped
    assert all(Path(jar).is_file() for jar in shipped)
    assert spark_conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    untouched = {"spark.jars": str(own)}
    ship_s3a("hdfs://namenode:8020/checkpoints", untouched)
    assert untouched == {"spark.jars": str(own)}
    theirs = {"spark.jars": "/opt/jars/hadoop-aws-3.5.0.jar"}
    ship_s3a("s3a://bucket/checkpoints", theirs)
    assert theirs["spark.jars"] == "/opt/jars/hadoop-aws-3.5.0.jar"
    # S3 settings (Flink's s3.* keys) with local checkpoints: the script's own s3:// paths
    configured = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}
    ship_s3a("/var/checkpoints", configured)
    assert any("hadoop-aws-" in jar for jar in configured["spark.jars"].split(","))
    assert configured["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    # no keys given: S3A looks where boto3 does, the profile file too; keys or a provider of
    # the job's own are kept as they are
    provider = "spark.hadoop.fs.s3a.aws.credentials.provider"
    assert configured[provider] == S3A_CREDENTIALS_CHAIN
    assert "DefaultCredentialsProvider" in S3A_CREDENTIALS_CHAIN
    keyed = {"spark.hadoop.fs.s3a.access.key": "AKIA..."}
    ship_s3a("s3://bucket/checkpoints", keyed)
    assert provider not in keyed
    named = {provider: "com.example.Provider"}
    ship_s3a("s3://bucket/checkpoints", named)
    assert named[provider] == "com.example.Provider"


def test_a_session_cluster_is_told_to_load_connectors_when_it_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be added to a running session cluster"):
        refuse_session_connectors(load_configuration(tmp_path, ["flinkish.connectors=kafka"]))
    refuse_session_connectors(load_configuration(tmp_path))


def test_a_session_cluster_has_no_exactly_once_kafka_sink(tmp_path: Path) -> None:
    key = "flinkish.kafka.sink.delivery-guarantee"
    with pytest.raises(ConfigError, match=f"{key}: exactly-once is not available on a Spark"):
        refuse_session_exactly_once(load_configuration(tmp_path, [f"{key}=exactly-once"]))
    refuse_session_exactly_once(load_configuration(tmp_path, [f"{key}=at-least-once"]))
