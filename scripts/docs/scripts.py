"""``docs/reference/scripts.md``: the options of the repository's scripts, as each prints
them with ``--help`` (run here with a fixed width, so the page does not depend on a
terminal)."""

from __future__ import annotations

import os
import subprocess
import sys

from scripts.docs.common import ROOT, header

PAGE = "reference/scripts.md"

_INTRO = """
The scripts in `scripts/` of a clone, with the options each prints with `--help`. They run
from any directory; each works on the clone it is in.
"""

#: (script, what it is for, the command that prints its help), in the page's order
SCRIPTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("scripts/setup.sh", "Set up `.venv`.", ("scripts/setup.sh", "--help")),
    ("scripts/demo.sh", "The demo: set up, then a first job.", ("scripts/demo.sh", "--help")),
    (
        "scripts/start-cluster.sh",
        "Start a Spark standalone cluster or a session cluster, and flinkish web.",
        ("scripts/start-cluster.sh", "--help"),
    ),
    (
        "scripts/stop-cluster.sh",
        "Stop what `start-cluster.sh` started.",
        ("scripts/stop-cluster.sh", "--help"),
    ),
    (
        "scripts/generate_events.py",
        "Write input for the example jobs.",
        ("{python}", "scripts/generate_events.py", "--help"),
    ),
    ("scripts/bench", "The benchmark.", ("scripts/bench", "--help")),
    ("scripts/soak", "The soak: one job for hours.", ("scripts/soak", "--help")),
    ("scripts/autoscale", "The autoscaler under a step in load.", ("scripts/autoscale", "--help")),
    (
        "scripts/screenshots.py",
        "The documentation's pictures, from real jobs.",
        ("{python}", "scripts/screenshots.py", "--help"),
    ),
)


def help_text(command: tuple[str, ...]) -> str:
    """What the script prints with ``--help``, at a width of 100 columns."""
    python = str(ROOT / ".venv" / "bin" / "python")
    if not os.path.exists(python):
        python = sys.executable
    argv = [python if part == "{python}" else part for part in command]
    env = {**os.environ, "COLUMNS": "100", "BENCH_PYTHON": python, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return done.stdout.rstrip() + "\n"


def render() -> str:
    """The page's Markdown."""
    parts = [header("Scripts reference", _INTRO)]
    for script, purpose, command in SCRIPTS:
        parts.append(f"## `{script}`\n\n{purpose}\n\n```text\n{help_text(command)}```\n")
    return "\n".join(parts)
