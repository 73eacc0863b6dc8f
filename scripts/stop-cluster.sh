#!/usr/bin/env bash
# Stop everything scripts/start-cluster.sh started from the same directory, like Flink's
# bin/stop-cluster.sh: flinkish web, the Spark Connect server of a session cluster (and the
# Python workers it runs), the standalone worker (and the executors it runs), the master, then
# the Kafka broker of --kafka.
# Stopping flinkish web never touches a job.
#
# Each daemon runs in a process group of its own whose id is the pid in its pid file; the
# whole group gets SIGTERM, then SIGKILL if it is still there after the timeout. Safe to run
# again: without pid files it does nothing.
#
#   --dir DIR          FLINKISH_CLUSTER_DIR        /tmp/flinkish-cluster
#   --timeout SECONDS  FLINKISH_STOP_TIMEOUT       20
set -euo pipefail

dir=${FLINKISH_CLUSTER_DIR:-/tmp/flinkish-cluster}
timeout=${FLINKISH_STOP_TIMEOUT:-20}
while [ $# -gt 0 ]; do
  case "$1" in
    --dir | --timeout)
      if [ $# -lt 2 ]; then
        echo "ERROR: option '$1' needs a value (see --help)" >&2
        exit 1
      fi
      if [ "$1" = --dir ]; then dir=$2; else timeout=$2; fi
      shift 2
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ERROR: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ "$timeout" =~ ^[0-9]+$ ]] || { echo "ERROR: timeout '$timeout' is not a number" >&2; exit 1; }

group_alive() {
  kill -0 -- "-$1" 2>/dev/null
}

is_ours() {  # is_ours ROLE PID: PID is that daemon (guards against a recycled pid)
  local pattern='org\.apache\.spark\.deploy\.'
  [ "$1" != web ] || pattern='flinkish_cli web'
  [ "$1" != kafka ] || pattern='kafka\.Kafka '
  [ -r "/proc/$2/cmdline" ] && tr '\0' ' ' <"/proc/$2/cmdline" | grep -q "$pattern"
}

name_of() {
  case "$1" in
    connect) echo "Spark Connect server" ;;
    web) echo "flinkish web" ;;
    kafka) echo "Kafka broker" ;;
    *) echo "Spark $1" ;;
  esac
}

stopped=0
for role in web connect worker master kafka; do
  pidfile="$dir/$role.pid"
  [ -f "$pidfile" ] || continue
  name=$(name_of "$role")
  pid=$(cat "$pidfile")
  if ! [[ "$pid" =~ ^[0-9]+$ ]]; then
    rm -f "$pidfile"
    continue
  fi
  if kill -0 "$pid" 2>/dev/null && ! is_ours "$role" "$pid"; then
    echo "pid $pid in $pidfile is not a $name any more; not touching it"
    rm -f "$pidfile"
    continue
  fi
  if group_alive "$pid"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    deadline=$((SECONDS + timeout))
    while group_alive "$pid" && [ $SECONDS -lt $deadline ]; do
      sleep 0.2
    done
    if group_alive "$pid"; then
      echo "$name (pid $pid) did not stop within ${timeout}s: killing it"
      kill -KILL -- "-$pid" 2>/dev/null || true
      while group_alive "$pid"; do
        sleep 0.1
      done
    fi
    echo "Stopped the $name (pid $pid)"
    stopped=$((stopped + 1))
  fi
  rm -f "$pidfile"
done
rm -f "$dir/connect.url" "$dir/web.url" "$dir/worker-fork.sock" "$dir/kafka.bootstrap"
[ $stopped -gt 0 ] || echo "No Spark cluster running from $dir"
