"""pyspark's py4j converters of NumPy values, asked without importing NumPy or pandas.

Importing ``pyspark.sql`` registers py4j input converters that py4j asks about every argument
of every call into the JVM. Two of them, ``NumpyScalarConverter`` and
``NumpyArrayConverter``, learn whether NumPy is installed by importing
``pyspark.testing.utils``, which imports pandas (and checks pyarrow, grpc and more) as it
loads: the first call into the JVM with an argument (a driver's ``SparkConf()``) spent about
half a second of CPU importing pandas, in every driver, for jobs that never use it.

A NumPy value exists only once NumPy is imported, so :func:`patch` gives each class a
``can_convert`` that looks in ``sys.modules`` first and answers as pyspark's would: one patch
point per class, ``can_convert`` alone, applied by a classic driver
(:func:`flinkish_cli.runtime.driver.driver.main`) and the CLI's local sessions
(:func:`flinkish_cli.spark.local.local_session`) before their first call into the JVM.
Spark Connect has no py4j, and no such converters.
"""

from __future__ import annotations

import sys
from typing import Any


def _scalar(self: Any, obj: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(obj, numpy.generic)


def _array(self: Any, obj: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(obj, numpy.ndarray) and obj.ndim == 1


def patch() -> None:
    """Give pyspark's two NumPy converters their import-free ``can_convert`` (idempotent)."""
    from pyspark.sql import types

    types.NumpyScalarConverter.can_convert = _scalar  # type: ignore[method-assign]
    types.NumpyArrayConverter.can_convert = _array  # type: ignore[method-assign]
