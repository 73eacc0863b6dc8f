#!/usr/bin/env bash
# Set up flinkish in ./.venv: checks Java and Python, installs the package with its session
# extra (the Spark Connect client for session clusters) and its web extra (flinkish web).
# Safe to run again.
#
#   scripts/setup.sh          what running jobs needs
#   scripts/setup.sh --test   also the test dependencies, the documentation site's (MkDocs),
#                             and, as root, Debian's prometheus, chromium and chromium-driver
#   PYTHON                    the Python 3.10+ to make .venv with (default python3)
#   JAVA_HOME                 the Java 17+ Spark runs on (default: java on the PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

extras="[session,web]"
[ "${1:-}" = "--test" ] && extras="[session,web,test,docs]"

java_bin="java"
[ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java_bin="$JAVA_HOME/bin/java"
if ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "ERROR: Java not found: Spark needs Java 17+; install it with 'apt-get install openjdk-17-jre-headless' or set JAVA_HOME." >&2
  exit 1
fi
java_major=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$java_major" ] && [ "$java_major" -lt 17 ]; then
  echo "ERROR: Java $java_major found, Spark 4 needs Java 17+; install openjdk-17-jre-headless or point JAVA_HOME at a JDK 17." >&2
  exit 1
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "ERROR: Python 3.10+ not found as '$python'; install it or set PYTHON=/path/to/python3." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
log=.venv/pip-install.log
if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip &&
       .venv/bin/python -m pip install --disable-pip-version-check -e ".${extras}"; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "ERROR: installing flinkish failed (full output in $log); check the network access to PyPI." >&2
  exit 1
fi
# Class-data sharing: an archive of Spark's classes that every fresh driver maps (seconds off
# each start; made once per Spark, Java and flinkish version, in about 45 s: in the background,
# at the lowest CPU priority, while the set-up goes on; a job started before it is ready runs
# without it; never fails the set-up).
.venv/bin/python -m flinkish_cli.spark.cds --background || true
# Bytecode, as pip compiles a wheel's at install: the editable install leaves the package as
# source, and a shell with PYTHONDONTWRITEBYTECODE set would compile it again in every process.
.venv/bin/python -m compileall -q flinkish_cli >/dev/null || true
# flinkish's local file system for Hadoop (a session cluster's files without a chmod process
# each; needs javac; never fails the set-up).
.venv/bin/python -m flinkish_cli.spark.local_fs || true

if [ "${1:-}" = "--test" ]; then
  # The tests' real parts: Debian's Prometheus (it scrapes flinkish web), Chromium and its
  # driver (the dashboard's tests) and Apache Flink's own CLI from PyPI, in a virtual
  # environment of its own (it drives flinkish web).
  missing=()
  command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
        >>"$log" 2>&1 || echo "WARNING: 'apt-get install ${missing[*]}' failed (see $log)." >&2
    else
      echo "WARNING: the tests need: apt-get install ${missing[*]}" >&2
    fi
  fi
  .venv/bin/python -c 'from benchmarks.flink import install, venv_dir; install(venv_dir())' ||
    echo "WARNING: Apache Flink's CLI could not be installed; its tests will say why." >&2
  # Kafka: Maven (Debian's) resolves, with the machine's Maven settings and once into
  # flinkish's jar cache, the jars of the tests' broker (start-cluster.sh --kafka) and Spark's
  # Kafka connector (flinkish.connectors: kafka); quick when cached.
  if ! command -v mvn >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; } \
      >>"$log" 2>&1 || echo "WARNING: 'apt-get install maven' failed (see $log)." >&2
  fi
  if command -v mvn >/dev/null 2>&1; then
    .venv/bin/python -m flinkish_cli.spark.maven --pom scripts/maven/kafka/pom.xml >/dev/null ||
      echo "WARNING: the Kafka broker's jars could not be resolved; its tests will say why." >&2
    .venv/bin/python -m flinkish_cli.spark.connectors kafka >/dev/null ||
      echo "WARNING: Spark's Kafka connector could not be resolved; its tests will say why." >&2
  else
    echo "WARNING: the Kafka tests need Maven: apt-get install maven" >&2
  fi
  # Storage: the tests' single-node HDFS (start-cluster.sh --hdfs): Hadoop's MiniDFSCluster jars of
  # pyspark's Hadoop, resolved with mvn once (about a minute) into flinkish's cache, and its
  # launcher compiled; instant when cached. Without Maven the HDFS tests say why.
  PYTHON=.venv/bin/python scripts/hdfs-classpath.sh >/dev/null ||
    echo "WARNING: the single-node HDFS's jars could not be resolved; its tests will say why." >&2
  # Spark's S3A file system (hadoop-aws of pyspark's Hadoop and its AWS SDK bundle, about
  # 650 MB once), which a job whose checkpoints are on S3 ships: resolved now, so that the
  # tests' jobs start offline.
  .venv/bin/python -m flinkish_cli.spark.connectors s3a >/dev/null ||
    echo "WARNING: Spark's S3A file system could not be resolved; its tests will say why." >&2
  # The tests' drivers map the class-data sharing archive: wait for it.
  .venv/bin/python -m flinkish_cli.spark.cds || true
fi
