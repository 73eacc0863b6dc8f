"""Plain-Python business rules of the orders pipeline.

``normalize_status`` runs on the executors inside a Python UDF: the executors import this
module from the job's directory that flinkish ships with the job (``--py-files``). Keep this
module free of pyspark imports.
"""

from __future__ import annotations

TAX_RATE = 1.2
MIN_TOTAL = 100.0


def normalize_status(status: str | None) -> str | None:
    """An order status in canonical form: surrounding blanks removed, upper case."""
    if status is None:
        return None
    return status.strip().upper()
