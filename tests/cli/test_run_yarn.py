"""``flinkish run -t yarn-application`` on a real ResourceManager and NodeManager.

The user's side: Flink's YARN keys as Flink's documentation writes them, the JobID line
once YARN has accepted the application (a failure after it shown by ``list`` and ``logs``),
``list`` with the YARN application id, ``logs`` read from the NodeManager, ``cancel`` ending
the application; and every socket of the job's containers on 127.0.0.1. The lifecycle: a
killed ApplicationMaster (YARN's next attempt resumes the job; its last attempt ends it
FAILED), savepoints, stop and resume, and with the registry on the YARN's HDFS the
autoscaler's rescale, periodic savepoints and an upgrade rolled back, each exactly once.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.flinkish_env import FlinkishEnv, job_id_of
from tests.fixtures.sink_log import committed_files
from tests.fixtures.sockets import listening_addresses
from tests.fixtures.spark_cluster import ROOT
from tests.fixtures.yarn import Yarn

pytestmark = pytest.mark.cluster

RATE_JOB = ROOT / "tests" / "fixtures" / "jobs" / "rate_to_files.py"
FAILS_AT_START = ROOT / "tests" / "fixtures" / "jobs" / "raises_at_start.py"


def _wait(what: str, probe: Callable[[], Any], timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} within {timeout}s"
        time.sleep(1)


def _container_pids(yarn: Yarn) -> list[int]:
    """This YARN's container processes: those whose working directory is under its
    NodeManager's local directories."""
    root = str((yarn.cluster_dir / "yarn" / "local").resolve()) + "/"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd").startswith(root):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_yarn_application_runs_is_listed_logs_and_cancels(
    yarn_cluster: Yarn, flinkish_env: FlinkishEnv, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    shipped = tmp_path / "lookup.txt"
    shipped.write_text("shipped\n")
    result = flinkish_env.run(
        "run", "-d", "-t", "yarn-application", "-p", "1",
        # Flink's YARN keys, as its documentation writes them
        "-Dyarn.application.name=rate-on-yarn",
        "-Dyarn.application.queue=default",
        "-Dyarn.application-attempts=1",
        f"-Dyarn.ship-files={shipped}",
        "-Djobmanager.memory.process.size=1g",
        "-Dtaskmanager.memory.process.size=1g",
        "-Dtaskmanager.numberOfTaskSlots=1",
        str(RATE_JOB), "--output", f"file://{output}",
        env={"HADOOP_CONF_DIR": str(yarn_cluster)}, timeout=600, check=True,
    )  # fmt: skip
    assert "has no meaning on Spark" not in result.stderr, result.stderr
    job_id = job_id_of(result.stdout)
    env = {"HADOOP_CONF_DIR": str(yarn_cluster)}
    # the JobID line came once YARN had accepted the application, whose id the job's status
    # holds from then on
    accepted = flinkish_env.polled(job_id)["yarn-application-id"]
    assert accepted in {app["id"] for app in yarn_cluster.applications()}, accepted

    job = flinkish_env.wait_for_state(job_id, {"RUNNING"}, timeout=300)
    app_id = job["yarn-application-id"]
    assert app_id == accepted, job
    app = yarn_cluster.rest(f"apps/{app_id}")["app"]
    assert (app["name"], app["queue"], app["state"]) == ("rate-on-yarn", "root.default", "RUNNING")
    flinkish_env.wait_for_batches(job_id, "rate", 2, timeout=300)
    _wait("the file sink's files", lambda: list(output.glob("part-*.parquet")))

    listed = flinkish_env.run("list", env=env, check=True).stdout
    assert f"{job_id} : rate-on-yarn (RUNNING) : {app_id}" in listed, listed

    # the driver's log, from the NodeManager that runs its container
    logs = flinkish_env.run("logs", job_id, env=env, check=True).stdout
    assert "Query 'rate' batch" in logs and "flinkish.runtime" in logs, logs[-2000:]
    # the job's packages are put on the driver's path from the container's own copies
    assert "Failed to add file" not in logs, logs[:3000]

    # the driver (ApplicationMaster) and executor containers listen on loopback only
    pids = _container_pids(yarn_cluster)
    addresses = [a for pid in pids for a in listening_addresses(pid)]
    assert len(pids) >= 2 and addresses, (pids, addresses)
    assert {address for address, _ in addresses} == {"127.0.0.1"}, addresses

    cancelled = flinkish_env.run("cancel", job_id, env=env, check=True)
    assert f"Cancelled job {job_id}." in cancelled.stdout
    # the application ends: KILLED by the ResourceManager, or FINISHED when the cancelled
    # driver's ApplicationMaster ended it before the kill arrived (flinkish_cli/spark/yarn.py)
    ended = ("KILLED", "FINISHED")
    _wait(
        "the application's end",
        lambda: yarn_cluster.rest(f"apps/{app_id}")["app"]["state"] in ended,
    )
    assert flinkish_env.wait_for_state(job_id, {"CANCELED"}, timeout=60)["state"] == "CANCELED"
    _wait("the containers' end", lambda: not _container_pids(yarn_cluster), timeout=120)


def test_a_detached_yarn_application_returns_once_accepted_and_its_failure_is_shown(
    yarn_cluster: Yarn, flinkish_env: FlinkishEnv
) -> None:
    """Flink's ``run -d -t yarn-application`` returns once YARN has accepted the application:
    a program that fails in its container, before it ever runs, is submitted (the JobID line,
    status 0, the application id recorded, the job not RUNNING), and its failure reaches
    ``list`` and ``logs`` afterwards."""
    env = {"HADOOP_CONF_DIR": str(yarn_cluster)}
    result = flinkish_env.run(
        "run", "-d", "-t", "yarn-application", "-Dyarn.application-attempts=1",
        "-Djobmanager.memory.process.size=1g", "-Dtaskmanager.memory.process.size=1g",
        str(FAILS_AT_START), env=env, timeout=600, check=True,
    )  # fmt: skip
    job_id = job_id_of(result.stdout)
    submitted = flinkish_env.polled(job_id)
    app_id = submitted["yarn-application-id"]
    assert app_id in {app["id"] for app in yarn_cluster.applications()}, submitted
    assert submitted["state"] != "RUNNING", submitted

    failed = flinkish_env.wait_for_state(job_id, {"FAILED"}, timeout=300)
    assert "the lookup table is missing" in failed["failure-cause"], failed
    assert failed["yarn-application-id"] == app_id
    listed = flinkish_env.run("list", "-a", env=env, check=True).stdout
    assert f"{job_id} : " in listed and f"(FAILED) : {app_id}" in listed, listed
    logs = flinkish_env.run("logs", job_id, env=env, check=True).stdout
    assert "ValueError: the lookup table is missing" in logs, logs[-2000:]
    ended = ("FINISHED", "FAILED")
    _wait(
        "the application's end",
        lambda: yarn_cluster.rest(f"apps/{app_id}")["app"]["state"] in ended,
    )


LARGER = "container of 3072 MB is larger than YARN's largest, 2048 MB."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-Dyarn.application.queue=nightly"],
         "ERROR: YARN has no queue 'nightly' (its queues: default)."),
        (["-Djobmanager.memory.process.size=3g"], f"ERROR: A driver {LARGER}"),
        (["-Dtaskmanager.memory.process.size=3g"], f"ERROR: An executor {LARGER}"),
    ],
)  # fmt: skip
def test_a_submission_yarn_would_refuse_is_refused_before_it_starts(
    yarn_cluster: Yarn, flinkish_env: FlinkishEnv, args: list[str], message: str
) -> None:
    before = {app["id"] for app in yarn_cluster.applications()}
    result = flinkish_env.run(
        "run", "-d", "-t", "yarn-application", *args, str(RATE_JOB), "--output", "file:///x",
        env={"HADOOP_CONF_DIR": str(yarn_cluster)}, check=False,
    )  # fmt: skip
    assert result.stderr.splitlines()[0] == message, result.stderr
    assert "Traceback" not in result.stderr and "submitted with JobID" not in result.stdout
    assert {app["id"] for app in yarn_cluster.applications()} == before
    assert flinkish_env.list_jobs() == []


def test_a_resource_manager_that_does_not_answer_is_named(
    flinkish_env: FlinkishEnv, tmp_path: Path
) -> None:
    from tests.fixtures.spark_cluster import free_ports

    (port,) = free_ports(1)
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
        f"<value>127.0.0.1:{port}</value></property></configuration>"
    )
    result = flinkish_env.run(
        "run", "-d", "-t", "yarn-application", str(RATE_JOB), "--output", "file:///x",
        env={"HADOOP_CONF_DIR": str(tmp_path)}, check=False,
    )  # fmt: skip
    assert result.stderr.splitlines()[0] == (
        f"ERROR: The YARN ResourceManager at http://127.0.0.1:{port} does not answer "
        "([Errno 111] Connection refused)."
    ), result.stderr
    assert flinkish_env.list_jobs() == []


def _savepoint_path(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "Savepoint completed" in line).split(
        "Path: ", 1
    )[1]


def _am_jvm(yarn: Yarn, container: str) -> int:
    """The ApplicationMaster's JVM: the java process of this YARN whose environment holds the
    container's CONTAINER_ID."""
    for pid in _container_pids(yarn):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "java" and f"CONTAINER_ID={container}".encode() in environ:
            return pid
    raise AssertionError(f"no JVM of container {container}")


def _attempts(yarn: Yarn, app_id: str) -> list[dict[str, Any]]:
    found = yarn.rest(f"apps/{app_id}/appattempts")["appAttempts"]["appAttempt"]
    return sorted(found, key=lambda attempt: int(attempt["id"]))


def _committed_values(output: Path) -> list[int]:
    """The rate source's values in the files the file sink committed (its metadata log): a
    batch a killed driver was writing leaves files the log never names."""
    import pyarrow.parquet as pq

    files = committed_files(output)
    assert files, "the sink committed no file"
    return sorted(
        value for path in files for value in pq.read_table(path).column("value").to_pylist()
    )


def test_a_killed_application_master_resumes_then_savepoint_stop_and_resume_exactly_once(
    yarn_cluster: Yarn, flinkish_env: FlinkishEnv, tmp_path: Path
) -> None:
    """The lifecycle on YARN, from the user's side, in one application: its ApplicationMaster's
    JVM killed with SIGKILL, YARN's second attempt (``yarn.application-attempts: 2``) resumes
    the same JobID from its checkpoint and the exception history says why; then a savepoint,
    a stop with a savepoint on the cluster's HDFS, a resume from it with -p 2 and one attempt,
    whose ApplicationMaster killed ends it FAILED (YARN's last attempt), then a resume from
    its last checkpoint. Every row of the rate source is in the file sink once, none
    missing."""
    output = tmp_path / "out"
    env = {"HADOOP_CONF_DIR": str(yarn_cluster)}
    sizes = ["-Djobmanager.memory.process.size=1g", "-Dtaskmanager.memory.process.size=1g",
             "-Dtaskmanager.numberOfTaskSlots=1", "-Dyarn.application-attempts=2"]  # fmt: skip
    job = ["-t", "yarn-application", *sizes, str(RATE_JOB), "--output", f"file://{output}"]
    first = job_id_of(flinkish_env.run("run", "-d", "-p", "1", *job, env=env, timeout=600,
                                       check=True).stdout)  # fmt: skip
    running = flinkish_env.wait_for_state(first, {"RUNNING"}, timeout=300)
    app_id = running["yarn-application-id"]
    flinkish_env.wait_for_batches(first, "rate", 2, timeout=300)

    (attempt,) = _attempts(yarn_cluster, app_id)
    os.kill(_am_jvm(yarn_cluster, attempt["containerId"]), 9)
    _wait("YARN's second attempt", lambda: len(_attempts(yarn_cluster, app_id)) == 2)
    second_attempt = _attempts(yarn_cluster, app_id)[1]
    assert second_attempt["containerId"] != attempt["containerId"]
    killed_at = flinkish_env.polled(first)["queries"]["rate"]["last-committed-batch"]

    again = _wait("the second attempt's driver",
                  lambda: (j := flinkish_env.polled(first))["state"] == "RUNNING"
                  and j["restarts"] and j)  # fmt: skip
    assert again["yarn-application-id"] == app_id
    assert again["restarts"] == 1, again["exceptions"]
    (failure,) = again["exceptions"]
    assert failure["cause"].startswith(
        f"The driver of YARN application attempt 1 of {app_id} ended"
    ), failure
    assert "YARN started attempt 2" in failure["cause"]
    assert "YARN: attempt 1 FAILED" in failure["cause"], failure  # the ResourceManager's word
    logs = flinkish_env.run("logs", first, env=env, check=True).stdout  # attempt 2's driver
    assert "Resuming from the job's checkpoints." in logs, logs[-2000:]
    listed = flinkish_env.run("list", env=env, check=True).stdout
    assert f": {first} : " in listed and f"(RUNNING) : {app_id}" in listed, listed
    batch = flinkish_env.wait_for_batches(first, "rate", killed_at + 2, timeout=300)
    assert batch > killed_at

    taken = flinkish_env.run("savepoint", first, f"file://{tmp_path}/sp", env=env, check=True)
    assert _savepoint_path(taken.stdout).startswith(f"file://{tmp_path}/sp/")
    stopped = flinkish_env.run(
        "stop", "--savepointPath", f"{yarn_cluster.fs}/savepoints/yarn", first, env=env,
        check=True,
    )  # fmt: skip
    savepoint = _savepoint_path(stopped.stdout)
    assert savepoint.startswith(f"{yarn_cluster.fs}/savepoints/yarn/")
    ended = flinkish_env.wait_for_state(first, {"FINISHED"}, timeout=120)
    stopped_at = ended["queries"]["rate"]["last-committed-batch"]
    _wait("the first application's end",
          lambda: yarn_cluster.rest(f"apps/{app_id}")["app"]["state"] == "FINISHED")  # fmt: skip

    # the resume, with one attempt only: its ApplicationMaster killed, it is YARN's last
    last = [a.replace("attempts=2", "attempts=1") for a in job]
    second = job_id_of(flinkish_env.run("run", "-d", "-s", savepoint, "-p", "2", *last, env=env,
                                        timeout=600, check=True).stdout)  # fmt: skip
    resumed = flinkish_env.wait_for_state(second, {"RUNNING"}, timeout=300)
    assert resumed["restored-from"] == savepoint
    second_app = resumed["yarn-application-id"]
    flinkish_env.wait_for_batches(second, "rate", stopped_at + 2, timeout=300)
    _assert_the_last_attempt_fails_under_a_kill(yarn_cluster, flinkish_env, second, second_app)

    # and resumes cleanly from its last checkpoint
    failed_at = flinkish_env.polled(second)["queries"]["rate"]["last-committed-batch"]
    checkpoint = str(flinkish_env.checkpoints / second)
    third = job_id_of(flinkish_env.run("run", "-d", "-s", checkpoint, "-p", "2", *last, env=env,
                                       timeout=600, check=True).stdout)  # fmt: skip
    assert flinkish_env.wait_for_state(third, {"RUNNING"}, timeout=300)["restarts"] == 0
    flinkish_env.wait_for_batches(third, "rate", failed_at + 2, timeout=300)
    flinkish_env.run("cancel", third, env=env, check=True)

    values = _committed_values(output)
    assert values == list(range(len(values))) and len(values) > 0, values[:20]


def _assert_the_last_attempt_fails_under_a_kill(
    yarn: Yarn, flinkish_env: FlinkishEnv, job_id: str, app_id: str
) -> None:
    """``kill -9`` of the ApplicationMaster's JVM of YARN's last attempt: the application
    ends FAILED, nothing of it runs on, and the job is FAILED with YARN's word for it in
    ``list`` and its exception history."""
    env = {"HADOOP_CONF_DIR": str(yarn)}
    (attempt,) = _attempts(yarn, app_id)
    os.kill(_am_jvm(yarn, attempt["containerId"]), 9)
    _wait("the application's end",
          lambda: yarn.rest(f"apps/{app_id}")["app"]["state"] == "FAILED")  # fmt: skip
    failed = flinkish_env.wait_for_state(job_id, {"FAILED"}, timeout=180)
    assert len(_attempts(yarn, app_id)) == 1  # no attempt after the last
    assert f"YARN application attempt 1 of {app_id}" in failed["failure-cause"], failed
    assert "YARN: attempt 1 FAILED" in failed["failure-cause"], failed
    (failure,) = failed["exceptions"]
    assert failure["cause"] == failed["failure-cause"], failed
    listed = flinkish_env.run("list", "-a", env=env, check=True).stdout
    assert f"{job_id} : " in listed and f"(FAILED) : {app_id}" in listed, listed
    running = [a["id"] for a in yarn.applications() if a["state"] in ("RUNNING", "ACCEPTED")]
    assert running == [], running
    _wait("the containers' end", lambda: not _container_pids(yarn), timeout=120)


#: An autoscaler that wants more than the job has as soon as batches run (a target
#: utilisation of 1 %), and may go from 1 to 2 (tests/runtime/test_rescale_in_place.py);
#: its window holds the rows a processing rate needs (at five rows a second).
EAGER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.interval": "1 s",
    "job.autoscaler.metrics.window": "40 s",
    "job.autoscaler.stabilization.interval": "3 s",
    "job.autoscaler.utilization.target": "0.01",
    "job.autoscaler.utilization.min": "0.005",
    "job.autoscaler.utilization.max": "0.02",
    "job.autoscaler.vertex.min-parallelism": "1",
    "job.autoscaler.vertex.max-parallelism": "2",
}


def test_a_yarn_job_on_hdfs_is_autoscaled_saves_periodically_and_rolls_an_upgrade_back(
    yarn_cluster: Yarn, flinkish_env: FlinkishEnv, tmp_path: Path
) -> None:
    """A yarn-application job whose registry, control channel, checkpoints and savepoints
    are on the YARN's HDFS: the autoscaler rescales it from 1 to 2 (a new application at the
    new parallelism, the same JobID, no restart counted), it takes periodic savepoints on
    HDFS, and an upgrade to a program that fails on YARN is rolled back, the previous program
    resuming from the upgrade's savepoint in an application of its own. Every row of the
    rate source is in the file sink once, none missing."""
    from flinkish_cli.client.jobs import JobClient
    from flinkish_cli.config import load_configuration

    output = tmp_path / "out"
    env = {"HADOOP_CONF_DIR": str(yarn_cluster)}
    root = f"flinkish-{uuid.uuid4().hex[:8]}"
    flinkish_env.write_conf(
        {**yarn_cluster.hdfs_conf(root), **EAGER,
         "flinkish.savepoint.periodic.interval": "4 s", "state.backend.type": "rocksdb"}
    )  # fmt: skip
    target = ["-t", "yarn-application", "-Dyarn.application-attempts=1",
              "-Djobmanager.memory.process.size=1g", "-Dtaskmanager.memory.process.size=1g",
              "-Dtaskmanager.numberOfTaskSlots=1"]  # fmt: skip
    args = [str(RATE_JOB), "--output", f"file://{output}"]
    started = flinkish_env.run("run", "-d", "-p", "1", *target, *args, env=env, timeout=600,
                               check=True)  # fmt: skip
    job_id = job_id_of(started.stdout)
    try:
        first_app = flinkish_env.wait_for_state(job_id, {"RUNNING"}, 300)["yarn-application-id"]
        client = JobClient(load_configuration(conf_dir=str(flinkish_env.conf_dir)))
        assert client.get(job_id).yarn_application == first_app  # read from HDFS

        # the autoscaler's rescale: a new application at parallelism 2, the same JobID
        def rescaled() -> bool:
            records = client.rescale_history(job_id).rescales
            return any(r.to_parallelism == 2 and r.outcome.value == "COMPLETED" for r in records)

        _wait("the autoscaler's rescale to 2", rescaled, timeout=400)
        status = _wait("the rescaled job", lambda: (j := client.get(job_id)).state.value
                       == "RUNNING" and j.parallelism == 2 and j)  # fmt: skip
        rescaled_app = status.yarn_application
        assert status.restarts == 0 and rescaled_app not in (None, first_app), status
        # YARN ended the first application FINISHED: no attempt of its own at parallelism 1
        assert yarn_cluster.rest(f"apps/{first_app}")["app"]["state"] == "FINISHED"
        assert len(_attempts(yarn_cluster, first_app)) == 1
        rescaled_at = flinkish_env.wait_for_batches(job_id, "rate", 1, timeout=300)

        # periodic savepoints, on HDFS
        def periodic() -> list[dict[str, Any]]:
            listed = flinkish_env.run("savepoint", "list", job_id, "--output", "json",
                                      env=env, check=True).stdout  # fmt: skip
            return [s for s in json.loads(listed)["savepoints"]
                    if s["trigger"] == "PERIODIC" and s["state"] == "COMPLETED"]  # fmt: skip

        (taken, *_) = _wait("a periodic savepoint", periodic, timeout=300)
        assert taken["path"].startswith(f"{yarn_cluster.fs}/{root}/savepoints/"), taken

        # an upgrade to a program that fails on YARN: rolled back to the previous program
        upgraded = flinkish_env.run("upgrade", *target, job_id, str(FAILS_AT_START), env=env,
                                    timeout=900)  # fmt: skip
        assert upgraded.returncode == 1, upgraded.stdout + upgraded.stderr[-3000:]
        assert f"Upgrade of job {job_id} rolled back: job " in upgraded.stdout, upgraded.stdout
        new_id, rollback = re.findall(r"submitted with JobID ([0-9a-f]{32})", upgraded.stdout)
        assert flinkish_env.polled(new_id)["state"] == "FAILED"
        back = flinkish_env.wait_for_state(rollback, {"RUNNING"}, timeout=300)
        assert back["yarn-application-id"] not in (None, first_app, rescaled_app)
        assert back["restored-from"].startswith(f"{yarn_cluster.fs}/{root}/savepoints/"), back
        flinkish_env.wait_for_batches(rollback, "rate", rescaled_at + 2, timeout=300)
        flinkish_env.run("cancel", rollback, env=env, check=True)
    finally:
        for listed in flinkish_env.list_jobs():
            if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                flinkish_env.run("cancel", listed["jid"], env=env, timeout=120)

    values = _committed_values(output)
    assert values == list(range(len(values))) and len(values) > 0, values[:20]
