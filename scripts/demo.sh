#!/usr/bin/env bash
# The README's first command: set up, write a backlog of orders, run the orders example on
# embedded local Spark with the default configuration (conf/flink-conf.yaml), show the result.
# The job runs in BATCH mode: it processes the backlog, finishes, and exits 0.
#
#   --kafka             the orders pipeline from Kafka to Kafka instead (jobs/orders_kafka.py):
#                       starts a Kafka broker (scripts/start-cluster.sh --kafka, on free ports),
#                       produces orders, runs the job, stops it with a savepoint, produces more,
#                       resumes it from the savepoint, prints what a read_committed consumer
#                       read from the sink topic, and stops the broker (Maven is needed once)
#   FLINKISH_DEMO_DIR   where the input and the output go (default ./data/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
./scripts/setup.sh

data=${FLINKISH_DEMO_DIR:-./data/demo}
if [ "${1:-}" = "--kafka" ]; then
  exec ./scripts/demo_kafka.sh "$data"
fi
rm -rf "$data"
.venv/bin/python scripts/generate_events.py --kind orders --out "$data/orders" \
  --files 6 --events-per-file 50 --rate 0 --seed 7 --quiet

export FLINK_CONF_DIR="$PWD/conf"
.venv/bin/flinkish run -D execution.runtime-mode=BATCH jobs/orders.py --data "$data" \
  --max-files-per-trigger 2

echo
# No pipe into head: under pipefail, head closing the pipe early makes cat exit 141.
total=$(cat "$data"/orders/*.json | wc -l)
kept=$(cat "$data"/out/orders/part-* | wc -l)
echo "Orders read: $total; orders over 100 written to $data/out/orders: $kept. The first three:"
awk 'NR <= 3' "$data"/out/orders/part-*
