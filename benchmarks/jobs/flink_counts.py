"""Benchmark job for Apache Flink itself (PyFlink Table API): a running count per account.

The Flink counterpart of the ``counts`` query of ``jobs/counts_per_key.py``, for ``flink run
-d -py`` against a local Flink session cluster (section 8 of the benchmark): a directory of
JSON-lines transactions, watched for new files, counted per ``account_id`` into a blackhole
sink (the figures measured are submission and start-up, not output). The program submits the
job and returns, as a detached Flink job does. It runs until cancelled.

Arguments:
    --input DIR     JSON lines with ``transaction_id``, ``account_id`` (strings), ``amount``
    --monitor S     seconds between two looks for new files (default 2)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pyflink.table import EnvironmentSettings, TableEnvironment


def main(argv: Sequence[str] | None = None) -> None:
    """Declare the source and the sink, and submit the counting job."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--monitor", type=int, default=2)
    args = parser.parse_args(argv)
    path = args.input.replace("'", "''")

    tables = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    tables.get_config().set("pipeline.name", "bench-flink-counts")
    tables.execute_sql(
        "CREATE TABLE transactions (transaction_id STRING, account_id STRING, amount DOUBLE) "
        f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json', "
        f"'source.monitor-interval' = '{args.monitor}s')"
    )
    tables.execute_sql(
        "CREATE TABLE counts (account_id STRING, total BIGINT) WITH ('connector' = 'blackhole')"
    )
    tables.execute_sql(
        "INSERT INTO counts SELECT account_id, COUNT(*) FROM transactions GROUP BY account_id"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
