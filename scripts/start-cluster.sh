#!/usr/bin/env bash
# Start a Spark standalone cluster on this machine -- one master and one worker, bound to
# 127.0.0.1 -- from the pyspark installed for $PYTHON, like Flink's bin/start-cluster.sh.
# Prints the master URL (spark://127.0.0.1:PORT) on its last line; stop it with
# scripts/stop-cluster.sh (same FLINKISH_CLUSTER_DIR).
#
# Options (flag, or environment variable, default):
#   --dir DIR                FLINKISH_CLUSTER_DIR         /tmp/flinkish-cluster (pids, logs, work)
#   --master-port P          FLINKISH_MASTER_PORT         7077
#   --master-webui-port P    FLINKISH_MASTER_WEBUI_PORT   8080
#   --worker-port P          FLINKISH_WORKER_PORT         0 (any free port)
#   --worker-webui-port P    FLINKISH_WORKER_WEBUI_PORT   8081
#   --cores N                FLINKISH_WORKER_CORES        2
#   --memory M               FLINKISH_WORKER_MEMORY       2g
#   --timeout SECONDS        FLINKISH_CLUSTER_TIMEOUT     90 (wait for the worker to be ALIVE)
#   PYTHON                   python whose pyspark to use  python3
# Java 17+ is needed (JAVA_HOME or java on the PATH).
set -euo pipefail

die() {
  echo "ERROR: $*" >&2
  exit 1
}

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

dir=${FLINKISH_CLUSTER_DIR:-/tmp/flinkish-cluster}
master_port=${FLINKISH_MASTER_PORT:-7077}
master_webui_port=${FLINKISH_MASTER_WEBUI_PORT:-8080}
worker_port=${FLINKISH_WORKER_PORT:-0}
worker_webui_port=${FLINKISH_WORKER_WEBUI_PORT:-8081}
cores=${FLINKISH_WORKER_CORES:-2}
memory=${FLINKISH_WORKER_MEMORY:-2g}
timeout=${FLINKISH_CLUSTER_TIMEOUT:-90}
python=${PYTHON:-python3}

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --master-port) master_port=$2; shift 2 ;;
    --master-webui-port) master_webui_port=$2; shift 2 ;;
    --worker-port) worker_port=$2; shift 2 ;;
    --worker-webui-port) worker_webui_port=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

for value in "$master_port" "$master_webui_port" "$worker_port" "$worker_webui_port" "$cores" "$timeout"; do
  [[ "$value" =~ ^[0-9]+$ ]] || die "'$value' is not a number (ports, cores and timeout are numbers)"
done
[[ "$memory" =~ ^[0-9]+[kKmMgGtT]?$ ]] || die "worker memory '$memory' is not like 512m or 2g"

if ! spark_home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null); then
  die "pyspark not found for '$python': install it, or set PYTHON=/path/to/venv/bin/python."
fi
[ -x "$spark_home/bin/spark-class" ] || die "$spark_home/bin/spark-class not found (is pyspark complete?)"

mkdir -p "$dir/logs" "$dir/work"
dir=$(cd "$dir" && pwd)

alive() {  # alive PIDFILE: the process named in PIDFILE runs
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}
for role in master worker; do
  if alive "$dir/$role.pid"; then
    die "a Spark $role started from $dir is already running (pid $(cat "$dir/$role.pid")); stop it with: FLINKISH_CLUSTER_DIR=$dir scripts/stop-cluster.sh"
  fi
  rm -f "$dir/$role.pid"
done

for port in "$master_port" "$master_webui_port" "$worker_port" "$worker_webui_port"; do
  [ "$port" = 0 ] && continue
  if ! "$python" -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
' "$port"; then
    die "port $port on 127.0.0.1 is in use: choose other ports (see --help) or stop what uses it"
  fi
done

export SPARK_HOME="$spark_home"
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOG_DIR="$dir/logs"
export SPARK_WORKER_DIR="$dir/work"
# Fail instead of silently moving to the next port when one is taken.
# No REST submission server (fixed port 6066, unused by flinkish): two clusters can coexist.
export SPARK_MASTER_OPTS="${SPARK_MASTER_OPTS:-} -Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false"
export SPARK_WORKER_OPTS="${SPARK_WORKER_OPTS:-} -Dspark.port.maxRetries=0"

# launch ROLE CLASS ARGS...: run CLASS in a session of its own (so that stop-cluster.sh can
# signal the process and its children, e.g. executors, as one group); the process writes its
# own pid, which is also its process group id.
launch() {
  local role=$1
  shift
  setsid bash -c 'echo $$ > "$0"; exec nohup "$@"' "$dir/$role.pid" \
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
    if [ -f "$dir/logs/$role.out" ]; then
      echo "--- last lines of $dir/logs/$role.out:" >&2
      tail -n 20 "$dir/logs/$role.out" >&2
    fi
  done
  FLINKISH_CLUSTER_DIR="$dir" "$(dirname "$0")/stop-cluster.sh" >/dev/null 2>&1 || true
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

launch master org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$master_port" --webui-port "$master_webui_port"
started+=(master)
deadline=$((SECONDS + timeout))
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
echo "Logs in $dir/logs; stop with: FLINKISH_CLUSTER_DIR=$dir scripts/stop-cluster.sh"
echo "spark://127.0.0.1:$master_port"
