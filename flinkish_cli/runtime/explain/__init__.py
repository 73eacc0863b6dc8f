"""A query's plan as Spark explains it, and the graph flinkish builds from it.

- :mod:`.spark_plan`     Spark's physical plan as its explain text tells it (no Spark).
- :mod:`.graph_builder`  a query's graph from its plan and progress, in both flavours.
- :mod:`.graphs`         the graph of each query, recorded when it starts a new run.
"""
