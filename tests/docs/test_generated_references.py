"""The generated reference pages equal what their generators make of the code now: a route,
an option, a metric or a script option added without regenerating fails here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts.docs import cli, metrics, rest, scripts
from scripts.docs.__main__ import main, pages
from scripts.docs.common import DOCS, ROOT

GENERATORS = {cli.PAGE: cli.render, rest.PAGE: rest.render, metrics.PAGE: metrics.render}


@pytest.mark.parametrize("page", sorted(GENERATORS))
def test_reference_page_is_up_to_date(page: str) -> None:
    assert (DOCS / page).read_text(encoding="utf-8") == GENERATORS[page](), (
        f"docs/{page} is stale: run 'python -m scripts.docs --write'"
    )


def test_scripts_page_is_every_scripts_own_help() -> None:
    assert (DOCS / scripts.PAGE).read_text(encoding="utf-8") == scripts.render(), (
        f"docs/{scripts.PAGE} is stale: run 'python -m scripts.docs --write'"
    )


def test_every_command_option_route_and_metric_is_on_its_page() -> None:
    """Not only equal to the generator: the generator leaves nothing out."""
    import click

    from flinkish_cli.cli.main import cli as group
    from flinkish_cli.web.metrics import METRICS, PROCESS_GAUGES

    text = (DOCS / cli.PAGE).read_text(encoding="utf-8")
    ctx = click.Context(group, info_name="flinkish")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        assert f"## `flinkish {name}`" in text
        for param in command.params:
            if isinstance(param, click.Option):
                assert f"`{', '.join(param.opts)}" in text, (name, param.opts)
    text = (DOCS / rest.PAGE).read_text(encoding="utf-8")
    for method, path, _handler in rest.routes():
        assert f"| `{method}` | `{path}` |" in text
    text = (DOCS / metrics.PAGE).read_text(encoding="utf-8")
    for _key, name, _doc, _labels in METRICS:
        assert f"`{name}`" in text
    for _attribute, name, _doc in PROCESS_GAUGES:
        assert f"`flink_jobmanager_Status_JVM_{name}`" in text


def test_the_check_fails_on_a_stale_page(tmp_path, monkeypatch) -> None:
    """``python -m scripts.docs --check`` says which page is stale, exit status 1."""
    import scripts.docs.__main__ as entry

    stale = tmp_path / "docs"
    (stale / "reference").mkdir(parents=True)
    for page in pages():
        (stale / page).write_text("an old page\n", encoding="utf-8")
    monkeypatch.setattr(entry, "DOCS", stale)
    monkeypatch.setattr(entry, "pages", lambda: {cli.PAGE: cli.render})
    assert main(["--check"]) == 1
    assert main(["--write"]) == 0
    assert (stale / cli.PAGE).read_text(encoding="utf-8") == cli.render()
    assert main(["--check"]) == 0


def test_the_generator_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.docs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_documented_json_keys_are_the_ones_the_commands_print(tmp_path) -> None:
    """The reference reads each ``--output json`` document's keys from the commands' sources;
    the commands that need no Spark, run for real, print exactly those keys."""
    import json
    import time

    from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
    from flinkish_cli.registry.store import JobRegistry
    from tests.fixtures.flinkish_env import FlinkishEnv

    def documented(where: str) -> tuple[str, ...]:
        (keys,) = {keys for _what, keys in cli._json_documents(where)}
        return keys

    env = FlinkishEnv.under(tmp_path)
    now = time.time()
    status = JobStatus(
        job_id="ab" * 16, name="orders", state=JobState.RUNNING, start_time=now - 60,
        heartbeat=now + 3600, pid=1, parallelism=2,
    )  # fmt: skip
    status.queries["orders"] = QueryStatus(name="orders", checkpoint="/cp/orders", active=True)
    JobRegistry.open(str(env.checkpoints)).write(status)

    keys = documented("flinkish_cli.cli.commands.list_jobs:list_jobs")
    printed = json.loads(env.run("list", "-a", "--output", "json", check=True).stdout)
    assert list(printed) == [k for k in keys if "[]." not in k]
    assert list(printed["jobs"][0]) == [k.split("[].")[1] for k in keys if k.startswith("jobs[].")]

    keys = documented("flinkish_cli.cli.commands.config_cmd:config")
    printed = json.loads(env.run("config", "--output", "json", check=True).stdout)
    assert printed and all(list(entry) == list(keys) for entry in printed)
