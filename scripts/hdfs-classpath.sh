#!/usr/bin/env bash
# The class path of the single-node HDFS and YARN that scripts/start-cluster.sh --hdfs and
# --yarn start, on one line of stdout: Hadoop's minicluster jars (hadoop-client-minicluster,
# with the NameNode, DataNode, ResourceManager and NodeManager) of the Hadoop version of the
# pyspark installed for $PYTHON, resolved with mvn from scripts/maven/hadoop/pom.xml (the
# machine's Maven settings and repository), and the launchers compiled from
# scripts/maven/hadoop/*.java (SingleNodeHdfs, SingleNodeYarn) with javac. Both are kept in flinkish's cache
# ($XDG_CACHE_HOME/flinkish, else ~/.cache/flinkish) under hdfs/: the first call resolves and
# compiles (mvn's download, about a minute), every later one only prints. scripts/setup.sh
# --test calls it, so that the tests' HDFS starts offline.
#
#   PYTHON   python whose pyspark decides the Hadoop version   python3
set -euo pipefail

die() {
  echo "ERROR: $*" >&2
  exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
if ! spark_home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null); then
  die "pyspark not found for '$python': install it, or set PYTHON=/path/to/venv/bin/python."
fi
api_jar=$(ls "$spark_home"/jars/hadoop-client-api-*.jar 2>/dev/null | tail -n 1)
[ -n "$api_jar" ] || die "no hadoop-client-api jar in $spark_home/jars: which Hadoop does this pyspark use?"
version=$(basename "$api_jar" .jar)
version=${version#hadoop-client-api-}

cache_base=${XDG_CACHE_HOME:-}
[[ "$cache_base" == /* ]] || cache_base="$HOME/.cache"
cache="$cache_base/flinkish/hdfs/hadoop-$version"
# The jars' directory is named after the POM that resolved them: a changed POM resolves again.
jars="$cache/jars-$(sha256sum "$here/maven/hadoop/pom.xml" | cut -c1-12)"

if [ ! -f "$jars/.complete" ]; then
  command -v mvn >/dev/null 2>&1 ||
    die "Maven (mvn) not found: the HDFS jars are resolved with it; install it with 'apt-get install maven'"
  mkdir -p "$cache"
  scratch=$(mktemp -d "$cache/.jars.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  if ! mvn -B -q -f "$here/maven/hadoop/pom.xml" dependency:copy-dependencies \
    "-Dhadoop.version=$version" "-DoutputDirectory=$scratch/jars" >"$scratch/mvn.log" 2>&1; then
    tail -n 20 "$scratch/mvn.log" >&2
    die "mvn could not resolve org.apache.hadoop:hadoop-client-minicluster:$version (its output above): check the machine's access to Maven Central or its Maven settings (~/.m2/settings.xml)"
  fi
  touch "$scratch/jars/.complete"
  rm -rf "$jars"
  mv "$scratch/jars" "$jars"
fi

sources=("$here"/maven/hadoop/*.java)
digest=$(cat "${sources[@]}" | sha256sum | cut -c1-16)
launcher="$cache/flinkish-hdfs-$digest.jar"
classpath=$(find "$jars" -name '*.jar' | sort | tr '\n' ':')
classpath=${classpath%:}
if [ ! -s "$launcher" ]; then
  command -v javac >/dev/null 2>&1 ||
    die "javac not found: the HDFS launcher is compiled at its first start; install a JDK (apt-get install openjdk-17-jdk-headless)"
  scratch=$(mktemp -d "$cache/.launcher.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  javac -nowarn --release 17 -cp "$classpath" -d "$scratch/classes" "${sources[@]}" >&2 ||
    die "javac could not compile ${sources[*]}"
  jar_bin=jar
  command -v jar >/dev/null 2>&1 || jar_bin="$(dirname "$(readlink -f "$(command -v javac)")")/jar"
  "$jar_bin" --create --file "$scratch/launcher.jar" -C "$scratch/classes" . >&2
  mv "$scratch/launcher.jar" "$launcher"
fi
# An empty core-site.xml first: Hadoop's shell (FsShell) refuses to start without one.
conf_dir="$cache/conf"
if [ ! -s "$conf_dir/core-site.xml" ]; then
  mkdir -p "$conf_dir"
  printf '<?xml version="1.0"?>\n<configuration/>\n' >"$conf_dir/core-site.xml.$$"
  mv "$conf_dir/core-site.xml.$$" "$conf_dir/core-site.xml"
fi
echo "$conf_dir:$launcher:$classpath"
