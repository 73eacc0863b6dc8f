"""Maven coordinates to jar files: the generated POM, the cache key, the refusals of
mismatched Spark connectors (fast), and one real resolution with the machine's ``mvn``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from flinkish_cli.errors import ConfigError
from flinkish_cli.spark import connectors, maven
from flinkish_cli.spark.connectors import SparkInstall
from flinkish_cli.spark.install import pyspark_home
from flinkish_cli.spark.maven import Coordinate

KAFKA_420 = Coordinate("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.2.0")


def spark_at(tmp_path: Path, version: str = "4.3.0", scala: str = "2.13.18") -> SparkInstall:
    """A Spark home laid out as pyspark's: only the jar names matter to the matching."""
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in (
        f"spark-core_2.13-{version}.jar",
        f"scala-library-{scala}.jar",
        "hadoop-client-api-3.5.0.jar",
        "lz4-java-1.11.0.jar",
        "zstd-jni-1.5.7-7.jar",
    ):
        (jars / name).write_bytes(b"")
    return connectors.installed(tmp_path)


def test_coordinates_are_parsed_as_spark_writes_them() -> None:
    assert maven.parse_all(["a.b:c_2.13:1.0, d:e:2", "f:g:3"]) == [
        Coordinate("a.b", "c_2.13", "1.0"),
        Coordinate("d", "e", "2"),
        Coordinate("f", "g", "3"),
    ]
    for bad in ("org.apache.kafka:kafka-clients", "a:b:c:d", "a:b:<v>"):
        with pytest.raises(ConfigError, match="is not Maven coordinates"):
            Coordinate.parse(bad)


def test_the_pom_depends_on_each_coordinate() -> None:
    text = maven.pom([KAFKA_420, Coordinate("org.apache.kafka", "kafka-clients", "4.1.1")])
    assert "<artifactId>spark-sql-kafka-0-10_2.13</artifactId>" in text
    assert "<version>4.2.0</version>" in text
    assert text.count("<dependency>") == 2
    assert "<packaging>pom</packaging>" in text


def test_the_cache_key_follows_the_coordinates_not_their_order() -> None:
    other = Coordinate("org.apache.kafka", "kafka-clients", "4.1.1")
    first = maven.cache_key(maven.pom(sorted({KAFKA_420, other})))
    again = maven.cache_key(maven.pom(sorted({other, KAFKA_420})))
    changed = maven.cache_key(maven.pom([Coordinate(KAFKA_420.group, KAFKA_420.artifact, "4.1.1")]))
    assert first == again
    assert first != changed
    assert len(first) == 20 and all(c in "0123456789abcdef" for c in first)


def test_the_installed_spark_is_read_from_its_jars(tmp_path: Path) -> None:
    spark = spark_at(tmp_path)
    assert (spark.spark_version, spark.minor, spark.scala_version, spark.hadoop_version) == (
        "4.3.0",
        "4.3",
        "2.13",
        "3.5.0",
    )
    assert spark.has("lz4-java") and spark.has("zstd-jni") and not spark.has("kafka-clients")
    real = connectors.installed(pyspark_home())
    assert real.spark_version.startswith(real.minor)


def test_the_kafka_short_form_picks_the_served_connector_of_the_installed_spark() -> None:
    assert connectors.connector_coordinates("kafka", "4.3.0", "3.5.0") == [KAFKA_420]
    assert connectors.connector_coordinates("kafka", "4.1.1", "3.4.1") == [
        Coordinate("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.1.1")
    ]
    with pytest.raises(ConfigError, match="'kafak' is not a connector flinkish knows"):
        connectors.connector_coordinates("kafak", "4.3.0", "3.5.0")


def test_a_spark_connector_of_another_spark_is_refused_naming_both_versions(
    tmp_path: Path,
) -> None:
    spark = spark_at(tmp_path)
    with pytest.raises(ConfigError) as refused:
        connectors.jars([], ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"], spark)
    assert str(refused.value).splitlines()[0] == (
        "spark.jars.packages: org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1 is Spark "
        "4.1.1's connector, and the installed Spark is 4.3.0."
    )
    assert "flinkish.connectors: kafka" in refused.value.hint
    with pytest.raises(ConfigError, match=r"built for Scala 2\.12.*runs Scala 2\.13"):
        connectors.jars([], ["org.apache.spark:spark-avro_2.12:4.3.0"], spark)
    with pytest.raises(
        ConfigError, match=re.escape("spark-avro_2.13:4.0.1 is Spark 4.0.1's connector")
    ):
        connectors.jars([], ["org.apache.spark:spark-avro_2.13:4.0.1"], spark)
    # The served pairing is the one the short form picks: accepted either way.
    connectors.check_matched([KAFKA_420], spark)


@pytest.fixture(scope="module")
def resolved_kafka() -> list[maven.Artifact]:
    """Spark's Kafka connector resolved for real, into the user's cache (warm after the first
    run: scripts/setup.sh --test resolves it)."""
    if shutil.which("mvn") is None:
        pytest.fail("mvn is not installed: scripts/setup.sh --test installs it")
    return maven.resolve_artifacts([KAFKA_420])


def test_mvn_resolves_a_connector_and_its_dependencies_into_the_cache(
    resolved_kafka: list[maven.Artifact],
) -> None:
    names = {a.coordinate.artifact: a for a in resolved_kafka}
    assert {
        "spark-sql-kafka-0-10_2.13",
        "spark-token-provider-kafka-0-10_2.13",
        "kafka-clients",
        "commons-pool2",
    } <= set(names)
    for artifact in resolved_kafka:
        assert artifact.path.is_file() and artifact.path.stat().st_size > 0
        assert artifact.path.parent.parent == maven.jars_cache()
    shipped = connectors.jars(["kafka"], [], connectors.installed(pyspark_home()))
    assert sorted(p.name.rsplit("-", 1)[0] for p in shipped) == [
        "commons-pool2",
        "kafka-clients",
        "spark-sql-kafka-0-10_2.13",
        "spark-token-provider-kafka-0-10_2.13",
    ]


def test_a_warm_cache_resolves_without_mvn(
    resolved_kafka: list[maven.Artifact], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("mvn") is None
    assert maven.resolve_artifacts([KAFKA_420]) == resolved_kafka


def test_coordinates_maven_cannot_find_are_one_line_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    missing = Coordinate("org.apache.kafka", "kafka-clients", "0.0.0-none")
    with pytest.raises(ConfigError) as failed:
        maven.resolve([missing])
    line = failed.value.message
    assert "\n" not in line
    assert line.startswith("Maven could not resolve org.apache.kafka:kafka-clients:0.0.0-none:")
    assert "kafka-clients" in line.split(":", 1)[1]
    assert not any((tmp_path / "flinkish" / "jars").iterdir())  # nothing half-made kept
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError, match="'mvn' is not on the PATH"):
        maven.resolve([missing])
