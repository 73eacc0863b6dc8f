"""Fixtures of the scripts' tests: the generator on the import path, the cluster fixture."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SCRIPTS_DIR))

# The session cluster fixture, for the scripts' own tests (tests/conftest.py registers the
# suite-wide fixtures; this import makes ``connect_server`` visible here either way).
from tests.fixtures.connect_server import connect_server as connect_server  # noqa: E402
