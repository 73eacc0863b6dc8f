#!/usr/bin/env bash
# Stop everything scripts/start-cluster.sh started from the same directory, like Flink's
# bin/stop-cluster.sh: flinkish web, the Spark Connect server of a session cluster (and the
# Python workers it runs), the standalone worker (and the executors it runs), the master, then
# the Kafka broker of --kafka, then the YARN of --yarn (the NodeManager stops its containers;
# any container process still running from DIR/yarn is ended after it), then the single-node
# HDFS of --hdfs or --yarn (its files stay: a start on the same directory finds them). Stopping flinkish web never touches a job.
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
  [ "$1" != hdfs ] || pattern='io\.flinkish\.hdfs\.SingleNodeHdfs'
  [ "$1" != yarn ] || pattern='io\.flinkish\.hdfs\.SingleNodeYarn'
  [ -r "/proc/$2/cmdline" ] && tr '\0' ' ' <"/proc/$2/cmdline" | grep -q "$pattern"
}

name_of() {
  case "$1" in
    connect) echo "Spark Connect server" ;;
    web) echo "flinkish web" ;;
    kafka) echo "Kafka broker" ;;
    hdfs) echo "HDFS (NameNode and DataNode)" ;;
    yarn) echo "YARN (ResourceManager and NodeManager)" ;;
    *) echo "Spark $1" ;;
  esac
}

# stop_containers: the processes left running in the NodeManager's directories of this
# cluster (a container's working directory is under DIR/yarn/local), by process group; only
# this user's processes are looked at.
stop_containers() {
  local root proc pid cwd groups=()
  root=$(cd "$dir" 2>/dev/null && pwd -P)/yarn/
  [ -d "$root" ] || return 0
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ -O "$proc" ] || continue
    cwd=$(readlink "$proc/cwd" 2>/dev/null) || continue
    [[ "$cwd/" == "$root"* ]] || continue
    groups+=("$(ps -o pgid= -p "$pid" | tr -d ' ')")
  done
  [ ${#groups[@]} -gt 0 ] || return 0
  local group
  for group in $(printf '%s\n' "${groups[@]}" | sort -u); do
    [ -n "$group" ] && [ "$group" != 0 ] || continue
    kill -KILL -- "-$group" 2>/dev/null || true
  done
  echo "Ended ${#groups[@]} container process(es) left by the YARN"
}

stopped=0
for role in web connect worker master kafka yarn hdfs; do
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
  [ "$role" != yarn ] || stop_containers
done
rm -f "$dir/connect.url" "$dir/web.url" "$dir/worker-fork.sock" "$dir/kafka.bootstrap" "$dir/hdfs.url" \
  "$dir/yarn.conf"
[ $stopped -gt 0 ] || echo "No Spark cluster running from $dir"
