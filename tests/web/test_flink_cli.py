"""Apache Flink's own CLI (``bin/flink`` from the ``apache-flink`` wheel, in a virtual
environment of its own) drives flinkish jobs through ``flinkish web``: ``list``,
``savepoint`` (and ``-d``), ``checkpoint``, ``stop --savepointPath`` and ``cancel`` with
``-m host:port``, with Flink's output lines and exit statuses: real Spark jobs with their
registry on local disk (every row reaches the file sink once; one of them is stopped with a
savepoint from the dashboard, in a real browser), and jobs whose registry is on S3 (a moto
server over HTTP). Session-cluster jobs: ``tests/runtime/test_session_cluster.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.browser import chromium, open_dashboard
from tests.fixtures.cycle import Cycle
from tests.fixtures.fake_driver import FakeDriver
from tests.fixtures.flink_cli import run_flink
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.web_server import WebServer, running_web

SAVEPOINT = re.compile(r"^Savepoint completed\. Path: (\S+)$", re.MULTILINE)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """What Flink's CLI printed, whole (its exceptions are long), for a failed assertion."""
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


@pytest.mark.spark
def test_flinks_cli_lists_savepoints_stops_and_cancels_flinkish_jobs(
    flinkish_env: FlinkishEnv, flink
) -> None:
    env, cycle = flinkish_env, Cycle(flinkish_env)
    cycle.add_input(2)
    job = cycle.start()
    cycle.wait_until_all_processed()
    with running_web(env) as web:
        m = ("-m", web.address)

        listed = run_flink(flink, "list", *m)
        assert listed.returncode == 0, _said(listed)
        assert "------------------ Running/Restarting Jobs -------------------" in listed.stdout
        assert re.search(rf"^\d\d\.\d\d\.\d{{4}} \d\d:\d\d:\d\d : {job} : counts_job \(RUNNING\)$",
                         listed.stdout, re.M), listed.stdout  # fmt: skip

        target = env.root / "flink-savepoints"
        taken = run_flink(flink, "savepoint", *m, job, str(target))
        assert taken.returncode == 0, _said(taken)
        first = SAVEPOINT.search(taken.stdout).group(1)  # type: ignore[union-attr]
        assert first.startswith(f"{target}/savepoint-{job[:6]}-")
        assert (Path(first) / "_metadata").is_file()
        assert env.job(job)["state"] == "RUNNING"

        cycle.add_input(1)
        cycle.wait_until_all_processed()
        stopped = run_flink(flink, "stop", *m, "--savepointPath", str(target), job)
        assert stopped.returncode == 0, _said(stopped)
        assert f'Suspending job "{job}" with a CANONICAL savepoint.' in stopped.stdout
        final = SAVEPOINT.search(stopped.stdout).group(1)  # type: ignore[union-attr]
        env.wait_for_state(job, ["FINISHED"])
        # the driver kept its batches for the dashboard's charts, the last ones included
        kept = json.loads((env.checkpoints / job / "_flinkish" / "series.json").read_text())
        drawn = web.get(f"/flinkish/jobs/{job}/series").json()
        assert kept["queries"]["counts"] and kept["queries"] == drawn["queries"]
        everything = run_flink(flink, "list", "-a", *m)
        assert re.search(rf" : {job} : counts_job \(FINISHED\)$", everything.stdout, re.M)

        refused = run_flink(flink, "savepoint", *m, job)
        assert refused.returncode == 1 and "it is FINISHED" in refused.stdout + refused.stderr

        disposed = run_flink(flink, "savepoint", "-d", first, *m)  # POST /savepoint-disposal
        assert disposed.returncode == 0, _said(disposed)
        assert f"Savepoint '{first}' disposed." in disposed.stdout
        assert not Path(first).exists()
        not_one = run_flink(flink, "savepoint", "-d", str(env.root), *m)
        assert not_one.returncode == 1, not_one
        assert "not a savepoint" in not_one.stdout + not_one.stderr

        cycle.add_input(1)
        resumed = cycle.start("-s", final)
        cycle.wait_until_all_processed()
        checkpointed = run_flink(flink, "checkpoint", *m, resumed)
        assert checkpointed.returncode == 0, _said(checkpointed)
        assert re.search(
            rf"^Checkpoint \d+ for job {resumed} completed\.$", checkpointed.stdout, re.M
        )
        from_page = _stop_from_the_dashboard(web, resumed, env.root / "page-savepoints")
        env.wait_for_state(resumed, ["FINISHED"])

        cycle.add_input(1)
        last = cycle.start("-s", from_page)
        cycle.wait_until_all_processed()
        cancelled = run_flink(flink, "cancel", *m, last)
        assert cancelled.returncode == 0, _said(cancelled)
        assert f"Cancelled job {last}." in cancelled.stdout
        env.wait_for_state(last, ["CANCELED"])
    listed = env.run("savepoint", "list", job, "--output", "json", check=True).stdout
    history = {r["path"]: r["state"] for r in json.loads(listed)["savepoints"]}
    assert history[first] == "DISPOSED" and history[final] == "COMPLETED"
    assert from_page in env.run("savepoint", "list", resumed, "--output", "json").stdout
    cycle.check_exactly_once()


def _stop_from_the_dashboard(web: WebServer, job: str, target: Path) -> str:
    """Stop ``job`` with a savepoint into ``target`` from its page in a real browser, as a
    user does; the savepoint's path, as the page shows it."""
    with chromium() as browser:
        open_dashboard(browser, f"{web.url}/#/job/{job}/overview")
        wait = WebDriverWait(browser, 120)
        wait.until(ec.element_to_be_clickable((By.ID, "savepoint-dir"))).send_keys(str(target))
        browser.find_element(By.ID, "stop-job").click()
        wait.until(ec.alert_is_present()).accept()
        shown = (By.ID, "action-result")
        wait.until(ec.text_to_be_present_in_element(shown, "Savepoint completed"))
        text = browser.find_element(*shown).text
    path = re.search(rf"{re.escape(str(target))}/savepoint-{job[:6]}-\w+", text)
    assert path, text
    assert (Path(path.group(0)) / "_metadata").is_file()
    return path.group(0)


def test_flinks_cli_over_a_registry_on_s3(flinkish_env: FlinkishEnv, flink, s3_server, s3_bucket):
    """The registry and the savepoints on S3: ``flinkish web`` reads the jobs there and acts
    through the control channel there. A Spark job cannot keep its checkpoints on S3 on this
    machine (no hadoop-aws jar: Spark has no s3a file system), so each job's driver is a
    :class:`FakeDriver`, the driver's side of the control channel, on the real S3 storage."""
    env = flinkish_env
    root = f"{s3_bucket}/checkpoints"
    conf = {**s3_server.flink_conf(), "execution.checkpointing.dir": root}
    env.write_conf({**conf, "execution.checkpointing.savepoint-dir": f"{s3_bucket}/savepoints"})
    registry = JobRegistry.open(root, s3_server.settings())
    stopped_id, cancelled_id = "5a" * 16, "c4" * 16
    stopping = FakeDriver(registry, stopped_id, interval=0.5)
    cancelling = FakeDriver(registry, cancelled_id, interval=0.5)
    registry.storage.write_text(f"{root}/{'d3' * 16}/_flinkish/status.json", "{ damaged")
    try:
        with running_web(env) as web:
            m = ("-m", web.address)
            listed = run_flink(flink, "list", *m)
            assert listed.returncode == 0, _said(listed)
            for job in (stopped_id, cancelled_id):
                assert re.search(rf" : {job} : counts_job \(RUNNING\)$", listed.stdout, re.M)

            taken = run_flink(flink, "savepoint", *m, stopped_id, f"{s3_bucket}/flink-savepoints")
            assert taken.returncode == 0, _said(taken)
            path = SAVEPOINT.search(taken.stdout).group(1)  # type: ignore[union-attr]
            assert path.startswith(f"{s3_bucket}/flink-savepoints/savepoint-5a5a5a-")
            default = run_flink(flink, "savepoint", *m, stopped_id)  # state.savepoints.dir
            assert default.returncode == 0, _said(default)
            assert f"Path: {s3_bucket}/savepoints/savepoint-5a5a5a-" in default.stdout

            stopped = run_flink(
                flink, "stop", *m, "--savepointPath", f"{s3_bucket}/last", stopped_id
            )
            assert stopped.returncode == 0, _said(stopped)
            assert f'Suspending job "{stopped_id}" with a CANONICAL savepoint.' in stopped.stdout
            assert f"Path: {s3_bucket}/last/savepoint-5a5a5a-" in stopped.stdout
            asked = [(r.action, r.args.get("target")) for r in stopping.requests]
            assert asked == [
                ("savepoint", f"{s3_bucket}/flink-savepoints"),
                ("savepoint", f"{s3_bucket}/savepoints"),
                ("stop", f"{s3_bucket}/last"),
            ]

            cancelled = run_flink(flink, "cancel", *m, cancelled_id)
            assert cancelled.returncode == 0, _said(cancelled)
            assert f"Cancelled job {cancelled_id}." in cancelled.stdout
            assert [r.action for r in cancelling.requests] == ["cancel"]
            unknown = run_flink(flink, "cancel", *m, "0f" * 16)
            assert unknown.returncode == 1 and "0f" * 16 in unknown.stdout + unknown.stderr

            everything = run_flink(flink, "list", "-a", *m)
            assert re.search(
                rf" : {stopped_id} : counts_job \(FINISHED\)$", everything.stdout, re.M
            )
            assert re.search(
                rf" : {cancelled_id} : counts_job \(CANCELED\)$", everything.stdout, re.M
            )
            for path in ("/config", f"/jobs/{stopped_id}", f"/jobs/{stopped_id}/config"):
                assert s3_server.secret_key.encode() not in web.get(path).body, path
    finally:
        stopping.close()
        cancelling.close()
    # what the registry on S3 now holds, read without flinkish
    status = s3_server.client().get_object(
        Bucket=s3_bucket.removeprefix("s3://"),
        Key=f"checkpoints/{cancelled_id}/_flinkish/status.json",
    )
    assert json.loads(status["Body"].read())["state"] == JobState.CANCELED.value
