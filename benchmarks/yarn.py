"""Section 13: ``run -d -t yarn-application`` on a real YARN, beside plain ``spark-submit``.

A single-node YARN (``scripts/start-cluster.sh --yarn``: Hadoop's own ResourceManager and
NodeManager over a single-node HDFS, on loopback) runs ``benchmarks/jobs/rate_files.py`` (a
rate source to a Parquet file sink, one-second batches) two ways, one after the other, in
each repetition:

* ``flinkish run -d -t yarn-application`` with Flink's YARN keys (the driver in the
  ApplicationMaster's container): timed to its "Job has been submitted with JobID" line and
  to the sink's first committed batch (its ``_spark_metadata/0``);
* ``spark-submit --master yarn --deploy-mode cluster`` of the same script, written by hand
  with what a user of this YARN needs (Spark's jars and pyspark's archives from the local
  installation, loopback addresses, the same container sizes, a checkpoint location), not
  waiting for the application's end (``spark.yarn.submit.waitAppCompletion=false``): timed
  to its exit (the application submitted: its "JobID line") and to the first committed batch.

Then the flinkish job's ApplicationMaster JVM is killed (SIGKILL) with
``yarn.application-attempts: 2``: timed to the first batch the new attempt commits, split
into where the time goes from the ResourceManager's attempt times and the job's status.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    BENCH_JOBS,
    PYTHON,
    REPO,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    free_port,
    median,
    run_timed,
    spark_submit_binary,
    wait_for,
)
from benchmarks.report import Row, Section

TITLE = "13. YARN: run -t yarn-application"
SCRIPT = BENCH_JOBS / "rate_files.py"
START = REPO / "scripts" / "start-cluster.sh"
STOP = REPO / "scripts" / "stop-cluster.sh"
#: flinkish's submission at most this many times plain spark-submit's
GOAL = 1.0
#: the YARN: a driver and an executor of 1 GB each (each a 2 GB container) at a time
YARN_MEMORY, MAX_CONTAINER = "4096", "2048"
SIZES = (
    "-Djobmanager.memory.process.size=1g",
    "-Dtaskmanager.memory.process.size=1g",
    "-Dtaskmanager.numberOfTaskSlots=1",
)


@dataclass(frozen=True)
class YarnParams:
    reps: int = 1
    enabled: bool = True


def _say(message: str) -> None:
    print(f"[bench] yarn: {message}", file=sys.stderr, flush=True)


@dataclass
class SingleNodeYarn:
    conf_dir: str
    directory: Path
    web: str  # http://127.0.0.1:PORT of the ResourceManager
    start_seconds: float

    def rest(self, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.web}/ws/v1/cluster/{path}", headers={"Accept": "application/json"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=30) as response:
            return json.load(response)

    def attempts(self, app_id: str) -> list[dict[str, Any]]:
        found = self.rest(f"apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
        return sorted(found, key=lambda attempt: int(attempt["id"]))

    def application_of(self, name: str) -> str | None:
        apps = (self.rest("apps").get("apps") or {}).get("app") or []
        return next((a["id"] for a in apps if a["name"] == name), None)

    def kill(self, app_id: str) -> None:
        request = urllib.request.Request(
            f"{self.web}/ws/v1/cluster/apps/{app_id}/state",
            data=b'{"state": "KILLED"}',
            headers={"Content-Type": "application/json"},
            method="PUT",
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with contextlib.suppress(OSError), opener.open(request, timeout=30):
            pass


@contextlib.contextmanager
def single_node_yarn(workspace: Workspace) -> Iterator[SingleNodeYarn]:
    """``scripts/start-cluster.sh --yarn`` on free ports; stopped afterwards."""
    directory = workspace.dir("yarn", "cluster")
    env = clean_env({"PYTHON": PYTHON})
    web_port = free_port()
    argv = [START, "--yarn", "--dir", directory, "--hdfs-port", str(free_port()),
            "--hdfs-http-port", "0", "--yarn-port", str(free_port()),
            "--yarn-webui-port", str(web_port), "--yarn-memory", YARN_MEMORY,
            "--yarn-max-container", MAX_CONTAINER]  # fmt: skip
    try:
        started = run_timed(argv, env, workspace.root, timeout=900).check()
        last = started.stdout.strip().splitlines()[-1]
        if not last.startswith("HADOOP_CONF_DIR="):
            raise BenchError(f"start-cluster.sh --yarn printed no HADOOP_CONF_DIR:\n{last}")
        conf_dir = last.split("=", 1)[1]
        yield SingleNodeYarn(conf_dir, directory, f"http://127.0.0.1:{web_port}", started.seconds)
    finally:
        run_timed([STOP, "--dir", directory], env, workspace.root, timeout=300)


def _committed(output: Path) -> set[str]:
    """The batches the file sink committed: its metadata log's entries."""
    with contextlib.suppress(OSError):
        return {p.name for p in (output / "_spark_metadata").iterdir() if p.name[:1].isdigit()}
    return set()


def _am_jvm(yarn: SingleNodeYarn, container: str) -> int:
    """The ApplicationMaster's JVM: the java process whose environment holds its container."""
    wanted = f"CONTAINER_ID={container}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (entry / "comm").read_text().strip() == "java" and wanted in (
                entry / "environ"
            ).read_bytes().split(b"\0"):
                return int(entry.name)
    raise BenchError(f"no JVM of container {container}")


def _plain(yarn: SingleNodeYarn, run_dir: Path, output: Path) -> dict[str, float]:
    """Plain spark-submit in cluster mode, not waiting for the application: to its exit and
    to the first committed batch; the application killed afterwards."""
    from flinkish_cli.spark.install import pyspark_home

    home = pyspark_home()
    archives = ",".join(f"local:{p}" for p in sorted((home / "python" / "lib").glob("*.zip")))
    name = f"plain-{run_dir.name}"
    conf = {
        "spark.yarn.jars": f"local:{home / 'jars'}/*",
        "spark.yarn.submit.waitAppCompletion": "false",
        "spark.yarn.maxAppAttempts": "1",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "1g",
        "spark.executor.cores": "1",
        "spark.driver.host": "127.0.0.1",
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.pyspark.python": PYTHON,
        "spark.sql.streaming.checkpointLocation": f"file://{run_dir / 'checkpoint'}",
    }
    argv = [spark_submit_binary(), "--master", "yarn", "--deploy-mode", "cluster",
            "--name", name]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(SCRIPT), "--output", f"file://{output}"]
    env = clean_env({"HADOOP_CONF_DIR": yarn.conf_dir, "PYSPARK_ARCHIVES_PATH": archives,
                     "SPARK_LOCAL_IP": "127.0.0.1"})  # fmt: skip
    began = time.perf_counter()
    submitted = run_timed(argv, env, run_dir, timeout=600, log_path=run_dir / "spark-submit.log")
    submitted.check()
    try:
        wait_for("plain spark-submit's first batch", lambda: _committed(output), 600, 0.1)
        first = time.perf_counter() - began
    finally:
        app_id = yarn.application_of(name)
        if app_id:
            yarn.kill(app_id)
    return {"to submitted": submitted.seconds, "to first batch": first}


def _flinkish(yarn: SingleNodeYarn, cli: FlinkishCli, output: Path) -> dict[str, Any]:
    """flinkish's run -d to its JobID line and first batch; then its ApplicationMaster
    killed, to the new attempt's first batch, with where the time goes."""
    submission = cli.submit_detached(
        "-t", "yarn-application", "-p", "1", "-Dyarn.application-attempts=2", *SIZES,
        str(SCRIPT), "--output", f"file://{output}",
    )  # fmt: skip
    job_id = submission.job_id
    try:
        wait_for("flinkish's first batch", lambda: _committed(output), 600, 0.1)
        figures: dict[str, Any] = {
            "to JobID line": submission.to_job_id,
            "to first batch": time.perf_counter() - submission.began,
        }
        status = cli.status(job_id)
        app_id = status.yarn_application if status else None
        if not app_id:
            raise BenchError(f"job {job_id} has no YARN application id")
        before = _committed(output)
        (attempt,) = yarn.attempts(app_id)
        jvm = _am_jvm(yarn, attempt["containerId"])
        killed = time.time()
        os.kill(jvm, signal.SIGKILL)
        running_again: list[float] = []

        def new_batch() -> bool:
            current = cli.status(job_id)
            if (
                not running_again
                and current is not None
                and current.restarts >= 1
                and (current.state.value == "RUNNING")
            ):
                running_again.append(time.time())
            return bool(_committed(output) - before)

        wait_for("the new attempt's first batch", new_batch, 600, 0.1)
        batch = time.time()
        attempts = yarn.attempts(app_id)
        if len(attempts) != 2:
            raise BenchError(f"{len(attempts)} attempts of {app_id}, not 2")
        ended = int(attempts[0].get("finishedTime") or 0) / 1000 or killed
        second = int(attempts[1]["startTime"]) / 1000
        driver = running_again[0] if running_again else batch
        figures["killed AM to first batch"] = batch - killed
        figures["phases"] = {
            "the ResourceManager ends attempt 1": max(ended - killed, 0.0),
            "YARN starts attempt 2": max(second - max(ended, killed), 0.0),
            "attempt 2's driver to RUNNING (container, JVM, Python, queries)": max(
                driver - max(second, killed), 0.0
            ),
            "to its first committed batch": max(batch - driver, 0.0),
        }
        return figures
    finally:
        cli.run("cancel", job_id, timeout=180)


def run(workspace: Workspace, params: YarnParams) -> Section:
    section = Section(key="yarn", title=TITLE, method=METHOD)
    if not params.enabled:
        section.skipped = "BENCH_YARN=0 (a quick run runs it only with BENCH_YARN=1)"
        return section
    conf_dir = workspace.conf_dir("yarn", {"heartbeat.interval": "1 s"})
    cli = FlinkishCli(conf_dir, workspace.dir("yarn", "cwd"), spark_progress=False)
    flinkish: list[dict[str, Any]] = []
    plain: list[dict[str, float]] = []
    with single_node_yarn(workspace) as yarn:
        _say(f"YARN started in {yarn.start_seconds:.0f} s")
        previous = os.environ.get("HADOOP_CONF_DIR")
        os.environ["HADOOP_CONF_DIR"] = yarn.conf_dir  # every flinkish command's (clean_env)
        try:
            for rep in range(params.reps):
                figures = _flinkish(yarn, cli, workspace.dir("yarn", f"out-flinkish-{rep}"))
                _say(f"flinkish: {figures['to first batch']:.1f} s to the first batch")
                flinkish.append(figures)
                run_dir = workspace.dir("yarn", f"plain-{rep}")
                plain.append(_plain(yarn, run_dir, workspace.dir("yarn", f"out-plain-{rep}")))
                _say(f"spark-submit: {plain[-1]['to first batch']:.1f} s to the first batch")
        finally:
            cli.cleanup()
            if previous is None:
                os.environ.pop("HADOOP_CONF_DIR", None)
            else:
                os.environ["HADOOP_CONF_DIR"] = previous
    section.rows = rows(flinkish, plain)
    section.notes.append(
        "flinkish's `run -d` prints its JobID line once YARN has accepted the application "
        "(its id recorded in the job's status, the job CREATED), as Flink's does and as plain "
        "`spark-submit` exits, before the ApplicationMaster's container starts; a failure "
        "after that is the job's FAILED state in `list` and `logs`, not `run`'s exit status."
    )
    section.notes.append(
        f"The single-node YARN (start-cluster.sh --yarn, {YARN_MEMORY} MB) took "
        f"{yarn.start_seconds:.0f} s to start; not counted."
    )
    return section


def rows(flinkish: list[dict[str, Any]], plain: list[dict[str, float]]) -> list[Row]:
    def of(runs: list[dict[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in runs]

    job_id, submitted = of(flinkish, "to JobID line"), of(plain, "to submitted")
    first, plain_first = of(flinkish, "to first batch"), of(plain, "to first batch")
    recovery = of(flinkish, "killed AM to first batch")
    phases = {
        name: round(median([r["phases"][name] for r in flinkish]), 2)
        for name in flinkish[0]["phases"]
    }
    return [
        Row(
            measurement="run -d -t yarn-application to its JobID line",
            value=median(job_id), unit="s",
            reference="spark-submit --master yarn --deploy-mode cluster to its exit "
            "(the application submitted)",
            reference_value=median(submitted), samples=job_id, reference_samples=submitted,
            goal=f"ratio ≤ {GOAL}", goal_met=median(job_id) <= GOAL * median(submitted),
        ),
        Row(
            measurement="run -d -t yarn-application to the first committed batch",
            value=median(first), unit="s",
            reference="spark-submit --master yarn --deploy-mode cluster to the first "
            "committed batch",
            reference_value=median(plain_first), samples=first, reference_samples=plain_first,
            goal=f"ratio ≤ {GOAL}", goal_met=median(first) <= GOAL * median(plain_first),
        ),
        Row(
            measurement="a killed ApplicationMaster to the first batch of YARN's new attempt",
            value=median(recovery), unit="s",
            reference="the job's first start, run -d to the first committed batch",
            reference_value=median(first), samples=recovery, reference_samples=first,
            details={"where the time goes, median s": phases},
        ),
    ]  # fmt: skip


METHOD = (
    "A single-node YARN (`scripts/start-cluster.sh --yarn`, Hadoop's own ResourceManager "
    "and NodeManager over a single-node HDFS, on loopback) runs a rate source to a Parquet "
    "file sink (one-second batches) with a driver and an executor of 1 GB each. In each "
    "repetition, `flinkish run -d -t yarn-application` with Flink's YARN keys, then a "
    "hand-written `spark-submit --master yarn --deploy-mode cluster` of the same script "
    "(Spark's jars and pyspark's archives from the local installation, loopback addresses, "
    "not waiting for the application's end), each timed to its JobID line (spark-submit: "
    "its exit, the application submitted) and to the sink's first committed batch. Then "
    "the flinkish job's ApplicationMaster JVM is killed (SIGKILL, "
    "`yarn.application-attempts: 2`), timed to the first batch YARN's second attempt "
    "commits, split by the ResourceManager's attempt times and the job's status."
)
