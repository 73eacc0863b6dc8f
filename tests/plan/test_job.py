"""The plan's share of the process contract: the S3 credentials travel to a job's processes
under the Spark settings the configuration translates them to, and come back by Flink key."""

from __future__ import annotations

from flinkish_cli.config import load_configuration, to_spark
from flinkish_cli.plan.job import SECRET_FROM_SPARK, Entry, JobPlan, secrets_from, storage_flat_conf


def test_each_secret_travels_under_the_spark_setting_the_configuration_gives_it() -> None:
    for flink_key, spark_key in SECRET_FROM_SPARK.items():
        translated = to_spark(load_configuration(dynamic=[f"{flink_key}=v-{flink_key}"])).conf
        assert translated[spark_key] == f"v-{flink_key}", flink_key


def test_the_secrets_come_back_by_flink_key_and_join_the_storage_configuration() -> None:
    spark = {"spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK"}
    secrets = secrets_from(spark.get)
    assert secrets == {"s3.access-key": "AK", "s3.secret-key": "SK", "s3.session.token": None}
    plan = JobPlan(
        job_id="0" * 32,
        name="counts",
        entry=Entry(kind="module", target="jobs.counts"),
        checkpoint_root="s3://bucket/checkpoints",
        flink_conf={"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key": "old"},
        master="local[1]",
    )
    assert storage_flat_conf(plan, secrets) == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key": "AK",
        "s3.secret-key": "SK",
    }
