"""The orders pipeline, Kafka to Kafka, on Apache Flink (PyFlink's Table API, Flink SQL):
the benchmark's Apache Flink counterpart of ``jobs/orders_kafka.py``.

The same transformation (``total_price > 100``, ``upper(order_status)``,
``price_with_tax = round(total_price * 1.2, 2)``), the same input (the JSON values of
``scripts/generate_events.py --kind orders``) and the same output (keyed by ``order_id``, the
JSON of the order's fields), with Flink's Kafka SQL connector (its jar given with
``--connector-jar``) and its sink at-least-once, as flinkish's default. Run with
``flink run -d -py``; the job is submitted and this program returns.

Arguments: --bootstrap-servers --source-topic --sink-topic --connector-jar --parallelism
--checkpoint-interval (Flink's duration, e.g. "500 ms"), --stop-at (the source's end offsets,
``partition:0,offset:N;...``: the job reads up to them and finishes).
"""

import argparse

from pyflink.table import EnvironmentSettings, TableEnvironment

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap-servers", required=True)
parser.add_argument("--source-topic", required=True)
parser.add_argument("--sink-topic", required=True)
parser.add_argument("--connector-jar", required=True)
parser.add_argument("--parallelism", type=int, default=1)
parser.add_argument("--checkpoint-interval", default="500 ms")
parser.add_argument("--stop-at", default="", help="partition:P,offset:O;... (bounded)")
args = parser.parse_args()
# A backlog's run reads it up to its end offsets (Flink's scan.bounded.mode): what came into
# the topic after the backlog is left out, and the job finishes when it has read it.
bounded = ""
if args.stop_at:
    bounded = ", 'scan.bounded.mode' = 'specific-offsets'"
    bounded += f", 'scan.bounded.specific-offsets' = '{args.stop_at}'"

env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
config = env.get_config()
config.set("pipeline.jars", f"file://{args.connector_jar}")
config.set("pipeline.name", f"orders-kafka-{args.sink_topic}")
config.set("parallelism.default", str(args.parallelism))
config.set("execution.checkpointing.interval", args.checkpoint_interval)

servers = args.bootstrap_servers
env.execute_sql(
    f"""
    CREATE TABLE orders (
        order_id STRING, customer_id STRING, order_status STRING, total_price DOUBLE,
        order_time STRING
    ) WITH (
        'connector' = 'kafka', 'topic' = '{args.source_topic}',
        'properties.bootstrap.servers' = '{servers}',
        'properties.group.id' = 'flink-{args.sink_topic}',
        'scan.startup.mode' = 'earliest-offset', 'format' = 'json'{bounded}
    )"""
)
env.execute_sql(
    f"""
    CREATE TABLE large_orders (
        order_id STRING, customer_id STRING, order_status STRING, total_price DOUBLE,
        price_with_tax DOUBLE, order_time STRING
    ) WITH (
        'connector' = 'kafka', 'topic' = '{args.sink_topic}',
        'properties.bootstrap.servers' = '{servers}',
        'key.format' = 'raw', 'key.fields' = 'order_id',
        'value.format' = 'json', 'value.fields-include' = 'ALL',
        'sink.delivery-guarantee' = 'at-least-once'
    )"""
)
env.execute_sql(
    """
    INSERT INTO large_orders
    SELECT order_id, customer_id, UPPER(order_status), total_price,
           ROUND(total_price * 1.2, 2), order_time
    FROM orders WHERE total_price > 100"""
)
