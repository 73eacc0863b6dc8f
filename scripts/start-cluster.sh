#!/usr/bin/env bash
# Start a cluster on this machine from the pyspark installed for $PYTHON, bound to 127.0.0.1,
# like Flink's bin/start-cluster.sh:
#   (no mode flag)          a Spark standalone master and worker; last line spark://127.0.0.1:PORT
#   --session               a session cluster: a Spark Connect server over local[N];
#                           last line sc://127.0.0.1:PORT (flinkish run -m sc://127.0.0.1:PORT)
#   --session --standalone  a master, a worker and a Connect server over them; last line sc://...
#   --kafka                 a single-node Kafka broker (KRaft) alone, from Maven's jars; last
#                           line bootstrap.servers: 127.0.0.1:PORT (scripts/kafka-broker.sh
#                           --help: --kafka-port, --kafka-controller-port, --kafka-conf)
# and, as Flink's starts the JobManager with its REST API and web UI, flinkish web (the REST
# API, dashboard and /metrics) on 127.0.0.1:REST_PORT, in front of the session cluster: then
# 'flinkish run -m 127.0.0.1:REST_PORT' (or Flink's CLI with that -m) reaches the cluster.
# Stop everything it started with scripts/stop-cluster.sh (same --dir).
#
# Options (flag, or environment variable, default):
#   --dir DIR                FLINKISH_CLUSTER_DIR         /tmp/flinkish-cluster (pids, logs, work)
#   --master-port P          FLINKISH_MASTER_PORT         7077
#   --master-webui-port P    FLINKISH_MASTER_WEBUI_PORT   8080
#   --worker-port P          FLINKISH_WORKER_PORT         0 (any free port)
#   --worker-webui-port P    FLINKISH_WORKER_WEBUI_PORT   8082 (8081 is flinkish web's)
#   --cores N                FLINKISH_WORKER_CORES        2
#   --memory M               FLINKISH_WORKER_MEMORY       2g
#   --timeout SECONDS        FLINKISH_CLUSTER_TIMEOUT     90 (wait until the cluster answers)
#   --rest-port P            FLINKISH_REST_PORT           the configuration's rest.bind-port, else
#                                                         rest.port, else 8081 (flinkish web; a
#                                                         list or range: the first free; 0: any)
#   --no-web                 do not start flinkish web
# Single-node HDFS (--hdfs, on its own: no Spark daemon, no flinkish web):
#   --hdfs                   a NameNode and a DataNode in one JVM (Hadoop's MiniDFSCluster, of
#                            pyspark's Hadoop version, resolved with mvn once and cached:
#                            scripts/hdfs-classpath.sh), every address on 127.0.0.1, its files
#                            in DIR/hdfs (formatted at the first start, kept by later ones);
#                            last line fs.defaultFS: hdfs://127.0.0.1:PORT
#   --hdfs-port P            FLINKISH_HDFS_PORT           8020 (the NameNode's RPC port)
#   --hdfs-http-port P       FLINKISH_HDFS_HTTP_PORT      9870 (its web UI; 0: any free port)
#   --hdfs-heap M            FLINKISH_HDFS_HEAP           512m (the JVM's -Xmx)
#   (--timeout defaults to 180 s with --hdfs: a NameNode's start is slow on a loaded machine)
# Single-node YARN (--yarn, with the HDFS above; no Spark daemon, no flinkish web):
#   --yarn                   the HDFS of --hdfs (started unless one from DIR runs), then a
#                            ResourceManager and a NodeManager in one JVM (Hadoop's own, from
#                            the same jars), every address on 127.0.0.1; writes the Hadoop
#                            configuration directory DIR/hadoop-conf (core-site.xml,
#                            hdfs-site.xml, yarn-site.xml); last line HADOOP_CONF_DIR=DIR/hadoop-conf
#   --yarn-port P            FLINKISH_YARN_PORT           8032 (the ResourceManager's client
#                                                         port; 0: any free port)
#   --yarn-webui-port P      FLINKISH_YARN_WEBUI_PORT     8088 (its web UI and REST API; 0: any)
#   --yarn-memory MB         FLINKISH_YARN_MEMORY         8192 (what the NodeManager offers)
#   --yarn-vcores N          FLINKISH_YARN_VCORES         4
#   --yarn-max-container MB  FLINKISH_YARN_MAX_CONTAINER  4096 (the largest container granted)
#   --yarn-heap M            FLINKISH_YARN_HEAP           512m (the JVM's -Xmx)
#   (sizes for a 2-core, 24 GiB machine, and why: docs/guides/yarn.md)
# Session cluster (--session):
#   --session-port P         FLINKISH_SESSION_PORT        15002 (Spark Connect's gRPC port)
#   --session-webui-port P   FLINKISH_SESSION_WEBUI_PORT  0 (no web UI; else the server's Spark UI)
#   --slots N                FLINKISH_SESSION_SLOTS       from the configuration (below)
#   --conf-dir DIR           FLINK_CONF_DIR wins, else DIR, else ./conf (as flinkish reads it)
#   --session-conf K=V       repeatable: a Spark setting of the server (spark-submit --conf; it
#                            wins over the defaults: Python workers get 120 s to connect back,
#                            spark.python.authenticate.socketTimeout, as a loaded machine needs),
#                            e.g. spark.driver.memory=4g; spark.log.level=INFO for a chatty log
#   PYSPARK_PYTHON           Python of the server's Python workers (foreachBatch, UDFs); $PYTHON
#   FLINKISH_WORKER_FORK=0   no fork server: each foreachBatch query's worker starts cold (about
#                            a second of imports; the fork server forks it ready)
#   PYTHON                   python whose pyspark to use  python3
# Without --slots, N = max(taskmanager.numberOfTaskSlots, parallelism.default) of the
# configuration (flink-conf.yaml or config.yaml), as flinkish's own local master, default 1.
# Over --standalone the server's executors are the worker's --cores. The server maps the
# drivers' class-data sharing archive when there is one (env.java.class-data-sharing).
# The server has no authentication: any local user can reach 127.0.0.1, as with Flink's own
# session cluster. Java 17+ is needed (JAVA_HOME or java on the PATH); the session cluster also
# needs Spark Connect's client packages for PYTHON and PYSPARK_PYTHON (flinkish's 'session' extra).
set -euo pipefail

die() {
  echo "ERROR: $*" >&2
  exit 1
}

dir=${FLINKISH_CLUSTER_DIR:-/tmp/flinkish-cluster}
master_port=${FLINKISH_MASTER_PORT:-7077}
master_webui_port=${FLINKISH_MASTER_WEBUI_PORT:-8080}
worker_port=${FLINKISH_WORKER_PORT:-0}
worker_webui_port=${FLINKISH_WORKER_WEBUI_PORT:-8082}
rest_port=${FLINKISH_REST_PORT:-}
web=1
cores=${FLINKISH_WORKER_CORES:-2}
memory=${FLINKISH_WORKER_MEMORY:-2g}
timeout=${FLINKISH_CLUSTER_TIMEOUT:-}
python=${PYTHON:-python3}
session_port=${FLINKISH_SESSION_PORT:-15002}
session_webui_port=${FLINKISH_SESSION_WEBUI_PORT:-0}
slots=${FLINKISH_SESSION_SLOTS:-}
conf_dir=""
session_confs=()
session=0
standalone=""
hdfs=0
hdfs_port=${FLINKISH_HDFS_PORT:-8020}
hdfs_http_port=${FLINKISH_HDFS_HTTP_PORT:-9870}
hdfs_heap=${FLINKISH_HDFS_HEAP:-512m}
yarn=0
yarn_port=${FLINKISH_YARN_PORT:-8032}
yarn_webui_port=${FLINKISH_YARN_WEBUI_PORT:-8088}
yarn_memory=${FLINKISH_YARN_MEMORY:-8192}
yarn_vcores=${FLINKISH_YARN_VCORES:-4}
yarn_max_container=${FLINKISH_YARN_MAX_CONTAINER:-4096}
yarn_heap=${FLINKISH_YARN_HEAP:-512m}

# --kafka: the Kafka broker, started by scripts/kafka-broker.sh with the other options.
for arg in "$@"; do
  if [ "$arg" = --kafka ]; then
    kafka_args=()
    for other in "$@"; do [ "$other" = --kafka ] || kafka_args+=("$other"); done
    exec "$(dirname "$0")/kafka-broker.sh" ${kafka_args[@]+"${kafka_args[@]}"}
  fi
done

while [ $# -gt 0 ]; do
  case "$1" in
    --session) session=1; shift ;;
    --standalone) standalone=1; shift ;;
    --no-web) web=0; shift ;;
    --hdfs) hdfs=1; shift ;;
    --yarn) yarn=1; shift ;;
    --yarn-port | --yarn-webui-port | --yarn-memory | --yarn-vcores | --yarn-max-container | --yarn-heap)
      [ $# -ge 2 ] || die "option '$1' needs a value (see --help)"
      case "$1" in
        --yarn-port) yarn_port=$2 ;;
        --yarn-webui-port) yarn_webui_port=$2 ;;
        --yarn-memory) yarn_memory=$2 ;;
        --yarn-vcores) yarn_vcores=$2 ;;
        --yarn-max-container) yarn_max_container=$2 ;;
        --yarn-heap) yarn_heap=$2 ;;
      esac
      shift 2
      ;;
    --hdfs-port | --hdfs-http-port | --hdfs-heap)
      [ $# -ge 2 ] || die "option '$1' needs a value (see --help)"
      case "$1" in
        --hdfs-port) hdfs_port=$2 ;;
        --hdfs-http-port) hdfs_http_port=$2 ;;
        --hdfs-heap) hdfs_heap=$2 ;;
      esac
      shift 2
      ;;
    --dir | --master-port | --master-webui-port | --worker-port | --worker-webui-port | --cores | \
      --memory | --timeout | --session-port | --session-webui-port | --slots | --conf-dir | --session-conf | \
      --rest-port)
      [ $# -ge 2 ] || die "option '$1' needs a value (see --help)"
      case "$1" in
        --dir) dir=$2 ;;
        --master-port) master_port=$2 ;;
        --master-webui-port) master_webui_port=$2 ;;
        --worker-port) worker_port=$2 ;;
        --worker-webui-port) worker_webui_port=$2 ;;
        --cores) cores=$2 ;;
        --memory) memory=$2 ;;
        --timeout) timeout=$2 ;;
        --session-port) session_port=$2 ;;
        --session-webui-port) session_webui_port=$2 ;;
        --slots) slots=$2 ;;
        --conf-dir) conf_dir=$2 ;;
        --rest-port) rest_port=$2 ;;
        --session-conf)
          [[ "$2" =~ ^spark\.[A-Za-z0-9._-]+=.+ ]] || die "--session-conf '$2' is not like spark.key=value"
          session_confs+=(--conf "$2")
          ;;
      esac
      shift 2
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
if [ -z "$timeout" ]; then
  if [ $hdfs = 1 ] || [ $yarn = 1 ]; then timeout=180; else timeout=90; fi
fi
# Without --session the script starts what it always started: the standalone cluster.
if [ -z "$standalone" ]; then
  if [ $session = 1 ]; then standalone=0; else standalone=1; fi
fi

# Java first, with shell builtins only, so the message is clear even on a bare PATH.
java_bin=java
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  java_bin="$JAVA_HOME/bin/java"
fi
if ! command -v "$java_bin" >/dev/null 2>&1; then
  die "Java not found: install Java 17 (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME."
fi
java_major=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$java_major" ] && [ "$java_major" -lt 17 ]; then
  die "Java $java_major found; Spark 4 needs Java 17+: install openjdk-17-jre-headless or point JAVA_HOME at a JDK 17."
fi

for value in "$master_port" "$master_webui_port" "$worker_port" "$worker_webui_port" "$cores" \
  "$timeout" "$session_port" "$session_webui_port" ${slots:+"$slots"}; do
  [[ "$value" =~ ^[0-9]+$ ]] || die "'$value' is not a number (ports, cores, slots and timeout are numbers)"
done
if [ -n "$rest_port" ] && ! [[ "$rest_port" =~ ^[0-9]+([[:space:]]*[-,][[:space:]]*[0-9]+)*$ ]]; then
  die "--rest-port '$rest_port' is not a port, a list (50100,50101) or a range (50100-50200)"
fi
[[ "$memory" =~ ^[0-9]+[kKmMgGtT]?$ ]] || die "worker memory '$memory' is not like 512m or 2g"
if [ $session = 1 ]; then
  if [ "$session_port" -lt 1 ] || [ "$session_port" -gt 65535 ]; then
    die "--session-port $session_port is not a port (1 to 65535)"
  fi
  if [ -n "$slots" ] && [ "$slots" -lt 1 ]; then
    die "--slots must be at least 1"
  fi
fi

if ! spark_home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null); then
  die "pyspark not found for '$python': install it, or set PYTHON=/path/to/venv/bin/python."
fi
[ -x "$spark_home/bin/spark-class" ] || die "$spark_home/bin/spark-class not found (is pyspark complete?)"

# start_hdfs: --hdfs. The JVM runs in a process group of its own whose id is in DIR/hdfs.pid
# (scripts/stop-cluster.sh stops it); its console in DIR/logs/hdfs.out, Hadoop's log in
# DIR/logs/hdfs.log. Ready when the launcher prints the fs.defaultFS line (NameNode and
# DataNode up, out of safe mode).
start_hdfs() {
  local value
  for value in "$hdfs_port" "$hdfs_http_port"; do
    [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -le 65535 ] || die "'$value' is not a port (0 to 65535)"
  done
  [ "$hdfs_port" != 0 ] || die "--hdfs-port must be a fixed port: a restart on the same files needs the same address"
  [[ "$hdfs_heap" =~ ^[0-9]+[kKmMgG]$ ]] || die "--hdfs-heap '$hdfs_heap' is not like 512m or 1g"
  mkdir -p "$dir/logs" "$dir/hdfs"
  dir=$(cd "$dir" && pwd)
  if [ -s "$dir/hdfs.pid" ] && kill -0 "$(cat "$dir/hdfs.pid")" 2>/dev/null; then
    die "an HDFS started from $dir is already running (pid $(cat "$dir/hdfs.pid")); stop it with: scripts/stop-cluster.sh --dir $dir"
  fi
  rm -f "$dir/hdfs.pid" "$dir/hdfs.url"
  for value in "$hdfs_port" "$hdfs_http_port"; do
    [ "$value" = 0 ] && continue
    if ! "$python" "$(dirname "$0")/port_free.py" "$value"; then
      die "port $value on 127.0.0.1 is in use: choose other ports (see --help) or stop what uses it"
    fi
  done
  local classpath
  classpath=$(PYTHON="$python" "$(dirname "$0")/hdfs-classpath.sh") || exit 1
  : >"$dir/logs/hdfs.out"
  # shellcheck disable=SC2016  # $$, $0 and $@ belong to the inner shell
  setsid bash -c 'echo $$ > "$0"; exec nohup "$@"' "$dir/hdfs.pid" \
    "$java_bin" "-Xmx$hdfs_heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \
    -Dorg.slf4j.simpleLogger.logFile="$dir/logs/hdfs.log" \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
    -cp "$classpath" io.flinkish.hdfs.SingleNodeHdfs "$dir/hdfs" "$hdfs_port" "$hdfs_http_port" \
    >>"$dir/logs/hdfs.out" 2>&1 </dev/null &
  local deadline=$((SECONDS + timeout)) url=""
  until [ -n "$url" ]; do
    url=$(sed -n 's/^fs\.defaultFS: \(hdfs:.*\)$/\1/p' "$dir/logs/hdfs.out" | head -n 1)
    [ -z "$url" ] || break
    if [ -s "$dir/hdfs.pid" ] && ! kill -0 "$(cat "$dir/hdfs.pid")" 2>/dev/null; then
      echo "--- last lines of $dir/logs/hdfs.out and hdfs.log:" >&2
      tail -n 20 "$dir/logs/hdfs.out" "$dir/logs/hdfs.log" >&2 2>/dev/null || true
      die "the HDFS (NameNode and DataNode) exited during startup"
    fi
    if [ $SECONDS -ge $deadline ]; then
      "$(dirname "$0")/stop-cluster.sh" --dir "$dir" >/dev/null 2>&1 || true
      die "the HDFS did not come up within ${timeout}s (see $dir/logs/hdfs.out and hdfs.log)"
    fi
    sleep 0.5
  done
  echo "$url" >"$dir/hdfs.url"
  echo "HDFS running: pid $(cat "$dir/hdfs.pid"), files in $dir/hdfs, $(grep -m1 '^NameNode web UI' "$dir/logs/hdfs.out")"
  echo "Logs in $dir/logs; stop with: scripts/stop-cluster.sh --dir $dir"
  echo "fs.defaultFS: $url"
}
# start_yarn: --yarn. The HDFS first (unless one started from DIR runs), then the
# ResourceManager and NodeManager in one JVM whose process group id is in DIR/yarn.pid (working
# directory DIR/yarn: the NodeManager's local and log directories); its console in
# DIR/logs/yarn.out, Hadoop's log in DIR/logs/yarn.log. Containers run as this user, in
# process groups of their own under DIR/yarn/local (scripts/stop-cluster.sh ends them too).
# Ready when the launcher prints the HADOOP_CONF_DIR line (the NodeManager registered).
start_yarn() {
  local value
  for value in "$yarn_port" "$yarn_webui_port"; do
    [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -le 65535 ] || die "'$value' is not a port (0 to 65535)"
  done
  for value in "$yarn_memory" "$yarn_vcores" "$yarn_max_container"; do
    [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -ge 1 ] ||
      die "'$value' is not a positive number (--yarn-memory, --yarn-vcores and --yarn-max-container are)"
  done
  [ "$yarn_memory" -ge 1024 ] ||
    die "--yarn-memory $yarn_memory is too small for a Spark driver: give at least 1024 (MB)"
  [ "$yarn_max_container" -le "$yarn_memory" ] ||
    die "--yarn-max-container $yarn_max_container is larger than the NodeManager's --yarn-memory $yarn_memory"
  [[ "$yarn_heap" =~ ^[0-9]+[kKmMgG]$ ]] || die "--yarn-heap '$yarn_heap' is not like 512m or 1g"
  mkdir -p "$dir/logs"
  dir=$(cd "$dir" && pwd)
  if [ -s "$dir/yarn.pid" ] && kill -0 "$(cat "$dir/yarn.pid")" 2>/dev/null; then
    die "a YARN started from $dir is already running (pid $(cat "$dir/yarn.pid")); stop it with: scripts/stop-cluster.sh --dir $dir"
  fi
  for value in "$yarn_port" "$yarn_webui_port"; do
    [ "$value" = 0 ] && continue
    if ! "$python" "$(dirname "$0")/port_free.py" "$value"; then
      die "port $value on 127.0.0.1 is in use: choose other ports (see --help) or stop what uses it"
    fi
  done
  local fs
  if [ -s "$dir/hdfs.pid" ] && kill -0 "$(cat "$dir/hdfs.pid")" 2>/dev/null && [ -s "$dir/hdfs.url" ]; then
    fs=$(cat "$dir/hdfs.url")
    echo "Using the HDFS already running from $dir: $fs"
  else
    start_hdfs
    fs=$(cat "$dir/hdfs.url")
  fi
  rm -f "$dir/yarn.pid" "$dir/yarn.conf"
  rm -rf "$dir/yarn"
  mkdir -p "$dir/yarn"
  local classpath java_home
  classpath=$(PYTHON="$python" "$(dirname "$0")/hdfs-classpath.sh") || exit 1
  # Containers start {{JAVA_HOME}}/bin/java: the NodeManager passes its own JAVA_HOME on.
  java_home=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v "$java_bin")")")")}
  printf '%s\n' "log4j.rootLogger=WARN, file" "log4j.appender.file=org.apache.log4j.FileAppender" \
    "log4j.appender.file.File=$dir/logs/yarn.log" \
    "log4j.appender.file.layout=org.apache.log4j.PatternLayout" \
    "log4j.appender.file.layout.ConversionPattern=%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n" \
    >"$dir/yarn/log4j.properties"
  # Hadoop names the NodeManager (its node id, the NM_HOST its containers see) by the canonical
  # name of 127.0.0.1, "localhost" in /etc/hosts: a hosts file of the JVM's own makes that
  # name 127.0.0.1 itself (the first line answers the reverse lookup), and still resolves
  # localhost and this machine's name to 127.0.0.1.
  printf '%s\n' "127.0.0.1 127.0.0.1" "127.0.0.1 localhost $(hostname)" >"$dir/yarn/hosts"
  : >"$dir/logs/yarn.out"
  # shellcheck disable=SC2016  # $$, $0 and $@ belong to the inner shell
  (cd "$dir/yarn" && JAVA_HOME="$java_home" exec setsid bash -c 'echo $$ > "$0"; exec nohup "$@"' "$dir/yarn.pid" \
    "$java_bin" "-Xmx$yarn_heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \
    -Djdk.net.hosts.file="$dir/yarn/hosts" -Dlog4j.configuration="file:$dir/yarn/log4j.properties" \
    -Dorg.slf4j.simpleLogger.logFile="$dir/logs/yarn.log" \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
    -cp "$classpath" io.flinkish.hdfs.SingleNodeYarn "$dir/yarn" "$fs" "$dir/hadoop-conf" \
    "$yarn_port" "$yarn_webui_port" "$yarn_memory" "$yarn_vcores" "$yarn_max_container") \
    >>"$dir/logs/yarn.out" 2>&1 </dev/null &
  local deadline=$((SECONDS + timeout)) conf=""
  until [ -n "$conf" ]; do
    conf=$(sed -n 's/^HADOOP_CONF_DIR=\(.*\)$/\1/p' "$dir/logs/yarn.out" | head -n 1)
    [ -z "$conf" ] || break
    if [ -s "$dir/yarn.pid" ] && ! kill -0 "$(cat "$dir/yarn.pid")" 2>/dev/null; then
      echo "--- last lines of $dir/logs/yarn.out and yarn.log:" >&2
      tail -n 20 "$dir/logs/yarn.out" "$dir/logs/yarn.log" >&2 2>/dev/null || true
      die "the YARN (ResourceManager and NodeManager) exited during startup"
    fi
    if [ $SECONDS -ge $deadline ]; then
      "$(dirname "$0")/stop-cluster.sh" --dir "$dir" >/dev/null 2>&1 || true
      die "the YARN did not come up within ${timeout}s (see $dir/logs/yarn.out and yarn.log)"
    fi
    sleep 0.5
  done
  echo "$conf" >"$dir/yarn.conf"
  echo "YARN running: pid $(cat "$dir/yarn.pid"), $(grep -m1 '^ResourceManager: ' "$dir/logs/yarn.out")"
  echo "Logs in $dir/logs; stop with: scripts/stop-cluster.sh --dir $dir"
  echo "HADOOP_CONF_DIR=$conf"
}
if [ $yarn = 1 ]; then
  start_yarn
  exit 0
fi
if [ $hdfs = 1 ]; then
  start_hdfs
  exit 0
fi

# connect_ready PYTHON: PYTHON can run Spark Connect's client (pyspark's dependency check
# passes). Run with a __file__: under 'python -c' or 'python -' pyspark takes itself for a
# doctest run and exits 0 when a package is missing.
connect_ready() {
  "$1" - 2>/dev/null <<'EOF'
import __main__

__main__.__file__ = "connect-check"
import pyspark.sql.connect  # noqa: E402,F401  (runs pyspark's dependency check)
EOF
}

# The server's Python workers run in the server's directory: name the interpreter absolutely.
pyspark_python=${PYSPARK_PYTHON:-$("$python" -c 'import sys; print(sys.executable)')}
if [ $session = 1 ]; then
  connect_hint="install flinkish's 'session' extra (pip install -e '.[session]') or pip install 'pyspark[connect]'"
  if ! connect_ready "$python"; then
    die "Spark Connect's client packages (grpcio, grpcio-status, googleapis-common-protos, pandas, pyarrow, zstandard) are missing for '$python': $connect_hint"
  fi
  if [ "$pyspark_python" != "$python" ] && ! connect_ready "$pyspark_python"; then
    die "PYSPARK_PYTHON '$pyspark_python' cannot run Spark Connect's client (the server runs foreachBatch in it): $connect_hint, or unset PYSPARK_PYTHON"
  fi
  if [ -z "$slots" ] && [ $standalone = 0 ]; then
    # N = max(taskmanager.numberOfTaskSlots, parallelism.default), read as flinkish reads its
    # configuration when flinkish is importable, else from flat 'key: value' lines.
    if ! slots=$(FLINKISH_CONF_DIR_ARG="$conf_dir" "$python" - 2>&1 <<'EOF'
import os
import re
import sys
from pathlib import Path

conf_dir = os.environ.get("FLINKISH_CONF_DIR_ARG") or None
try:
    from flinkish_cli.config import load_configuration
except ImportError:
    values = {}
    base = Path(os.environ.get("FLINK_CONF_DIR") or conf_dir or "conf")
    key = re.compile(r"\s*(taskmanager\.numberOfTaskSlots|parallelism\.default)\s*:\s*(\d+)\s*(#.*)?$")
    for name in ("flink-conf.yaml", "config.yaml"):  # config.yaml wins: read last
        if (base / name).is_file():
            for line in (base / name).read_text().splitlines():
                match = key.match(line)
                if match:
                    values[match.group(1)] = int(match.group(2))
    slots = values.get("taskmanager.numberOfTaskSlots", 1)
    parallelism = values.get("parallelism.default", 1)
else:
    try:
        config = load_configuration(conf_dir)
    except Exception as error:  # flinkish's own one-line message
        sys.exit(f"{error}")
    slots = int(config.get("taskmanager.numberOfTaskSlots"))
    parallelism = int(config.get("parallelism.default"))
print(max(slots, parallelism, 1))
EOF
    ); then
      die "could not read the configuration for the number of slots (pass --slots N): $slots"
    fi
  fi
fi

mkdir -p "$dir/logs" "$dir/work"
dir=$(cd "$dir" && pwd)

# One read of the configuration, as flinkish reads it (when it can), for two things.
# Line 1: the daemons' logs roll as a job's do: <role>.log rolls at flinkish.log.max-file-size
# and keeps env.log.max old files (log4j's own rolling appender); <role>.out keeps only what a
# JVM prints to its console.
# Lines 2 and 3, class-data sharing: the session cluster's Connect server is a Spark driver,
# and maps the drivers' archive (flinkish_cli/spark/cds.py; scripts/setup.sh makes it) as
# theirs do, unless env.java.class-data-sharing is false. The JVM accepts it only with the
# drivers' fixed, empty SPARK_CONF_DIR on its class path: so only where the server would
# otherwise read no Spark configuration directory (SPARK_CONF_DIR unset and pyspark's conf/
# empty). That directory, then the JVM options; neither without an archive.
want_cds=0
if [ $session = 1 ] && [ -z "${SPARK_CONF_DIR:-}" ] && [ -z "$(ls -A "$spark_home/conf" 2>/dev/null)" ]; then
  want_cds=1
fi
settings=$(FLINKISH_CONF_DIR_ARG="$conf_dir" SPARK_HOME_ARG="$spark_home" WANT_CDS=$want_cds \
  "$python" - 2>/dev/null <<'PY'
import os
from pathlib import Path

try:
    from flinkish_cli.config import load_configuration

    config = load_configuration(os.environ.get("FLINKISH_CONF_DIR_ARG") or None)
    print(int(config.get("flinkish.log.max-file-size")), int(config.get("env.log.max")))
except Exception:
    print(100 * 1024 * 1024, 10)
    raise SystemExit(0) from None
cds_lines = ["", ""]
try:
    if os.environ.get("WANT_CDS") == "1" and config.get("env.java.class-data-sharing"):
        from flinkish_cli.spark import cds

        archive = cds.archive_path(Path(os.environ["SPARK_HOME_ARG"]))
        if archive is not None and cds.usable(archive):
            options = [*cds.jvm_logging_options(), *cds.driver_options(archive)]
            cds_lines = [str(cds.spark_conf_dir()), " ".join(options)]
except Exception:
    pass
print("\n".join(cds_lines))
try:
    from flinkish_cli.spark import local_fs

    local_fs.main(["--driver", os.environ["SPARK_HOME_ARG"]])
except Exception:
    pass
PY
) || settings="104857600 10"
read -r log_size log_max <<<"$(sed -n 1p <<<"$settings")"
cds_conf_dir=$(sed -n 2p <<<"$settings")
cds_options=$(sed -n 3p <<<"$settings")
# flinkish's local file system for Hadoop (flinkish_cli/spark/local_fs.py; setup.sh makes its
# jar): the server's files on local disk without a chmod process each; its class path and
# settings as local_fs.driver_settings decides them (nothing without the jar).
local_fs_classpath=$(sed -n 4p <<<"$settings")
local_fs_confs=()
while IFS= read -r setting; do
  [ -z "$setting" ] || local_fs_confs+=(--conf "$setting")
done < <(sed -n '5,$p' <<<"$settings")
cat >"$dir/log4j2.properties" <<LOG4J
# Written by flinkish's start-cluster.sh: each daemon's log rolls by size, as Flink's do.
rootLogger.level = info
rootLogger.appenderRef.rolling.ref = rolling
appender.rolling.type = RollingFile
appender.rolling.name = rolling
appender.rolling.fileName = \${sys:flinkish.daemon.log}
appender.rolling.filePattern = \${sys:flinkish.daemon.log}.%i
appender.rolling.layout.type = PatternLayout
appender.rolling.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
appender.rolling.policies.type = Policies
appender.rolling.policies.size.type = SizeBasedTriggeringPolicy
appender.rolling.policies.size.size = $log_size
appender.rolling.strategy.type = DefaultRolloverStrategy
appender.rolling.strategy.max = $log_max
appender.rolling.strategy.fileIndex = min
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
LOG4J
daemon_log() {  # daemon_log ROLE: the JVM options that send ROLE's log to logs/ROLE.log
  echo "-Dlog4j.configurationFile=$dir/log4j2.properties -Dflinkish.daemon.log=$dir/logs/$1.log"
}

alive() {  # alive PIDFILE: the process named in PIDFILE runs
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}
for role in master worker connect web; do
  if alive "$dir/$role.pid"; then
    die "a Spark $role started from $dir is already running (pid $(cat "$dir/$role.pid")); stop it with: scripts/stop-cluster.sh --dir $dir"
  fi
  rm -f "$dir/$role.pid"
done
rm -f "$dir/connect.url" "$dir/web.url"

ports=()
if [ $web = 1 ] && [[ "$rest_port" =~ ^[0-9]+$ ]]; then
  ports+=("$rest_port")  # a list or a range, or the configuration's: flinkish web checks them
fi
if [ $standalone = 1 ]; then
  ports+=("$master_port" "$master_webui_port" "$worker_port" "$worker_webui_port")
fi
if [ $session = 1 ]; then
  ports+=("$session_port" "$session_webui_port")
fi
for port in "${ports[@]}"; do
  [ "$port" = 0 ] && continue
  if ! "$python" "$(dirname "$0")/port_free.py" "$port"; then
    die "port $port on 127.0.0.1 is in use: choose other ports (see --help) or stop what uses it"
  fi
done

export SPARK_HOME="$spark_home"
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOG_DIR="$dir/logs"
export SPARK_WORKER_DIR="$dir/work"
# Fail instead of silently moving to the next port when one is taken.
# No REST submission server (fixed port 6066, unused by flinkish): two clusters can coexist.
SPARK_MASTER_OPTS="$(daemon_log master) ${SPARK_MASTER_OPTS:-} -Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false"
SPARK_WORKER_OPTS="$(daemon_log worker) ${SPARK_WORKER_OPTS:-} -Dspark.port.maxRetries=0"
export SPARK_MASTER_OPTS SPARK_WORKER_OPTS

# launch ROLE CLASS ARGS...: run CLASS in a session of its own (so that stop-cluster.sh can
# signal the process and its children, e.g. executors, as one group); the process writes its
# own pid, which is also its process group id.
launch() {
  local role=$1
  shift
  # A process to run beside it in its group, told the daemon's pid (FORK_ENTRY: the fork
  # server of the session cluster's Python workers, see below).
  # shellcheck disable=SC2016  # $$, $0 and $@ belong to the inner shell
  setsid bash -c '[ -z "${FORK_ENTRY:-}" ] || nohup "$FORK_PYTHON" "$FORK_ENTRY" --serve \
      "$FORK_SOCKET" --parent $$ >"$FORK_LOG" 2>&1 </dev/null &
    echo $$ > "$0"; exec nohup "$@"' "$dir/$role.pid" \
    "$spark_home/bin/spark-class" "$@" >"$dir/logs/$role.out" 2>&1 </dev/null &
  local waited=0
  until [ -s "$dir/$role.pid" ]; do
    sleep 0.1
    waited=$((waited + 1))
    [ $waited -lt 100 ] || fail "the Spark $role did not start"
  done
}

started=()
fail() {
  echo "ERROR: $*" >&2
  for role in "${started[@]}"; do
    for file in "$dir/logs/$role.log" "$dir/logs/$role.out"; do
      if [ -s "$file" ]; then
        echo "--- last lines of $file:" >&2
        grep -v $'^\tat \\|^\\s*\\.\\.\\. [0-9]* more' "$file" | tail -n 20 >&2 || true
      fi
    done
  done
  "$(dirname "$0")/stop-cluster.sh" --dir "$dir" >/dev/null 2>&1 || true
  exit 1
}

# alive_workers: number of ALIVE workers in the master's JSON, or -1 if it does not answer.
alive_workers() {
  "$python" - "http://127.0.0.1:$master_webui_port/json/" <<'EOF'
import json
import sys
import urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1], timeout=2) as response:
        state = json.load(response)
except Exception:
    print(-1)
else:
    print(sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE"))
EOF
}

deadline=$((SECONDS + timeout))
if [ $standalone = 1 ]; then
  launch master org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$master_port" --webui-port "$master_webui_port"
  started+=(master)
  until [ "$(alive_workers)" != -1 ]; do
    alive "$dir/master.pid" || fail "the Spark master exited during startup"
    [ $SECONDS -lt $deadline ] || fail "the Spark master's web UI did not answer within ${timeout}s"
    sleep 0.5
  done

  launch worker org.apache.spark.deploy.worker.Worker "spark://127.0.0.1:$master_port" \
    --host 127.0.0.1 --port "$worker_port" --webui-port "$worker_webui_port" \
    --cores "$cores" --memory "$memory" --work-dir "$dir/work"
  started+=(worker)
  until [ "$(alive_workers)" -ge 1 ]; do
    alive "$dir/master.pid" || fail "the Spark master exited"
    alive "$dir/worker.pid" || fail "the Spark worker exited during startup"
    [ $SECONDS -lt $deadline ] || fail "no ALIVE worker registered with the master within ${timeout}s"
    sleep 0.5
  done

  echo "Spark master running: pid $(cat "$dir/master.pid"), web UI http://127.0.0.1:$master_webui_port"
  echo "Spark worker running: pid $(cat "$dir/worker.pid"), $cores cores, $memory, web UI http://127.0.0.1:$worker_webui_port"
fi

if [ $session = 1 ]; then
  if [ $standalone = 1 ]; then
    session_master="spark://127.0.0.1:$master_port"
    capacity="the worker's $cores cores"
  else
    session_master="local[$slots]"
    capacity="$session_master"
  fi
  if [ "$session_webui_port" = 0 ]; then
    ui_confs=(--conf spark.ui.enabled=false)
  else
    ui_confs=(--conf spark.ui.enabled=true --conf "spark.ui.port=$session_webui_port")
  fi
  # The server is an ordinary Spark driver: spark-submit of SparkConnectServer (what
  # sbin/start-connect-server.sh runs), in the foreground of its own process group. Its
  # Python workers (foreachBatch runs in one per query) use PYSPARK_PYTHON. The client-side
  # switches must not reach the server (it would try to be a Connect client itself).
  # spark.log.level=WARN: at INFO the server logs every session access and every
  # micro-batch's progress of every job.
  # Pre-started Python workers (flinkish_cli/runtime/entry/worker_fork.py): the server's
  # Python is a launcher that has each foreachBatch (and listener) worker forked, with pyspark's
  # Connect client already imported, by a fork server in the server's process group; anything
  # else it runs with the real interpreter. Without flinkish beside this script: as before.
  worker_python="$pyspark_python"
  fork_entry="$(cd "$(dirname "$0")/.." && pwd)/flinkish_cli/runtime/entry/worker_fork.py"
  if [ "${FLINKISH_WORKER_FORK:-1}" != 0 ] && [ -f "$fork_entry" ]; then
    worker_python="$dir/pyspark-python"
    {
      echo '#!/usr/bin/env bash'
      printf 'export FLINKISH_WORKER_FORK=%q FLINKISH_WORKER_PYTHON=%q\n' \
        "$dir/worker-fork.sock" "$pyspark_python"
      printf 'exec %q -S %q "$@"\n' "$pyspark_python" "$fork_entry"
    } >"$worker_python"
    chmod 700 "$worker_python"
    rm -f "$dir/worker-fork.sock"
  else
    fork_entry=""
  fi
  (
    export SPARK_CONNECT_MODE=0 PYSPARK_PYTHON="$worker_python"
    if [ -n "$fork_entry" ]; then
      export FORK_ENTRY="$fork_entry" FORK_PYTHON="$pyspark_python" \
        FORK_SOCKET="$dir/worker-fork.sock" FORK_LOG="$dir/logs/worker-fork.log"
    fi
    if [ -n "$cds_conf_dir" ] && [ -n "$cds_options" ]; then
      export SPARK_CONF_DIR="$cds_conf_dir"  # the user's own options, after, win
      SPARK_SUBMIT_OPTS="$cds_options ${SPARK_SUBMIT_OPTS:-}"
    fi
    SPARK_SUBMIT_OPTS="$(daemon_log connect) ${SPARK_SUBMIT_OPTS:-}"
    export SPARK_SUBMIT_OPTS
    [ -z "$local_fs_classpath" ] || export SPARK_DIST_CLASSPATH="$local_fs_classpath"
    unset SPARK_REMOTE SPARK_CONNECT_MODE_ENABLED SPARK_LOCAL_REMOTE SPARK_API_MODE MASTER
    launch connect org.apache.spark.deploy.SparkSubmit \
      --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name "flinkish session cluster" \
      --master "$session_master" \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf "spark.connect.grpc.binding.port=$session_port" \
      --conf spark.port.maxRetries=0 \
      --conf spark.log.level=WARN \
      --conf spark.python.authenticate.socketTimeout=120s \
      "${ui_confs[@]}" \
      ${local_fs_confs[@]+"${local_fs_confs[@]}"} \
      ${session_confs[@]+"${session_confs[@]}"}
  )
  started+=(connect)
  [ -s "$dir/connect.pid" ] || fail "the Spark Connect server did not start"
  # Ready when a real Connect client gets an answer (the Spark version) from the port. The
  # client's own retries are off (by default it retries for minutes), so each try fails at
  # once while the server starts.
  if ! FLINKISH_CONNECT_PID="$(cat "$dir/connect.pid")" "$python" - \
    "sc://127.0.0.1:$session_port" "$((deadline - SECONDS))" <<'EOF'
import __main__

__main__.__file__ = "connect-probe"  # see connect_ready(): not a doctest run
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from pyspark.sql.connect.client import SparkConnectClient  # noqa: E402

url, budget = sys.argv[1], float(sys.argv[2])
pid = int(os.environ["FLINKISH_CONNECT_PID"])
deadline = time.monotonic() + budget
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the Spark Connect server exited during startup")
    client = SparkConnectClient(url)
    client.set_retry_policies([])
    try:
        client._analyze(method="spark_version")
        client.release_session()
        sys.exit(0)
    except Exception as error:  # UNAVAILABLE while the server starts
        text = str(error).strip()
        last = text.splitlines()[0] if text else type(error).__name__
    finally:
        client.close()
    if time.monotonic() >= deadline:
        sys.exit(f"no answer from {url} in time: {last}")
    time.sleep(0.5)
EOF
  then
    fail "the Spark Connect server did not become ready within ${timeout}s (see its log above)"
  fi
  if [ -n "$fork_entry" ]; then  # its imports take a second or two: ready before the warm-up
    waited=0
    while [ ! -S "$dir/worker-fork.sock" ] && [ $waited -lt 300 ]; do
      ! grep -qs 'Error\|Traceback' "$dir/logs/worker-fork.log" || break  # it failed
      sleep 0.1
      waited=$((waited + 1))
    done
    [ -S "$dir/worker-fork.sock" ] ||
      echo "WARNING: the fork server of the Python workers did not start, so they start cold: $(tail -n 1 "$dir/logs/worker-fork.log" 2>/dev/null)" >&2
  fi
  # Warm it up, so that the first job starts as fast as the tenth: one short job of the kinds
  # flinkish runs (a batch query, a Python UDF on the executors, a streaming query with
  # foreachBatch and a file sink) loads and compiles the server's planner and starts the
  # executors' Python workers. A failed warm-up only leaves the cluster cold: it is
  # reported, never fatal.
  warm_dir="$dir/work/warm-up"
  rm -rf "$warm_dir"
  if ! warm_out=$("$python" - "sc://127.0.0.1:$session_port" "$warm_dir" 2>&1 <<'EOF'
import __main__

__main__.__file__ = "connect-warm-up"  # see connect_ready(): not a doctest run
import sys  # noqa: E402

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

url, work = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).appName("flinkish warm-up").getOrCreate()
try:
    plus_one = F.udf(lambda value: value + 1, "long")
    spark.range(100).select(plus_one("id").alias("v")).groupBy().sum("v").collect()
    source = spark.readStream.format("rate").option("rowsPerSecond", 10).load()
    seen = source.writeStream.foreachBatch(lambda batch, batch_id: batch.count()).start()
    files = (
        source.writeStream.format("json")
        .option("path", f"{work}/out")
        .option("checkpointLocation", f"{work}/files")
        .start()
    )
    for query in (seen, files):
        query.processAllAvailable()
        query.stop()
finally:
    spark.stop()
EOF
  ); then
    echo "WARNING: the session cluster's warm-up failed, so its first job starts cold: $(echo "$warm_out" | grep -v '^[[:space:]]*$' | tail -n 1)" >&2
  fi
  rm -rf "$warm_dir"
  echo "sc://127.0.0.1:$session_port" >"$dir/connect.url"
  echo "Spark Connect server running: pid $(cat "$dir/connect.pid"), $capacity, Python workers $pyspark_python"
  if [ "$session_webui_port" != 0 ]; then
    echo "Spark Connect server web UI http://127.0.0.1:$session_webui_port"
  fi
fi

if [ $web = 1 ]; then
  # flinkish web, in a process group of its own like the daemons; it reads the configuration
  # as flinkish does (--conf-dir, FLINK_CONF_DIR, ./conf) and is told the session cluster.
  # Not fatal: a cluster without its dashboard still runs jobs (the warning says why).
  web_args=(web)
  [ -z "$rest_port" ] || web_args+=(-D "rest.bind-port=$rest_port")
  [ -z "$conf_dir" ] || web_args+=(--conf-dir "$conf_dir")
  [ $session = 0 ] || web_args+=(-D "flinkish.web.session-cluster=sc://127.0.0.1:$session_port")
  if ! "$python" -c 'import flinkish_cli.web.app' 2>/dev/null; then
    echo "WARNING: flinkish web not started: flinkish with its 'web' extra is not installed for '$python' (pip install -e '.[web]')" >&2
  else
    # shellcheck disable=SC2016  # $$, $0 and $@ belong to the inner shell
    setsid bash -c 'echo $$ > "$0"; exec nohup "$@"' "$dir/web.pid" \
      "$python" -m flinkish_cli "${web_args[@]}" >>"$dir/logs/web.out" 2>&1 </dev/null &
    web_url=""
    until [ -n "$web_url" ]; do
      web_url=$({ sed -n 's/^flinkish web: \(http:.*\)$/\1/p' "$dir/logs/web.out" || true; } 2>/dev/null | head -n 1)
      if [ -z "$web_url" ] && { [ -s "$dir/web.pid" ] && ! alive "$dir/web.pid" || [ $SECONDS -ge $deadline ]; }; then
        echo "WARNING: flinkish web did not start: $(grep -v '^[[:space:]]*$' "$dir/logs/web.out" | tail -n 1)" >&2
        rm -f "$dir/web.pid"
        break
      fi
      [ -n "$web_url" ] || sleep 0.2
    done
    if [ -n "$web_url" ]; then
      echo "$web_url" >"$dir/web.url"
      echo "flinkish web running: pid $(cat "$dir/web.pid"), $web_url (REST API, dashboard, /metrics; flinkish run -m ${web_url#http://})"
    fi
  fi
fi

echo "Logs in $dir/logs; stop with: scripts/stop-cluster.sh --dir $dir"
if [ $session = 1 ]; then
  echo "sc://127.0.0.1:$session_port"
else
  echo "spark://127.0.0.1:$master_port"
fi
