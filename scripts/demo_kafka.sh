#!/usr/bin/env bash
# scripts/demo.sh --kafka: the orders pipeline from Kafka to Kafka, end to end (after setup).
#   scripts/demo_kafka.sh DATA_DIR
# Starts a Kafka broker on free 127.0.0.1 ports, produces orders, runs jobs/orders_kafka.py,
# stops it with a savepoint, produces more orders, resumes it from the savepoint, prints what
# a read_committed consumer read from the sink topic, and stops the broker (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(mkdir -p "${1:?the demo directory}" && cd "$1" && pwd)
rm -rf "$data/kafka"
mkdir -p "$data/kafka"
cluster="$data/kafka/cluster"
# The repository's configuration, with the demo's checkpoints and Kafka's connector.
mkdir -p "$data/kafka/conf"
grep -v -e '^execution.checkpointing.dir:' -e '^execution.checkpointing.savepoint-dir:' \
  conf/flink-conf.yaml >"$data/kafka/conf/flink-conf.yaml"
printf '%s\n' "execution.checkpointing.dir: file://$data/kafka/checkpoints" \
  "execution.checkpointing.savepoint-dir: file://$data/kafka/savepoints" \
  "flinkish.connectors: kafka" >>"$data/kafka/conf/flink-conf.yaml"
export FLINK_CONF_DIR="$data/kafka/conf"
flinkish=.venv/bin/flinkish
job=""

finish() {
  status=$?
  if [ -n "$job" ]; then "$flinkish" cancel "$job" >/dev/null 2>&1 || true; fi
  scripts/stop-cluster.sh --dir "$cluster" >/dev/null 2>&1 || true
  exit $status
}
trap finish EXIT

read -r port controller < <(.venv/bin/python -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))
for s in sockets:
    s.close()')
scripts/start-cluster.sh --kafka --dir "$cluster" --kafka-port "$port" \
  --kafka-controller-port "$controller" --kafka-conf auto.create.topics.enable=false | tail -1
broker="127.0.0.1:$port"

classpath=$(.venv/bin/python -m flinkish_cli.spark.maven --pom scripts/maven/kafka/pom.xml)
kafka() { java -cp "$classpath" "$@" 2>>"$data/kafka/tools.log"; }
for topic in orders large-orders; do
  kafka org.apache.kafka.tools.TopicCommand --bootstrap-server "$broker" --create \
    --topic "$topic" --partitions 2 --replication-factor 1 >/dev/null
done

.venv/bin/python scripts/generate_events.py --kind orders --out "$data/kafka/orders" \
  --files 2 --events-per-file 100 --rate 0 --seed 7 --quiet
files=("$data"/kafka/orders/*.json)
produce() { kafka org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$broker" \
  --topic orders <"$1"; }
large() { cat "$@" | .venv/bin/python -c '
import json, sys
print(sum(json.loads(line)["total_price"] > 100 for line in sys.stdin if line.strip()))'; }
# Waits until a read_committed consumer has read $1 records of the sink topic; prints them.
consume() { kafka org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$broker" \
  --topic large-orders --from-beginning --max-messages "$1" --timeout-ms 300000 \
  --consumer-property isolation.level=read_committed --property print.key=true \
  --property key.separator=' ' >"$data/kafka/read.txt"; }

args=(jobs/orders_kafka.py --bootstrap-servers "$broker")
produce "${files[0]}"
first=$(large "${files[0]}")
echo "Produced $(wc -l <"${files[0]}") orders to 'orders' ($first over 100); running the job."
job=$("$flinkish" run -d "${args[@]}" | awk '/submitted with JobID/ {print $NF}')
consume "$first"
stopped=$("$flinkish" stop "$job")
job=""
savepoint=$(echo "$stopped" | sed -n 's/^Savepoint completed. Path: //p')
echo "Stopped with a savepoint: $savepoint"

produce "${files[1]}"
total=$(large "${files[@]}")
echo "Produced $(wc -l <"${files[1]}") more orders while the job was stopped; resuming it."
job=$("$flinkish" run -d -s "$savepoint" "${args[@]}" |
  awk '/submitted with JobID/ {print $NF}')
consume "$total"
"$flinkish" cancel "$job" >/dev/null
job=""

read_records=$(wc -l <"$data/kafka/read.txt")
keys=$(cut -d' ' -f1 "$data/kafka/read.txt" | sort -u | wc -l)
echo
echo "A read_committed consumer read $read_records records from 'large-orders'" \
  "($keys distinct orders; $total orders were over 100). The first three:"
awk 'NR <= 3' "$data/kafka/read.txt"
[ "$keys" -eq "$total" ]
