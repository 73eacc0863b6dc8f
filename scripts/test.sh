#!/usr/bin/env bash
# Install everything and run the whole test suite (what CI runs): lint, the import layers
# (pyproject.toml's [tool.importlinter] contracts), the type checker ([tool.mypy]), the
# documentation site, then pytest.
# FLINKISH_SOAK_ROUNDS runs the suite's long form (tests/fixtures/long_form.py) with that many
# rounds of the kill tests; CI runs the gate, without it.
# FLINKISH_TEST_WORKERS sets pytest-xdist's workers (default 2: one per core here; three kept
# the cores busy but took 26 min against 23: much of a test's CPU grows with its wall time,
# its jobs' and the polls'; a test module always runs whole on one worker, so its module
# fixtures start once, and the modules of the shared Connect server and standalone cluster
# share one worker; the groups go out longest first: tests/conftest.py; 0 runs serially).
# FLINKISH_TEST_CPU=FILE writes each test's CPU-seconds, every process it starts included, to
# FILE.<worker> (root only: tests/fixtures/cpu_accounting.py).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
.venv/bin/ruff check flinkish_cli tests jobs scripts benchmarks
.venv/bin/ruff format --check flinkish_cli tests jobs scripts benchmarks
.venv/bin/lint-imports --no-logo --no-cache
# The type checker, over the packages pyproject.toml's [tool.mypy] lists.
.venv/bin/mypy
# The documentation site (mkdocs.yml), built strictly: a broken link, anchor, include or image
# fails; into a temporary directory, never committed.
site=$(mktemp -d)
# (Not --quiet: MkDocs 1.6 then exits 0 on the warnings that --strict turns into a failure.)
if ! NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$site" >"$site.log" 2>&1; then
  grep -v "^INFO" "$site.log" >&2
  rm -rf "$site" "$site.log"
  exit 1
fi
rm -rf "$site" "$site.log"
workers=${FLINKISH_TEST_WORKERS:-2}
if [ "$workers" = 0 ]; then
  exec .venv/bin/pytest "$@"
fi
exec .venv/bin/pytest -n "$workers" --dist loadgroup --no-loadscope-reorder --durations=15 "$@"
