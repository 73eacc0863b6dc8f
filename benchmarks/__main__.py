"""``python -m benchmarks``: run the benchmark (see :mod:`benchmarks.main`)."""

from __future__ import annotations

import sys

from benchmarks.main import main

sys.exit(main())
