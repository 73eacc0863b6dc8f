"""Connectors matched to the installed Spark, as jar files a job ships with ``spark.jars``.

Two ways to name a connector, both resolved by :mod:`.maven` (the machine's Maven settings,
a cache, no Ivy):

- ``flinkish.connectors``: the short names flinkish knows (:data:`KNOWN`), each turned into
  Maven coordinates for the installed Spark by :func:`connector_coordinates`;
- ``spark.jars.packages``: Maven coordinates as the user writes them for Spark. A Spark
  connector among them (group ``org.apache.spark``) must be built for the installed Spark's
  minor version and Scala version (:func:`check_matched`), except the pairings in
  :data:`SERVED_FOR`.

Of what Maven resolves, the jars Spark already has (the same artifact in its ``jars/``) are
left out: Spark's own copy is the one its classes were built with.

Spark's Kafka connector of a Spark release is not always on Maven Central when pyspark is on
PyPI. :data:`SERVED_FOR` names, for such a Spark minor version, the newest connector release
that is served and that passes flinkish's Kafka tests on that Spark (source, sink and the
lifecycle commands); ``docs/guides/kafka.md`` gives the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flinkish_cli.errors import ConfigError
from flinkish_cli.spark import maven
from flinkish_cli.spark.maven import Coordinate

#: The connectors ``flinkish.connectors`` names (``s3a``: Hadoop's S3A file system, which
#: flinkish also adds by itself to a job whose checkpoint directory is on S3).
KNOWN = ("kafka", "s3a")
SPARK_GROUP = "org.apache.spark"
#: Spark's Kafka connector, by Spark minor version, where its own release is not served:
#: the release that is, and that flinkish's Kafka tests pass with on that Spark.
SERVED_FOR: dict[str, dict[str, str]] = {"kafka": {"4.3": "4.2.0"}}
#: Spark's artifacts of each short name (``_<scala>`` is appended).
ARTIFACTS: dict[str, tuple[str, ...]] = {"kafka": ("spark-sql-kafka-0-10",)}
#: Hadoop's artifacts of each short name, of the installed Spark's Hadoop version: S3A is
#: ``hadoop-aws``, which brings the AWS SDK bundle it was built with.
HADOOP_GROUP = "org.apache.hadoop"
HADOOP_ARTIFACTS: dict[str, tuple[str, ...]] = {"s3a": ("hadoop-aws",)}


@dataclass(frozen=True)
class SparkInstall:
    """What a connector must match: the installed Spark's version, its Scala binary
    version and its Hadoop client's version, read from its home without starting it."""

    home: Path
    spark_version: str
    scala_version: str
    hadoop_version: str

    @property
    def minor(self) -> str:
        return minor(self.spark_version)

    def has(self, artifact: str) -> bool:
        """Spark ships a jar of ``artifact`` (``jars/<artifact>-<version>.jar``)."""
        pattern = re.compile(rf"^{re.escape(artifact)}-\d")
        return any(pattern.match(jar.name) for jar in (self.home / "jars").glob("*.jar"))


def minor(version: str) -> str:
    """``4.3.0`` → ``4.3``."""
    return ".".join(version.split(".")[:2])


def installed(home: Path) -> SparkInstall:
    """The Spark at ``home`` (pyspark's package directory, or a Spark distribution)."""
    jars = sorted((home / "jars").glob("*.jar"))

    def version_of(pattern: str) -> str:
        for jar in jars:
            match = re.match(pattern, jar.name)
            if match:
                return match.group(1)
        return ""

    spark = version_of(r"^spark-core_\d+\.\d+-(\d+\.\d+\.\d+.*)\.jar$")
    scala = version_of(r"^scala-library-(\d+\.\d+)\.\d+\.jar$")
    hadoop = version_of(r"^hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")
    if not spark or not scala:
        raise ConfigError(
            f"No Spark found in {home}/jars (spark-core and scala-library).",
            "Reinstall pyspark, or point SPARK_HOME at a complete Spark.",
        )
    return SparkInstall(home, spark, scala, hadoop)


def connector_coordinates(
    name: str, spark_version: str, hadoop_version: str, scala_version: str = "2.13"
) -> list[Coordinate]:
    """The Maven coordinates of the connector ``name`` for that Spark (and its Hadoop)."""
    if name in HADOOP_ARTIFACTS:
        if not hadoop_version:
            raise ConfigError(
                f"flinkish.connectors: '{name}' needs Spark's Hadoop version, and the installed "
                "Spark has no hadoop-client-api jar to read it from.",
                "Give the jars in pipeline.jars instead.",
            )
        return [Coordinate(HADOOP_GROUP, a, hadoop_version) for a in HADOOP_ARTIFACTS[name]]
    if name not in ARTIFACTS:
        raise ConfigError(
            f"flinkish.connectors: '{name}' is not a connector flinkish knows.",
            f"Known: {', '.join(KNOWN)}; give any other as Maven coordinates in "
            "spark.jars.packages, or its jars in pipeline.jars.",
        )
    version = SERVED_FOR.get(name, {}).get(minor(spark_version), spark_version)
    return [
        Coordinate(SPARK_GROUP, f"{artifact}_{scala_version}", version)
        for artifact in ARTIFACTS[name]
    ]


def check_matched(coordinates: Sequence[Coordinate], spark: SparkInstall) -> None:
    """Refuse a Spark connector built for another Spark minor or Scala version."""
    for c in coordinates:
        if c.group != SPARK_GROUP:
            continue
        base, _, scala = c.artifact.rpartition("_")
        if base and re.fullmatch(r"\d+\.\d+", scala) and scala != spark.scala_version:
            raise ConfigError(
                f"spark.jars.packages: {c} is built for Scala {scala}, and the installed "
                f"Spark {spark.spark_version} runs Scala {spark.scala_version}.",
                f"Use {SPARK_GROUP}:{base}_{spark.scala_version}:{c.version}.",
            )
        if minor(c.version) == spark.minor or _served_pairing(base, c.version, spark):
            continue
        hint = f"Use {SPARK_GROUP}:{c.artifact}:{spark.spark_version}"
        short = [n for n, artifacts in ARTIFACTS.items() if base in artifacts]
        if short:
            hint = f"Use flinkish.connectors: {short[0]} (it picks the matching release)"
        raise ConfigError(
            f"spark.jars.packages: {c} is Spark {c.version}'s connector, and the installed "
            f"Spark is {spark.spark_version}.",
            f"{hint}, or install pyspark {c.version}.",
        )


def _served_pairing(artifact: str, version: str, spark: SparkInstall) -> bool:
    return any(
        artifact in ARTIFACTS[name] and SERVED_FOR[name].get(spark.minor) == version
        for name in SERVED_FOR
    )


def jars(connectors: Sequence[str], packages: Sequence[str], spark: SparkInstall) -> list[Path]:
    """The jars to ship for ``flinkish.connectors`` and ``spark.jars.packages``: resolved
    (or read from the cache), without those the installed Spark already has."""
    wanted: list[Coordinate] = []
    for name in connectors:
        wanted += connector_coordinates(
            name.strip().lower(), spark.spark_version, spark.hadoop_version, spark.scala_version
        )
    given = maven.parse_all(packages)
    check_matched(given, spark)
    wanted += given
    if not wanted:
        return []
    return [a.path for a in maven.resolve_artifacts(wanted) if not spark.has(a.coordinate.artifact)]


def main(argv: list[str] | None = None) -> int:
    """``python -m flinkish_cli.spark.connectors NAME...``: the jars of those connectors for
    the installed Spark, comma-separated (for a session cluster's ``spark.jars``)."""
    import sys

    from flinkish_cli.spark.install import pyspark_home

    names = sys.argv[1:] if argv is None else argv
    if not names:
        print(f"usage: python -m flinkish_cli.spark.connectors {'|'.join(KNOWN)}", file=sys.stderr)
        return 2
    try:
        found = jars(names, [], installed(pyspark_home()))
    except ConfigError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(",".join(str(jar) for jar in found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
