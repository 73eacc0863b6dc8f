"""Benchmark job: start a SparkSession and stop it (what a JVM and SparkContext cost)."""

from __future__ import annotations

from pyspark.sql import SparkSession

if __name__ == "__main__":
    SparkSession.builder.appName("bench-empty-session").getOrCreate().stop()
