#!/usr/bin/env bash
# Install everything and run the whole test suite (what CI runs): lint, then pytest.
# FLINKISH_SOAK_ROUNDS sets the rounds of the kill tests (CI keeps the short default).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
.venv/bin/ruff check flinkish_cli tests jobs scripts benchmarks
.venv/bin/ruff format --check flinkish_cli tests jobs scripts benchmarks
exec .venv/bin/pytest "$@"
