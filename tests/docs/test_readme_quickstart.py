"""The README's quick start, run as a newcomer runs it: its ``bash`` blocks, in order, pasted
as one script (``set -euo pipefail``) into a fresh copy of the repository.

The copy holds the tracked files and this environment's ``.venv`` (what ``scripts/setup.sh``
made); its own ``conf/flink-conf.yaml`` is used, with the registry, savepoint and log
directories moved into the test's directory and the settings that make the tests' jobs
quick (:meth:`~tests.fixtures.flinkish_env.FlinkishEnv.write_conf`). Then the outcome is
read from the real files: the savepoints exist, the resumed job ran from the stop's savepoint
with parallelism 4, and the output holds every order over 100 exactly once.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.flinkish_env import FLINKISH, FlinkishEnv, read_json_dir

REPO = Path(__file__).resolve().parents[2]
SECTION = "## Quick start"


def quickstart_script(readme: str) -> str:
    """The ``bash`` blocks of the README's quick start section, in order, as one script."""
    start = readme.index(f"\n{SECTION}\n")
    end = readme.find("\n## ", start + 1)
    section = readme[start : end if end >= 0 else len(readme)]
    blocks = re.findall(r"^```bash\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    return "set -euo pipefail\n" + "\n".join(blocks)


def test_the_quick_start_is_bash_blocks_with_the_whole_cycle() -> None:
    """What the run below pastes: every step of the cycle, each command as a user types it."""
    script = quickstart_script((REPO / "README.md").read_text())
    steps = [
        "scripts/generate_events.py --kind orders",
        "flinkish run -d jobs/orders.py",
        "flinkish list",
        'flinkish savepoint "$JOB"',
        'flinkish stop --savepointPath data/savepoints "$JOB"',
        'flinkish run -d -s "$SP" -p 4 jobs/orders.py',
    ]
    found = [script.find(step) for step in steps]
    assert -1 not in found and found == sorted(found), dict(zip(steps, found, strict=True))


def _fresh_copy(target: Path) -> Path:
    """The repository's tracked files (as they are in the work tree) under ``target``, with
    this environment's ``.venv``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_file():  # deleted in the work tree, not yet in git
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)
    (target / ".venv").symlink_to(Path(FLINKISH).parents[1], target_is_directory=True)
    return target


def _configure(copy: Path, env: FlinkishEnv) -> None:
    """The copy's own configuration, with ``env``'s directories and test settings in place of
    its values for the same keys."""
    ours = {}
    for line in (env.conf_dir / "flink-conf.yaml").read_text().splitlines():
        key, _, value = line.partition(": ")
        ours[key] = value
    conf = copy / "conf" / "flink-conf.yaml"
    kept = [
        line for line in conf.read_text().splitlines() if line.partition(":")[0].strip() not in ours
    ]
    conf.write_text("\n".join([*kept, *(f"{k}: {v}" for k, v in ours.items())]) + "\n")


@pytest.mark.spark
def test_the_quick_start_reaches_a_resumed_rescaled_job(
    flinkish_env: FlinkishEnv, tmp_path: Path
) -> None:
    env = flinkish_env
    copy = _fresh_copy(tmp_path / "clone")
    _configure(copy, env)
    script = quickstart_script((copy / "README.md").read_text())
    environ = {k: v for k, v in env.environ().items() if k not in ("FLINK_CONF_DIR", "VIRTUAL_ENV")}
    pasted = subprocess.run(
        ["bash", "-c", script], cwd=copy, env=environ, capture_output=True, text=True, timeout=900
    )
    assert pasted.returncode == 0, f"stdout:\n{pasted.stdout}\nstderr:\n{pasted.stderr}"

    first, resumed = sorted(env.list_jobs(), key=lambda job: job["start-time"])
    assert first["state"] == resumed["state"] == "FINISHED", (first, resumed)
    savepoints = json.loads(
        env.run("savepoint", "list", first["jid"], "--output", "json", check=True).stdout
    )["savepoints"]
    assert [(r["trigger"], r["state"]) for r in savepoints] == [
        ("STOP", "COMPLETED"),
        ("MANUAL", "COMPLETED"),
    ]
    stopped = Path(savepoints[0]["path"])
    assert stopped.parent == copy / "data" / "savepoints" and (stopped / "_metadata").is_file()
    assert Path(savepoints[1]["path"], "_metadata").is_file()
    assert resumed["restored-from"] == str(stopped)
    status = env.checkpoints / resumed["jid"] / "_flinkish" / "status.json"
    assert json.loads(status.read_text())["parallelism"] == 4

    large = sorted(
        order["order_id"]
        for path in (copy / "data" / "orders").glob("part-*.json")
        for order in map(json.loads, path.read_text().splitlines())
        if order["total_price"] > 100
    )
    written = sorted(row["order_id"] for row in read_json_dir(copy / "data" / "out" / "orders"))
    assert large and written == large, "every order over 100, exactly once"
    shown = re.search(r"\| wc -l\n# (\d+)\n", (copy / "README.md").read_text())
    assert shown and int(shown.group(1)) == len(large), "the README shows the real count"
    assert f"{len(large)}\n" in pasted.stdout, "the count the quick start prints"
