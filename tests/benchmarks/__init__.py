"""The benchmark (benchmarks/): its quick version end to end, and its result model."""
