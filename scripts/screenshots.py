"""The documentation's pictures, made from real jobs: flinkish web's dashboard in headless
Chromium and a terminal session of the quick start.

    python scripts/screenshots.py [--only dashboard,autoscaler,terminal] [--out docs/images]

Each part starts what it shows in a private directory (its own registry, configuration and
input, every server on 127.0.0.1), takes its pictures and stops everything it started:

- ``dashboard``: the example jobs ``jobs/orders.py`` (run once in BATCH mode, FINISHED) and
  ``jobs/transactions_windows.py`` (running, fed by ``scripts/generate_events.py``, with a
  savepoint taken), then ``dashboard-jobs.png`` (the job list) and
  ``dashboard-job-<tab>.png`` for each tab of the running job's page (its job graph among
  them);
- ``autoscaler``: the autoscaler benchmark's enrichment job (``benchmarks/autoscale.py``, a
  short schedule: a low rate, a step up, low again) with the autoscaler on; once it has
  rescaled, ``dashboard-job-autoscaler.png``: its chart and the reasons the autoscaler gave;
- ``terminal``: the quick start's commands run one after the other (input written, ``run -d``,
  ``list``, ``savepoint``, ``stop`` with a savepoint, ``run -s`` at a new parallelism,
  ``list``), recorded as ``quickstart-terminal.svg``, the commands and what they printed.

The pictures are 1366 pixels wide (a laptop's screen), as tall as the page. Needs Debian's
chromium and chromium-driver and the 'test' extra (selenium); a quarter of an hour or so on two
cores, most of it the autoscaler's schedule.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import FlinkishCli, Workspace, free_port  # noqa: E402

TABS = ("overview", "graph", "checkpoints", "savepoints", "exceptions", "configuration")
PARTS = ("dashboard", "autoscaler", "terminal")
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").is_dir() else sys.executable
FLINKISH = str(Path(PYTHON).parent / "flinkish")


def _say(message: str) -> None:
    print(f"[screenshots] {message}", file=sys.stderr, flush=True)


def wait_for(what: str, condition: Callable[[], Any], timeout: float = 300.0) -> Any:
    """``condition()``'s first true value, asked every half second until ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = condition()
            if value:
                return value
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s")


# -- the browser ------------------------------------------------------------------------------
def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1366,860"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def _shoot(driver: Any, path: Path) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1366, max(600, min(int(height) + 140, 1800)))
    time.sleep(0.3)
    driver.save_screenshot(str(path))
    driver.set_window_size(1366, 860)
    _say(f"wrote {path}")


def shoot_dashboard(url: str, job_id: str, out: Path, tabs: tuple[str, ...]) -> None:
    """The job list (when every tab is asked for) and each tab of the job's page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser()
    wait = WebDriverWait(driver, 60)
    out.mkdir(parents=True, exist_ok=True)
    try:
        if tabs == TABS:
            driver.get(url + "/#/overview")
            wait.until(
                ec.presence_of_element_located((By.CSS_SELECTOR, f"tr[data-jid='{job_id}']"))
            )
            _shoot(driver, out / "dashboard-jobs.png")
        for tab in tabs:
            driver.get(f"{url}/#/job/{job_id}/{tab}")
            wait.until(ec.text_to_be_present_in_element((By.ID, "refreshed"), "updated"))
            if tab in ("overview", "autoscaler"):
                wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".uplot")))
            if tab == "graph":
                wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "svg.graph")))
            time.sleep(1.0)  # let the charts paint; a picture, not a test
            _shoot(driver, out / f"dashboard-job-{tab}.png")
    finally:
        driver.quit()


@contextlib.contextmanager
def web(cli: FlinkishCli, port: int) -> Iterator[str]:
    """``flinkish web`` over the registry of ``cli``'s configuration, on 127.0.0.1:``port``."""
    process = subprocess.Popen(
        [FLINKISH, "web"], env=cli.env(), cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("flinkish web", lambda: urllib.request.urlopen(url + "/config", timeout=5), 60)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def generate(kind: str, out: Path, *args: str) -> subprocess.Popen[bytes]:
    argv = [PYTHON, "scripts/generate_events.py", "--kind", kind, "--out", str(out), "--quiet"]
    return subprocess.Popen([*argv, *args], cwd=REPO)


# -- the parts --------------------------------------------------------------------------------
def dashboard(ws: Workspace, out: Path) -> None:
    """A finished orders job and a running windowed job with a savepoint: every tab."""
    port = free_port()
    conf = ws.conf_dir("demo", {"rest.bind-port": port})
    cli = FlinkishCli(conf, REPO, spark_progress=False)
    data = ws.dir("data")
    try:
        generate("orders", data / "orders", "--files", "6", "--rate", "0", "--seed", "7").wait()
        cli.run(
            "run", "-D", "execution.runtime-mode=BATCH", "jobs/orders.py", "--data", str(data)
        ).check()
        transactions = data / "transactions"
        feed = generate(
            "transactions", transactions, "--rate", "20", "--duration", "900",
            "--events-per-file", "40", "--start-time", "now", "--seed", "11",
        )  # fmt: skip
        try:
            job = cli.submit_detached("jobs/transactions_windows.py", "--data", str(data)).job_id
            wait_for("a few micro-batches", lambda: _batches(cli, job) >= 6, 300)
            cli.run("savepoint", job, timeout=300).check()
            # a failure for the Exceptions tab: Spark's JVM killed, the job restarts from its
            # checkpoints (the restart strategy), as it would after a crash
            kill_jvm(cli, job)
            wait_for("the restart", lambda: _restarted(cli, job), 300)
            with contextlib.suppress(TimeoutError):  # more of the charts, when it is quick
                wait_for("more micro-batches", lambda: _batches(cli, job) >= 12, 120)
            with web(cli, port) as url:
                shoot_dashboard(url, job, out, TABS)
        finally:
            feed.terminate()
            feed.wait()
    finally:
        cli.cleanup()


def kill_jvm(cli: FlinkishCli, job: str) -> None:
    """SIGKILL to the job's JVM (the parent of its Python driver)."""
    import signal

    from benchmarks.soak import parent_of

    status = cli.status(job)
    jvm = parent_of(status.pid) if status and status.pid else None
    if jvm is None:
        raise RuntimeError(f"job {job} has no JVM to kill")
    os.kill(jvm, signal.SIGKILL)


def _restarted(cli: FlinkishCli, job: str) -> bool:
    from flinkish_cli.registry.status import JobState

    status = cli.status(job)
    return status.restarts >= 1 and status.state is JobState.RUNNING and _batches(cli, job) > 0


def _batches(cli: FlinkishCli, job: str) -> int:
    status = cli.status(job)
    return min((q.last_committed_batch or 0) for q in status.queries.values()) if status else 0


def autoscaler(ws: Workspace, out: Path) -> None:
    """The autoscaler benchmark's enrichment job under a step in load, once it has rescaled."""
    from benchmarks.autoscale import AUTOSCALED, AutoscaleParams, Run, Service

    params = AutoscaleParams.quick()
    params.concurrent = False
    with Service(params.latency) as service:
        run = Run(ws, params, AUTOSCALED, service.url, say=_say)
        worker = threading.Thread(target=run.run, daemon=True)
        worker.start()
        try:
            job = wait_for("the job", lambda: run.result.job, 300)
            history = ws.root / "checkpoints" / AUTOSCALED / job / "_flinkish" / "rescales.json"
            wait_for("a completed rescale", lambda: "COMPLETED" in history.read_text(), 900)
            time.sleep(60)  # the chart past the rescale
            viewer = FlinkishCli(run.cli.conf_dir, REPO, spark_progress=False)
            conf = run.cli.conf_dir / "flink-conf.yaml"
            port = int(
                next(
                    line.split(":", 1)[1]
                    for line in conf.read_text().splitlines()
                    if line.startswith("rest.bind-port:")
                )
            )
            with web(viewer, port) as url:
                shoot_dashboard(url, job, out, ("autoscaler",))
        finally:
            worker.join(1800)  # the schedule's end, the drain, the cancel


def terminal(ws: Workspace, out: Path) -> None:
    """The quick start, command after command, recorded as a terminal's SVG."""
    from rich.console import Console
    from rich.text import Text

    home = ws.dir("home")
    clone = home / "flinkish"  # what the quick start needs of a clone, as a user has it
    import shutil

    shutil.copytree(REPO / "jobs", clone / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "conf", clone / "conf")
    (clone / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "generate_events.py", clone / "scripts")
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
        "PATH": f"{Path(FLINKISH).parent}:{os.environ['PATH']}",
        "FLINK_CONF_DIR": str(clone / "conf"),
        "COLUMNS": "100",
        "NO_COLOR": "1",
    }
    console = Console(record=True, width=120, force_terminal=True, color_system="truecolor")
    jobs: list[str] = []

    def shell(command: str, shown: str | None = None) -> str:
        console.print(Text("$ ", style="bold green") + Text(shown or command, style="bold"))
        done = subprocess.run(
            command, shell=True, cwd=clone, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=600,
        )  # fmt: skip
        printed = done.stdout.rstrip()
        if printed:
            console.print(Text(printed))
        if done.returncode != 0:
            raise RuntimeError(f"{command} failed ({done.returncode}): {printed}")
        jobs.extend(w for w in printed.split() if len(w) == 32 and w.isalnum())
        return printed

    try:
        shell(
            "python scripts/generate_events.py --kind orders --out data/orders --files 4 --rate 0"
        )
        started = shell("flinkish run -d jobs/orders.py --data data")
        job = started.split("JobID")[-1].split()[0]
        wait_for("the first micro-batch", lambda: _batches_env(job, env), 300)
        shell("flinkish list")
        shell(f"flinkish savepoint {job}")
        stopped = shell(f"flinkish stop --savepointPath data/savepoints {job}")
        path = Path(stopped.split("Path:")[-1].split()[0]).relative_to(clone)
        shell(f"flinkish run -d -s {path} -p 4 jobs/orders.py --data data")
        shell("flinkish list")
    finally:
        for job_id in dict.fromkeys(jobs):
            subprocess.run(
                [FLINKISH, "cancel", job_id], cwd=clone, env=env, capture_output=True, timeout=300
            )
    (out / "quickstart-terminal.svg").write_text(
        console.export_svg(title="flinkish: the quick start"), encoding="utf-8"
    )
    _say(f"wrote {out / 'quickstart-terminal.svg'}")


def _batches_env(job: str, env: dict[str, str]) -> bool:
    done = subprocess.run(
        [FLINKISH, "list", "--output", "json"], env=env, capture_output=True, text=True
    )
    import json

    for found in json.loads(done.stdout)["jobs"]:
        if found.get("jid") == job:
            queries = found.get("queries") or {}
            return bool(queries) and all(
                q.get("last-committed-batch") is not None for q in queries.values()
            )
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/screenshots.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", default=",".join(PARTS), help="parts, comma-separated")
    parser.add_argument("--out", default=str(REPO / "docs" / "images"), help="where they go")
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}: choose from {', '.join(PARTS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for part in parts:
        with tempfile.TemporaryDirectory(prefix="flinkish-") as root:
            _say(f"{part} in {root}")
            {"dashboard": dashboard, "autoscaler": autoscaler, "terminal": terminal}[part](
                Workspace(Path(root)), out
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
