"""Schemas of the example jobs' inputs (the files written by ``scripts/generate_events.py``).

File sources need an explicit schema in a streaming query; timestamps are ISO-8601 strings
in the files (``2025-01-01T00:00:00.500Z``), parsed by Spark's JSON source.
"""

from __future__ import annotations

from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

ORDER_SCHEMA = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer_id", StringType()),
        StructField("order_status", StringType()),
        StructField("total_price", DoubleType()),
        StructField("order_time", TimestampType()),
    ]
)

TRANSACTION_SCHEMA = StructType(
    [
        StructField("transaction_id", StringType()),
        StructField("account_id", StringType()),
        StructField("customer_id", StringType()),
        StructField("amount", DoubleType()),
        StructField("event_time", TimestampType()),
        StructField("type", StringType()),
    ]
)

CUSTOMER_SCHEMA = StructType(
    [
        StructField("customer_id", StringType()),
        StructField("name", StringType()),
        StructField("country", StringType()),
        StructField("segment", StringType()),
    ]
)

ACCOUNT_SCHEMA = StructType(
    [
        StructField("account_id", StringType()),
        StructField("customer_id", StringType()),
        StructField("account_type", StringType()),
        StructField("currency", StringType()),
    ]
)
