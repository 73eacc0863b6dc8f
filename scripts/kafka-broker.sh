#!/usr/bin/env bash
# Start a single-node Apache Kafka broker in KRaft mode (broker and controller in one JVM),
# from Maven's jars, bound to and advertising 127.0.0.1 only. What
# 'scripts/start-cluster.sh --kafka' runs; stop it with scripts/stop-cluster.sh (same --dir).
# Its last line is 'bootstrap.servers: 127.0.0.1:PORT' (also written to DIR/kafka.bootstrap).
#
# The jars: Kafka's broker and tools (scripts/maven/kafka/pom.xml), resolved once with the
# machine's mvn (its mirrors, proxies and credentials) into flinkish's jar cache; offline after.
# The log directory DIR/kafka/data is formatted on the first start and kept across restarts.
#
# Options (flag, or environment variable, default):
#   --dir DIR                   FLINKISH_CLUSTER_DIR            /tmp/flinkish-cluster
#   --kafka-port P              FLINKISH_KAFKA_PORT             9092 (the clients' listener)
#   --kafka-controller-port P   FLINKISH_KAFKA_CONTROLLER_PORT  9093 (KRaft's controller)
#   --timeout SECONDS           FLINKISH_CLUSTER_TIMEOUT        90
#   --kafka-conf K=V            repeatable: a line of the broker's server.properties (it wins),
#                               e.g. num.partitions=4, log.retention.ms=60000
#   FLINKISH_KAFKA_HEAP         the broker's heap  512m
#   PYTHON                      the python with flinkish (resolves the jars)  python3
set -euo pipefail

die() {
  echo "ERROR: $*" >&2
  exit 1
}

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FLINKISH_CLUSTER_DIR:-/tmp/flinkish-cluster}
port=${FLINKISH_KAFKA_PORT:-9092}
controller_port=${FLINKISH_KAFKA_CONTROLLER_PORT:-9093}
timeout=${FLINKISH_CLUSTER_TIMEOUT:-90}
heap=${FLINKISH_KAFKA_HEAP:-512m}
python=${PYTHON:-python3}
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir | --kafka-port | --kafka-controller-port | --timeout | --kafka-conf)
      [ $# -ge 2 ] || die "option '$1' needs a value (see --help)"
      case "$1" in
        --dir) dir=$2 ;;
        --kafka-port) port=$2 ;;
        --kafka-controller-port) controller_port=$2 ;;
        --timeout) timeout=$2 ;;
        --kafka-conf)
          [[ "$2" =~ ^[a-z][a-z0-9._-]*=.* ]] || die "--kafka-conf '$2' is not like key=value"
          extra+=("$2")
          ;;
      esac
      shift 2
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for value in "$port" "$controller_port" "$timeout"; do
  [[ "$value" =~ ^[0-9]+$ ]] || die "'$value' is not a number (ports and timeout are numbers)"
done
for value in "$port" "$controller_port"; do
  { [ "$value" -ge 1 ] && [ "$value" -le 65535 ]; } || die "$value is not a port (1 to 65535)"
done
[ "$port" != "$controller_port" ] || die "the Kafka port and its controller port must differ"
[[ "$heap" =~ ^[0-9]+[kKmMgG]$ ]] || die "FLINKISH_KAFKA_HEAP '$heap' is not like 512m or 1g"

java_bin=java
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  java_bin="$JAVA_HOME/bin/java"
fi
command -v "$java_bin" >/dev/null 2>&1 ||
  die "Java not found: install Java 17 (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME."

mkdir -p "$dir/logs" "$dir/kafka"
dir=$(cd "$dir" && pwd)
pidfile="$dir/kafka.pid"
if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  die "a Kafka broker started from $dir is already running (pid $(cat "$pidfile")); stop it with: scripts/stop-cluster.sh --dir $dir"
fi
rm -f "$pidfile" "$dir/kafka.bootstrap"

for value in "$port" "$controller_port"; do
  if ! "$python" "$root/scripts/port_free.py" "$value"; then
    die "port $value on 127.0.0.1 is in use: choose other ports (--kafka-port, --kafka-controller-port) or stop what uses it"
  fi
done

# The jars, from the cache (flinkish_cli/spark/maven.py), else resolved with mvn once.
if ! classpath=$(PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$python" -m flinkish_cli.spark.maven \
  --pom "$root/scripts/maven/kafka/pom.xml"); then
  die "the Kafka broker's jars could not be resolved (above); Maven is needed once: apt-get install maven"
fi

config="$dir/kafka/server.properties"
{
  echo "# Written by flinkish's scripts/kafka-broker.sh: a single-node KRaft broker on 127.0.0.1."
  echo "process.roles=broker,controller"
  echo "node.id=1"
  echo "controller.quorum.voters=1@127.0.0.1:$controller_port"
  echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
  echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=PLAINTEXT"
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  echo "log.dirs=$dir/kafka/data"
  # One broker: every internal topic (consumer offsets, transactions) has one replica.
  echo "offsets.topic.replication.factor=1"
  echo "transaction.state.log.replication.factor=1"
  echo "transaction.state.log.min.isr=1"
  echo "share.coordinator.state.topic.replication.factor=1"
  echo "share.coordinator.state.topic.min.isr=1"
  echo "group.initial.rebalance.delay.ms=0"
  for line in ${extra[@]+"${extra[@]}"}; do echo "$line"; done
} >"$config"
cat >"$dir/kafka/log4j2.properties" <<LOG4J
# Written by flinkish's scripts/kafka-broker.sh: the broker's log rolls by size.
rootLogger.level = info
rootLogger.appenderRef.rolling.ref = rolling
appender.rolling.type = RollingFile
appender.rolling.name = rolling
appender.rolling.fileName = $dir/logs/kafka.log
appender.rolling.filePattern = $dir/logs/kafka.log.%i
appender.rolling.layout.type = PatternLayout
appender.rolling.layout.pattern = [%d] %p %m (%c)%n
appender.rolling.policies.type = Policies
appender.rolling.policies.size.type = SizeBasedTriggeringPolicy
appender.rolling.policies.size.size = 100MB
appender.rolling.strategy.type = DefaultRolloverStrategy
appender.rolling.strategy.max = 5
LOG4J
# IPv4 only: the broker's sockets are 127.0.0.1's (not IPv4-mapped IPv6 ones).
jvm=("$java_bin" "-Xmx$heap" "-Xms$heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true
  -Djava.awt.headless=true "-Dlog4j2.configurationFile=$dir/kafka/log4j2.properties"
  -cp "$classpath")

cluster_id() {  # a random cluster id as Kafka writes one (kafka-storage random-uuid)
  "$python" -c '
import base64, os
while True:
    text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not text.startswith("-"):
        print(text)
        break
'
}
if [ ! -s "$dir/kafka/data/meta.properties" ]; then
  if ! out=$("${jvm[@]}" kafka.tools.StorageTool format --ignore-formatted \
    --cluster-id "$(cluster_id)" --config "$config" 2>&1); then
    die "formatting the Kafka log directory $dir/kafka/data failed: $(tail -n 1 <<<"$out")"
  fi
fi

# The log of earlier runs is kept: this start is ready when a line after them says so.
logged=$(wc -l <"$dir/logs/kafka.log" 2>/dev/null || echo 0)
# shellcheck disable=SC2016  # $$, $0 and $@ belong to the inner shell
setsid bash -c 'echo $$ > "$0"; exec nohup "$@"' "$pidfile" \
  "${jvm[@]}" kafka.Kafka "$config" >"$dir/logs/kafka.out" 2>&1 </dev/null &
waited=0
until [ -s "$pidfile" ]; do
  sleep 0.1
  waited=$((waited + 1))
  [ $waited -lt 100 ] || die "the Kafka broker did not start"
done
deadline=$((SECONDS + timeout))
until tail -n "+$((logged + 1))" "$dir/logs/kafka.log" 2>/dev/null | grep -q 'Kafka Server started'; do
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    for file in "$dir/logs/kafka.out" "$dir/logs/kafka.log"; do
      [ -s "$file" ] && { echo "--- last lines of $file:" >&2; grep -v $'^\tat ' "$file" | tail -n 15 >&2; }
    done
    rm -f "$pidfile"
    die "the Kafka broker exited during startup (see above)"
  fi
  if [ $SECONDS -ge $deadline ]; then
    kill -KILL -- "-$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    die "the Kafka broker did not start within ${timeout}s (see $dir/logs/kafka.log)"
  fi
  sleep 0.3
done
echo "127.0.0.1:$port" >"$dir/kafka.bootstrap"
echo "Kafka broker running: pid $(cat "$pidfile"), KRaft, log directory $dir/kafka/data, log $dir/logs/kafka.log"
echo "Stop with: scripts/stop-cluster.sh --dir $dir"
echo "bootstrap.servers: 127.0.0.1:$port"
