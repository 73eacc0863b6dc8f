"""pyspark's py4j converters of NumPy values after flinkish's patch: the same answers, and no
pandas imported to give them (a fresh interpreter each, as a driver starts)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from pyspark.sql import types
{patch}
from py4j.protocol import INPUT_CONVERTER
numpy_converters = [c for c in INPUT_CONVERTER if type(c).__name__.startswith("Numpy")]
plain = [any(c.can_convert(v) for c in numpy_converters) for v in (1, 2.5, "a", [1, 2])]
before = sorted(m for m in ("pandas", "numpy", "pyspark.testing") if m in sys.modules)
import numpy as np
values = (np.int64(3), np.float32(1.5), np.array([1, 2]), np.array([[1], [2]]), 7)
found = [[type(c).__name__ for c in numpy_converters if c.can_convert(v)] for v in values]
print(json.dumps({{"plain": plain, "imported": before, "numpy": found}}))
"""


def _probe(patch: str) -> dict:
    code = PROBE.format(patch=patch)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_numpy_converters_answer_as_pysparks_without_importing_pandas() -> None:
    patched = _probe("from flinkish_cli.spark import converters; converters.patch()")
    original = _probe("")
    assert patched["plain"] == original["plain"] == [False, False, False, False]
    assert patched["imported"] == []  # nothing imported to answer "no"
    assert "pandas" in original["imported"]  # pyspark's own answer imported pandas
    assert (
        patched["numpy"]
        == original["numpy"]
        == [
            ["NumpyScalarConverter"],
            ["NumpyScalarConverter"],
            ["NumpyArrayConverter"],
            [],  # two dimensions: py4j's list converters' business
            [],
        ]
    )
