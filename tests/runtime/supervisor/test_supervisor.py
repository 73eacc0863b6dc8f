"""The supervisor's parts that need no Spark: what a dead driver's exit means, what it does
with the rescale a driver handed over (:mod:`flinkish_cli.registry.rescale_marker`), and the
job's temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.plan.job import PLAN_CONF_KEY, Entry, JobPlan
from flinkish_cli.plan.rundir import (
    OWNERS_FILE,
    SupervisorSpec,
    make_tmp_dir,
    parse_properties,
    properties_text,
)
from flinkish_cli.registry.rescale_marker import RescaleMarker, read_marker, write_marker
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime.restart import EXIT_RESCALE
from flinkish_cli.runtime.supervisor.exits import DriverExit
from flinkish_cli.runtime.supervisor.supervisor import Supervisor
from tests.fixtures.processes import child_until_stdin_closes, wait_exited


def test_causes_name_what_died() -> None:
    assert DriverExit(-9, True).cause() == "Spark's JVM exited with signal 9 (SIGKILL)."
    python = DriverExit(137, True).cause()
    assert "Python driver was killed by signal 9 (SIGKILL)" in python and "137" in python
    assert "heartbeats" in DriverExit(-9, True, hung=True).cause()
    assert "status 3" in DriverExit(3, True).cause()
    client = DriverExit(-9, True, client=True).cause()
    assert client == "The job's client process was killed by signal 9 (SIGKILL)."


# -- in-place rescales: what the supervisor does with the marker a driver left ----------------
JOB = "ab" * 16


def _supervisor(tmp_path: Path, master: str = "local[2]") -> Supervisor:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.RUNNING, parallelism=2))
    plan = JobPlan(
        job_id=JOB, name="job", entry=Entry("file", "/x/job.py"),
        checkpoint_root=str(tmp_path / "checkpoints"),
        flink_conf={"parallelism.default": "2", "taskmanager.numberOfTaskSlots": "1"},
        master=master, parallelism=2,
    )  # fmt: skip
    properties = properties_text(
        {
            PLAN_CONF_KEY: plan.encode(),
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        }
    )
    spec = SupervisorSpec(
        argv=["spark-submit", "--master", master, "driver.py"], env={}, job_id=JOB,
        checkpoint_root=str(tmp_path / "checkpoints"), log_path=str(tmp_path / "job.log"),
    )  # fmt: skip
    return Supervisor(tmp_path, spec, properties, registry, Configuration.from_flat({}))


def _planned(supervisor: Supervisor) -> tuple[JobPlan, dict[str, str]]:
    values = parse_properties(supervisor.properties)
    return JobPlan.decode(values[PLAN_CONF_KEY]), values


def test_a_handed_over_rescale_starts_the_next_driver_at_the_new_parallelism(
    tmp_path: Path,
) -> None:
    supervisor = _supervisor(tmp_path)
    write_marker(supervisor.registry, JOB, RescaleMarker("r1", 2, 3, "/sp/savepoint-x"))
    assert supervisor._rescaling(DriverExit(EXIT_RESCALE, True))
    plan, values = _planned(supervisor)
    assert plan.parallelism == 3 and plan.flink_conf["parallelism.default"] == "3"
    assert plan.restore is not None and plan.restore.rescale == "r1"
    assert plan.restore.source == "/sp/savepoint-x"
    assert values["spark.sql.shuffle.partitions"] == values["spark.default.parallelism"] == "3"
    assert supervisor.spec.argv[2] == "local[3]"
    marker = read_marker(supervisor.registry, JOB)
    assert marker is not None and marker.stage == "RESTARTED"
    assert supervisor.registry.get(JOB).state is JobState.RESTARTING

    # The driver at 3 died before the rescale completed: back to 2, from the same state.
    assert supervisor._rescaling(DriverExit(-9, True))
    plan, values = _planned(supervisor)
    assert plan.parallelism == 2 and values["spark.sql.shuffle.partitions"] == "2"
    assert plan.restore is not None and plan.restore.rescale == "r1"
    assert supervisor.spec.argv[2] == "local[2]"
    marker = read_marker(supervisor.registry, JOB)
    assert marker is not None and marker.stage == "ROLLING_BACK"
    # A rollback that dies is a failure as any other: the restart strategy decides.
    assert not supervisor._rescaling(DriverExit(-9, True))


def test_a_standalone_jobs_executors_take_as_many_cores_as_its_parallelism(
    tmp_path: Path,
) -> None:
    supervisor = _supervisor(tmp_path, "spark://127.0.0.1:7077")
    write_marker(supervisor.registry, JOB, RescaleMarker("r2", 2, 4, "/sp/savepoint-y"))
    assert supervisor._rescaling(DriverExit(EXIT_RESCALE, True))
    _, values = _planned(supervisor)
    assert values["spark.cores.max"] == "4"
    assert supervisor.spec.argv[2] == "spark://127.0.0.1:7077"


def test_no_marker_means_no_rescale(tmp_path: Path) -> None:
    supervisor = _supervisor(tmp_path)
    before = supervisor.properties
    assert not supervisor._rescaling(DriverExit(-9, True)), "a failure: the strategy decides"
    # A driver that ended for a rescale whose savepoint failed restarts as it was.
    assert supervisor._rescaling(DriverExit(EXIT_RESCALE, True))
    assert supervisor.properties == before


# -- the job's temporary directory -------------------------------------------------------------
def test_each_driver_gets_the_jobs_temporary_directory_emptied_and_the_job_takes_it_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system-tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again, as a new process does
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")
    (tmp_path / "system-tmp").mkdir()
    supervisor = _supervisor(tmp_path)
    supervisor.tmp_dir = make_tmp_dir(JOB)
    assert supervisor.tmp_dir.parent == tmp_path / "system-tmp"
    assert supervisor.tmp_dir.name.startswith(f"flinkish-{JOB}-")
    assert supervisor.tmp_dir.stat().st_mode & 0o777 == 0o700
    # what a killed driver left: Spark's scratch, a native library
    (supervisor.tmp_dir / "blockmgr-1" / "0a").mkdir(parents=True)
    (supervisor.tmp_dir / "librocksdbjni1.so").write_bytes(b"\0")
    env = supervisor._fresh_tmp_env()
    assert [path.name for path in supervisor.tmp_dir.iterdir()] == [OWNERS_FILE]
    assert env["TMPDIR"] == str(supervisor.tmp_dir)
    # the JVM's option after the caller's own (and before the job's env.java.opts)
    assert env["SPARK_SUBMIT_OPTS"] == (
        f"-XX:TieredStopAtLevel=1 -Djava.io.tmpdir={supervisor.tmp_dir}"
    )
    # the driver owns it with the supervisor (a killed supervisor's driver runs on in it)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as driver:
        supervisor.process = driver
        supervisor._claim_tmp_dir()
        owners = (supervisor.tmp_dir / OWNERS_FILE).read_text().splitlines()
        driver.kill()
    assert [int(line.split()[0]) for line in owners] == [os.getpid(), driver.pid]
    (supervisor.tmp_dir / "spark-1").mkdir()
    supervisor._clean()  # the job ended (its run directory, here tmp_path, goes too)
    assert not (tmp_path / "system-tmp").exists() or not any((tmp_path / "system-tmp").iterdir())


# -- the job's end: its line in the log before its state --------------------------------------
def test_the_end_line_is_logged_before_the_end_state_is_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`logs -f` stops once the status says the job ended, then reads what is left of the log:
    the line that says why must be in it by then."""
    supervisor = _supervisor(tmp_path)
    registry = supervisor.registry
    logged_at_write: list[list[str]] = []
    write = registry.write

    def write_seeing_the_log(status: JobStatus) -> None:
        logged_at_write.append([r.getMessage() for r in caplog.records])
        write(status)

    registry.write = write_seeing_the_log  # type: ignore[method-assign]
    with caplog.at_level("INFO", logger="flinkish"):
        supervisor._record(JobState.FAILED, "The driver was killed.")
    assert registry.get(JOB).state is JobState.FAILED
    assert logged_at_write and all(
        f"Job {JOB} ended FAILED: The driver was killed." in lines for lines in logged_at_write
    ), logged_at_write


# -- -sae: the attached client gone ------------------------------------------------------------
def test_an_attached_client_that_exited_cancels_the_job_even_unreaped(tmp_path: Path) -> None:
    """`run -sae`: the supervisor cancels the job once the attached client has exited, even
    when nobody has reaped it yet (a zombie, as under a container's init that reaps nothing)."""
    from flinkish_cli.registry.control import ControlChannel

    supervisor = _supervisor(tmp_path)
    with child_until_stdin_closes() as client:
        supervisor.spec.watch_pid = client.pid
        supervisor._watch_cli()
        assert ControlChannel(supervisor.registry, JOB).pending() == []  # it runs
        client.stdin.close()  # type: ignore[union-attr]
        wait_exited(client.pid)  # exited, not reaped
        supervisor._watch_cli()
        supervisor._watch_cli()  # once
        assert [r.action for r in ControlChannel(supervisor.registry, JOB).pending()] == ["cancel"]


@pytest.mark.parametrize(
    ("flink_conf", "parallelism", "cores"),
    [
        ({}, 4, "4"),
        ({"taskmanager.numberOfTaskSlots": "3"}, 2, "3"),  # at least one executor's slots
        ({"taskmanager.numberOfTaskSlots": "2"}, 5, "5"),
        ({"spark.cores.max": "6"}, 4, "6"),  # the job's own wins, at a rescale too
    ],
)
def test_a_rescale_holds_the_cores_run_p_would_hold(
    tmp_path: Path, flink_conf: dict[str, str], parallelism: int, cores: str
) -> None:
    """``run -p N`` on a standalone cluster and an in-place rescale to N take the same
    ``spark.cores.max`` (one rule: :func:`flinkish_cli.config.mappings.standalone_cores`)."""
    from flinkish_cli.config.translate import to_spark
    from flinkish_cli.submission.spark_submit import Deployment, build_command

    master = "spark://127.0.0.1:7077"

    def spark_conf(at: int) -> dict[str, str]:
        config = Configuration.from_flat({**flink_conf, "parallelism.default": str(at)})
        return dict(to_spark(config).conf)

    submitted = build_command(
        Deployment("remote", master, "client"), name="job", properties_file="/run/p",
        py_files=[], archives=[], spark_conf=spark_conf(parallelism), run_dir="/run",
    ).properties  # fmt: skip
    before = build_command(
        Deployment("remote", master, "client"), name="job", properties_file="/run/p",
        py_files=[], archives=[], spark_conf=spark_conf(2), run_dir="/run",
    ).properties  # fmt: skip
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.RUNNING, parallelism=2))
    plan = JobPlan(
        job_id=JOB, name="job", entry=Entry("file", "/x/job.py"),
        checkpoint_root=str(tmp_path / "checkpoints"),
        flink_conf={**flink_conf, "parallelism.default": "2"}, master=master, parallelism=2,
    )  # fmt: skip
    spec = SupervisorSpec(
        argv=["spark-submit", "--master", master, "driver.py"], env={}, job_id=JOB,
        checkpoint_root=str(tmp_path / "checkpoints"), log_path=str(tmp_path / "job.log"),
    )  # fmt: skip
    properties = properties_text({PLAN_CONF_KEY: plan.encode(), **before})
    supervisor = Supervisor(tmp_path, spec, properties, registry, Configuration.from_flat({}))
    write_marker(registry, JOB, RescaleMarker("r3", 2, parallelism, "/sp/savepoint-z"))
    assert supervisor._rescaling(DriverExit(EXIT_RESCALE, True))
    _, rescaled = _planned(supervisor)
    assert submitted["spark.cores.max"] == rescaled["spark.cores.max"] == cores
