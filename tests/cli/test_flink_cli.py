"""Flink's command lines with Flink's meaning, lines and exit statuses (no Spark).

Each test runs the real ``flinkish`` entry point in-process against a real registry on disk
whose job is answered by :class:`~tests.fixtures.fake_driver.FakeDriver` (a driver reduced to
its control channel), and checks what the command printed, its exit status, and the request
the job received. The same command lines run against live Spark jobs in
``test_flink_conformance.py``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flinkish_cli.cli.main import main
from flinkish_cli.cli.options import VERBOSE
from flinkish_cli.registry.control import DETACHED_TTL, ControlChannel, ControlRequest
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.fake_driver import FakeDriver

JOB = "3f9c12ab45cd67ef89013f9c12ab45cd"
OTHER = "0badc0ffee0badc0ffee0badc0ffee00"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@dataclass
class Env:
    root: Path
    work: Path
    checkpoints: Path
    savepoints: Path
    registry: JobRegistry
    capsys: pytest.CaptureFixture[str]

    def flinkish(self, *args: str) -> Result:
        """Run ``flinkish ARGS`` as the console script does; its exit status and output."""
        self.capsys.readouterr()
        VERBOSE["on"] = False
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def absolute(self, args: list[str]) -> list[str]:
        """``args`` with ``@abs`` replaced by a private absolute directory."""
        return [a.replace("@abs", str(self.root / "abs")) for a in args]

    def driver(self, job_id: str = JOB, answer: bool = True) -> FakeDriver:
        return FakeDriver(self.registry, job_id, answer=answer)

    def control_files(self, job_id: str = JOB) -> list[str]:
        directory = self.checkpoints / job_id / "_flinkish" / "control"
        return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture
def env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Env]:
    conf = tmp_path / "conf"
    conf.mkdir()
    checkpoints, savepoints, work = tmp_path / "cp", tmp_path / "sp", tmp_path / "work"
    work.mkdir()
    (conf / "flink-conf.yaml").write_text(
        f"execution.checkpointing.dir: {checkpoints}\n"
        f"execution.checkpointing.savepoint-dir: {savepoints}\n"
        "heartbeat.timeout: 50 s\n"
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLINKISH_VERBOSE", raising=False)
    monkeypatch.chdir(work)
    yield Env(tmp_path, work, checkpoints, savepoints, JobRegistry.open(str(checkpoints)), capsys)


@pytest.fixture
def driver(env: Env) -> Iterator[FakeDriver]:
    running = env.driver()
    yield running
    running.close()


def _only_request(driver: FakeDriver) -> ControlRequest:
    assert len(driver.requests) == 1, driver.requests
    return driver.requests[0]


# -- stop ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "target", "drain"),
    [
        (["stop", JOB], None, False),
        (["stop", "-p", JOB], None, False),  # the word after -p is the job: default directory
        (["stop", JOB, "-p"], None, False),
        (["stop", "-p", "-d", JOB], None, True),  # -d is --drain for stop
        (["stop", "-d", "-p", JOB], None, True),
        (["stop", "-p", "@abs/sp", JOB], "@abs/sp", False),
        (["stop", "--savepointPath=@abs/sp", "--drain", JOB], "@abs/sp", True),
        (["stop", "-p", "rel/sp", JOB], "work/rel/sp", False),
        (["stop", "-p", "./sp", "-d", JOB], "work/sp", True),
        (["stop", "-p", "s3://bucket/sp", JOB], "s3://bucket/sp", False),
    ],
)
def test_stop_forms(env: Env, driver: FakeDriver, args, target, drain) -> None:
    args, target = env.absolute(args), env.absolute([target])[0] if target else None
    result = env.flinkish(*args)
    assert result.code == 0, result
    request = _only_request(driver)
    assert request.action == "stop"
    expected = str(env.savepoints) if target is None else target
    if target and target.startswith("work/"):
        expected = str(env.root / target)
    assert request.args["target"] == expected
    assert request.args["drain"] is drain and request.args["savepoint"] is True
    assert "end_state" not in request.args
    doing = "Draining" if drain else "Suspending"
    path = result.lines[-1].removeprefix("Savepoint completed. Path: ")
    assert result.lines == [
        f'{doing} job "{JOB}" with a CANONICAL savepoint.',
        f"Triggering stop-with-savepoint for job {JOB}.",
        "Waiting for response...",
        f"Savepoint completed. Path: {path}",
    ]
    if "://" in expected:
        assert path.startswith(expected.rstrip("/") + "/savepoint-"), path
    else:
        assert Path(path).parent == Path(expected)
    assert env.registry.get(JOB).state is JobState.FINISHED
    assert env.control_files() == []  # the answered request is cleaned up


@pytest.mark.parametrize("given", ["native", "NATIVE", "Native"])
def test_stop_type_in_any_case(env: Env, driver: FakeDriver, given: str) -> None:
    result = env.flinkish("stop", "-type", given, JOB)
    assert result.code == 0
    assert result.lines[0] == f'Suspending job "{JOB}" with a NATIVE savepoint.'
    assert _only_request(driver).args["format_type"] == "NATIVE"


def test_stop_detached_returns_the_trigger_id_at_once(env: Env) -> None:
    silent = env.driver(answer=False)  # nobody answers: detached must not wait
    started = time.time()
    result = env.flinkish("stop", "-detached", "-p", JOB)
    assert result.code == 0, result
    assert result.lines[:2] == [
        f'Suspending job "{JOB}" with a CANONICAL savepoint.',
        f"Triggering stop-with-savepoint in detached mode for job {JOB}.",
    ]
    prefix = "Successfully trigger stop-with-savepoint in detached mode, triggerId: "
    assert result.lines[2].startswith(prefix) and len(result.lines) == 3
    trigger_id = result.lines[2].removeprefix(prefix)
    assert env.control_files() == [f"{trigger_id}.request.json"]
    # the job carries it out later, as long as a day from now
    pending = silent.channel.pending()
    assert [r.request_id for r in pending] == [trigger_id]
    assert pending[0].args["target"] == str(env.savepoints)
    assert pending[0].expires is not None and pending[0].expires >= started + DETACHED_TTL - 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stop"], "Missing JobId"),
        (["stop", "-p"], "Missing JobId"),
        (["stop", "-p", "./sp"], "'./sp' is not a valid JobID."),
        (["stop", "-type", "binary", JOB], "'binary' is not one of 'canonical', 'native'"),
    ],
)
def test_stop_usage_errors_exit_1(env: Env, args, message) -> None:
    result = env.flinkish(*args)
    assert result.code == 1
    assert message in result.err and "Traceback" not in result.err
    assert not env.checkpoints.exists()


# -- cancel ----------------------------------------------------------------------------------


def test_cancel_prints_flinks_lines(env: Env, driver: FakeDriver) -> None:
    result = env.flinkish("cancel", JOB)
    assert result.code == 0, result
    assert result.lines == [f"Cancelling job {JOB}.", f"Cancelled job {JOB}."]
    assert _only_request(driver).action == "cancel"
    assert env.registry.get(JOB).state is JobState.CANCELED


@pytest.mark.parametrize(
    ("args", "target", "where"),
    [
        (["cancel", "-s", JOB], None, "to default savepoint directory."),
        (["cancel", JOB, "-s"], None, "to default savepoint directory."),
        (["cancel", "-s", "@abs/sp", JOB], "@abs/sp", "to @abs/sp."),
        (["cancel", "--withSavepoint", "./sp", JOB], "work/sp", "to ./sp."),
    ],
)
def test_cancel_with_savepoint(env: Env, driver: FakeDriver, args, target, where) -> None:
    args, target = env.absolute(args), env.absolute([target])[0] if target else None
    where = env.absolute([where])[0]
    result = env.flinkish(*args)
    assert result.code == 0, result
    request = _only_request(driver)
    expected = str(env.savepoints) if target is None else target
    if target and target.startswith("work/"):
        expected = str(env.root / target)
    assert request.action == "stop"
    assert request.args["savepoint"] is True and request.args["drain"] is False
    assert request.args["target"] == expected
    assert request.args["end_state"] == "CANCELED"
    path = result.lines[-1].removeprefix(f"Cancelled job {JOB}. Savepoint stored in ")
    assert result.lines == [
        'DEPRECATION WARNING: Cancelling a job with savepoint is deprecated. Use "stop" instead.',
        f"Cancelling job {JOB} with CANONICAL savepoint {where}",
        f"Cancelled job {JOB}. Savepoint stored in {path}",
    ]
    assert Path(path.rstrip(".")).is_dir()
    assert env.registry.get(JOB).state is JobState.CANCELED


def test_cancel_without_job_exits_1(env: Env) -> None:
    result = env.flinkish("cancel")
    assert result.code == 1
    assert "Missing JobID. Specify a JobID to cancel a job." in result.err


# -- stop and cancel racing ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "won"),
    [(["cancel", JOB], JobState.FINISHED), (["stop", JOB], JobState.CANCELED)],
)
def test_losing_end_request_reports_the_jobs_actual_outcome(
    env: Env, driver: FakeDriver, args, won
) -> None:
    driver.other_end = won  # another stop or cancel got there first
    result = env.flinkish(*args)
    assert result.code == 1
    action = args[0]
    assert f"Cannot {action} job {JOB}: another request was already ending it; it ended " in (
        result.err
    )
    assert won.value in result.err and "Traceback" not in result.err


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        ("Cannot stop job {job}: it is CANCELLING.", "another request was already ending it"),
        (
            "Stop with savepoint failed after the queries stopped: disk full.",
            "Stop with savepoint failed after the queries stopped: disk full",
        ),
    ],
)
def test_refused_stop_names_the_outcome(env: Env, driver: FakeDriver, refusal, expected) -> None:
    driver.refusal, driver.other_end = refusal, JobState.FAILED
    result = env.flinkish("stop", JOB)
    assert result.code == 1
    assert f"ERROR: Cannot stop job {JOB}: {expected}; it ended FAILED." in result.err


# -- savepoint -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (["savepoint", JOB], None),
        (["savepoint", JOB, "@abs/sp"], "@abs/sp"),
        (["savepoint", JOB, "./sp"], "work/sp"),
        (["savepoint", "-type", "CANONICAL", JOB, "sp"], "work/sp"),
        (["savepoint", JOB, "~/sp"], "home/sp"),
    ],
)
def test_savepoint_forms(env: Env, driver: FakeDriver, args, target) -> None:
    args, target = env.absolute(args), env.absolute([target])[0] if target else None
    result = env.flinkish(*args)
    assert result.code == 0, result
    request = _only_request(driver)
    expected = str(env.savepoints) if target is None else target
    if target and not target.startswith("/"):
        expected = str(env.root / target)
    assert request.action == "savepoint" and request.args["target"] == expected
    path = result.lines[2].removeprefix("Savepoint completed. Path: ")
    assert result.lines == [
        f"Triggering savepoint for job {JOB}.",
        "Waiting for response...",
        f"Savepoint completed. Path: {path}",
        "You can resume your program from this savepoint with the run command.",
    ]
    assert Path(path).parent == Path(expected)


def test_savepoint_ignores_extra_arguments_as_flink_does(env: Env, driver: FakeDriver) -> None:
    result = env.flinkish("savepoint", JOB, str(env.root / "abs"), "extra")
    assert result.code == 0
    assert (
        result.lines[0] == "Provided more arguments than required. Ignoring not needed arguments."
    )


def test_savepoint_detached(env: Env) -> None:
    silent = env.driver(answer=False)
    result = env.flinkish("savepoint", JOB, "./sp", "-detached")
    assert result.code == 0, result
    assert result.lines[0] == f"Triggering savepoint in detached mode for job {JOB}."
    prefix = "Successfully trigger manual savepoint, triggerId: "
    assert result.lines[1].startswith(prefix) and len(result.lines) == 2
    (pending,) = silent.channel.pending()
    assert pending.request_id == result.lines[1].removeprefix(prefix)
    assert pending.action == "savepoint" and pending.args["target"] == str(env.work / "sp")
    json_result = env.flinkish("savepoint", "--detached", "-o", "json", JOB)
    assert json.loads(json_result.out)["jid"] == JOB


def test_savepoint_dispose_lines_and_refusal(env: Env) -> None:
    not_a_savepoint = env.work / "data"
    not_a_savepoint.mkdir()
    result = env.flinkish("savepoint", "-d", str(not_a_savepoint))
    assert result.lines == [f"Disposing savepoint '{not_a_savepoint}'.", "Waiting for response..."]
    assert result.code == 1 and result.err.startswith("ERROR: ")
    assert not_a_savepoint.is_dir()


def test_savepoint_dispose_with_one_dash_is_dispose_not_d_ispose(env: Env) -> None:
    """commons-cli reads ``-dispose`` as the long option (a short one would be ``-d``)."""
    path = env.work / "nothing"
    result = env.flinkish("savepoint", "-dispose", str(path))
    assert result.lines[0] == f"Disposing savepoint '{path}'."
    assert result.code == 1 and result.err.startswith(f"ERROR: {path} is not a savepoint")


@pytest.mark.parametrize(
    ("args", "target", "drain"),
    [
        (["stop", "-savepointPath", "@abs/sp", "-drain", JOB], "@abs/sp", True),
        (["stop", "-savepointPath=@abs/sp", JOB], "@abs/sp", False),
    ],
)
def test_long_options_with_one_dash(env: Env, driver: FakeDriver, args, target, drain) -> None:
    result = env.flinkish(*env.absolute(args))
    assert result.code == 0, result
    request = _only_request(driver)
    assert request.args["target"] == env.absolute([target])[0]
    assert request.args["drain"] is drain


# -- checkpoint ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "kind"), [([], ""), (["-full"], "(FULL)"), (["--full"], "(FULL)")]
)
def test_checkpoint_prints_its_number(env: Env, driver: FakeDriver, flag, kind) -> None:
    result = env.flinkish("checkpoint", *flag, JOB)
    assert result.code == 0, result
    # each micro-batch is a checkpoint: the highest committed batch (7) is checkpoint 8
    assert result.lines == [
        f"Triggering checkpoint for job {JOB}.",
        "Waiting for response...",
        f"Checkpoint{kind} 8 for job {JOB} completed.",
        "You can resume your program from this checkpoint with the run command.",
    ]
    assert "counts at batch 4, raw at batch 7" in result.err


# -- list ------------------------------------------------------------------------------------


def test_list_prints_flinks_sections(env: Env, driver: FakeDriver) -> None:
    result = env.flinkish("list")
    assert result.code == 0
    start = time.strftime("%d.%m.%Y %H:%M:%S", time.localtime(driver.status.start_time))
    assert result.lines == [
        "Waiting for response...",
        "------------------ Running/Restarting Jobs -------------------",
        f"{start} : {JOB} : counts_job (RUNNING)",
        "--------------------------------------------------------------",
        "No scheduled jobs.",
    ]
    # -a with no terminated job prints nothing for that section
    assert env.flinkish("list", "-a").lines == result.lines
    assert env.flinkish("list", "-r").lines == result.lines[:4]
    assert env.flinkish("list", "-s").lines == ["Waiting for response...", "No scheduled jobs."]


def test_list_terminated_section(env: Env) -> None:
    FakeDriver(env.registry, JOB, answer=False).end(JobState.CANCELED)
    assert env.flinkish("list").lines == [
        "Waiting for response...",
        "No running jobs.",
        "No scheduled jobs.",
    ]
    lines = env.flinkish("list", "-a").lines
    assert lines[:3] == ["Waiting for response...", "No running jobs.", "No scheduled jobs."]
    assert lines[3] == "---------------------- Terminated Jobs -----------------------"
    assert lines[4].endswith(f" : {JOB} : counts_job (CANCELED)")
    assert lines[5] == "-" * 62 and len(lines) == 6


@pytest.mark.parametrize(
    "general",
    [
        ["-m", "local[2]"],  # a Spark master names no REST endpoint: storage
        ["--jobmanager", "yarn-cluster"],
        ["-t", "remote"],
        ["-e", "yarn-session"],
        ["-z", "/flink/ns"],
        ["-yid", "application_1_2"],
        ["-D", "rest.port=8082"],
    ],
)
def test_general_options_on_registry_actions(env: Env, driver: FakeDriver, general) -> None:
    listing = env.flinkish("list", *general)
    assert listing.code == 0, listing
    assert f" : {JOB} : counts_job (RUNNING)" in listing.out
    if general[0] in ("-z", "-yid"):
        assert "is ignored" in listing.err
    savepoint = env.flinkish("savepoint", *general, JOB)
    assert savepoint.code == 0, savepoint
    assert env.flinkish("checkpoint", JOB, *general).code == 0


@pytest.mark.parametrize(
    ("jobmanager", "message"),
    [
        ("localhost:1", "Nothing answers at localhost:1 (Connection refused)."),
        ("localhost", "'localhost' is not the address of a REST endpoint (host:port)"),
    ],
)
def test_m_names_the_rest_endpoint_never_a_silent_fall_back(
    env: Env, driver: FakeDriver, jobmanager: str, message: str
) -> None:
    """``-m host:port`` on a job action is the REST endpoint it goes through: nothing there
    is one error (exit 1), the job untouched, never the registry read instead."""
    for args in (["list"], ["savepoint", JOB], ["cancel", JOB], ["checkpoint", JOB]):
        result = env.flinkish(*args, "-m", jobmanager)
        assert result.code == 1, result
        assert result.err.startswith(f"ERROR: {message}") and "Traceback" not in result.err
        assert not result.out
    assert driver.requests == []
    assert env.registry.get(JOB).state is JobState.RUNNING


def test_a_damaged_status_file_never_breaks_list(env: Env, driver: FakeDriver) -> None:
    for job_id, content in [
        (OTHER, "{not json"),
        ("ffffffffffffffffffffffffffffffff", json.dumps({"job_id": JOB, "name": "copied"})),
        ("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", json.dumps(["a", "list"])),
    ]:
        status = env.checkpoints / job_id / "_flinkish" / "status.json"
        status.parent.mkdir(parents=True)
        status.write_text(content)
    result = env.flinkish("list", "-a")
    assert result.code == 0
    assert f" : {JOB} : counts_job (RUNNING)" in result.out
    assert "---------------------- Unreadable Jobs -----------------------" in result.out
    unknown = [line for line in result.lines if line.endswith("(UNKNOWN)")]
    assert len(unknown) == 3 and any(OTHER in line for line in unknown)
    assert f"The status file of job {OTHER} is unreadable (it is not valid JSON" in result.err
    assert "names another job" in result.err
    document = json.loads(env.flinkish("list", "-o", "json").out)
    states = {job["jid"]: job["state"] for job in document["jobs"]}
    assert states[JOB] == "RUNNING" and states[OTHER] == "UNKNOWN"
    for action in (["cancel"], ["stop"], ["savepoint"], ["stop", "-p"], ["cancel", "-s"]):
        refused = env.flinkish(*action, OTHER)
        assert refused.code == 1
        assert f"job {OTHER}: its status file is unreadable" in refused.err
        assert "Traceback" not in refused.err


# -- exit statuses and top-level forms -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Please specify an action."),
        (["frobnicate"], '"frobnicate" is not a valid action.'),
        (["list", "--bogus"], "No such option"),
        (["list", "extra"], "unexpected extra argument"),
        (["savepoint"], "Missing JobID. Specify a Job ID to trigger a savepoint."),
        (["checkpoint"], "Missing JobID. Specify a Job ID to manipulate a checkpoint."),
        (["cancel", "not-a-job-id"], "'not-a-job-id' is not a valid JobID."),
        (["savepoint", "-d"], "requires an argument"),
        (["run", "-p", "0", "job.py"], "0 is not in the range x>=1"),
        (["run", "-pym", "pkg.job"], "-pym pkg.job needs -pyfs"),
    ],
)
def test_every_error_exits_1(env: Env, args, message) -> None:
    result = env.flinkish(*args)
    assert result.code == 1, result
    assert message in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["run", "-c", "com.acme.Job", "job.py"], "-c/--class com.acme.Job"),
        (["run", "--class", "com.acme.Job"], "-c/--class com.acme.Job"),
        (["run", "-C", "file:///lib/x.jar", "job.py"], "-C/--classpath"),
        (["run", "-j", "job.jar"], "-j/--jarfile job.jar"),
        (["run", "-d", "job.jar", "--input", "x"], "job.jar"),
        (["run-application", "-t", "yarn-application", "Job.JAR"], "Job.JAR"),
        (["info", "job.jar"], "job.jar"),
        (["info", "-c", "com.acme.Job", "job.py"], "-c/--class com.acme.Job"),
        (["savepoint", "-d", "/sp/savepoint-1", "-j", "job.jar"], "-j/--jarfile job.jar"),
    ],
)
def test_java_only_input_is_refused_in_one_line(env: Env, args, named) -> None:
    result = env.flinkish(*args)
    assert result.code == 1
    assert result.err.startswith("ERROR: flinkish runs Python jobs: ")
    assert named in result.err and len(result.err.splitlines()) == 1
    assert result.out == ""


@pytest.mark.parametrize("flag", ["-v", "--version"])
def test_version_in_flinks_form(env: Env, flag: str) -> None:
    from flinkish_cli import __version__

    result = env.flinkish(flag)
    assert result.code == 0
    (line,) = result.lines
    assert line == f"Version: {__version__}" or line.startswith(
        f"Version: {__version__}, Commit ID: "
    )
    if ", Commit ID: " in line:
        assert len(line.rsplit(" ", 1)[-1]) == 7


def test_verbose_on_an_action_shows_the_traceback(env: Env) -> None:
    quiet = env.flinkish("cancel", "not-a-job-id")
    assert "Traceback" not in quiet.err
    loud = env.flinkish("cancel", "-v", "not-a-job-id")
    assert loud.code == 1 and "Traceback" in loud.err
    assert env.flinkish("cancel", "--verbose", "not-a-job-id").code == 1


# -- run: option meaning (submission is replaced by a recorder) ------------------------------


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch, env: Env) -> list:
    calls: list = []

    def record(request, config, presenter) -> None:
        calls.append((request, config))

    monkeypatch.setattr("flinkish_cli.submission.run.submit_and_follow", record)
    (env.work / "job.py").write_text("print('hi')\n")
    return calls


def test_run_general_and_python_options(env: Env, submitted: list) -> None:
    result = env.flinkish(
        "run", "-d", "-m", "127.0.0.1:15002", "-t", "remote", "-pypath", "/opt/py/lib",
        "-s", "sp/savepoint-1", "-rm", "CLAIM", "-sae", "job.py", "--input", "x",
    )  # fmt: skip
    assert result.code == 0, result
    ((request, config),) = submitted
    assert request.jobmanager == "127.0.0.1:15002" and request.target == "remote"
    assert request.detached and request.shutdown_on_attached_exit
    assert request.script == "job.py" and request.args == ["--input", "x"]
    assert request.from_savepoint == str(env.work / "sp" / "savepoint-1")
    assert request.claim_mode == "claim"
    assert config.get("python.pythonpath") == "/opt/py/lib"
    assert config.get("execution.target") == "remote"
    assert "The option 'restoreMode' is deprecated. Please use 'claimMode' instead." in result.err


def test_run_long_options_with_one_dash_stop_at_the_job(env: Env, submitted: list) -> None:
    result = env.flinkish(
        "run", "-detached", "-parallelism", "3", "-fromSavepoint", "sp/savepoint-1",
        "-jobmanager", "127.0.0.1:15002", "job.py", "-parallelism", "9", "-detached",
    )  # fmt: skip
    assert result.code == 0, result
    ((request, config),) = submitted
    assert request.detached and request.jobmanager == "127.0.0.1:15002"
    assert request.from_savepoint == str(env.work / "sp" / "savepoint-1")
    assert config.get("parallelism.default") == 3
    assert request.args == ["-parallelism", "9", "-detached"]  # the job's own, untouched


def test_run_executor_is_target_and_z_is_ignored(env: Env, submitted: list) -> None:
    result = env.flinkish("run", "-e", "remote", "-z", "/ns", "job.py")
    assert result.code == 0
    assert submitted[0][0].target == "remote"
    assert "-z/--zookeeperNamespace is ignored" in result.err
    env.flinkish("run", "-e", "remote", "-t", "local", "job.py")
    assert submitted[1][0].target == "local"  # -t wins over -e, as in Flink


def test_run_refuses_yid(env: Env, submitted: list) -> None:
    result = env.flinkish("run", "-yid", "application_1_2", "job.py")
    assert result.code == 1 and "-yid/--yarnapplicationId cannot be used with 'run'" in result.err
    assert submitted == []


def test_run_application_needs_an_application_target(env: Env, submitted: list) -> None:
    refused = env.flinkish("run-application", "job.py")
    assert refused.code == 1
    assert "'run-application' needs an application target, and the target is local." in (
        refused.err
    )
    assert submitted == []
    accepted = env.flinkish("run-application", "-t", "kubernetes-application", "job.py")
    assert accepted.code == 0
    assert submitted[0][0].target == "kubernetes-application"
    assert "'run-application' was removed in Flink 2.0" in accepted.err


# -- run: what an attached run prints ---------------------------------------------------------


def test_attached_run_prints_flinks_lines_and_keeps_batches_off_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flinkish_cli.cli.commands.run import RunPresenter
    from flinkish_cli.registry.status import JobStatus, Progress
    from flinkish_cli.submission.follow import Update

    status = JobStatus(job_id=JOB, name="counts_job", state=JobState.RUNNING)
    progress = Progress(batch_id=0, timestamp="2026-11-21T10:00:00.000Z", input_rows=3)
    presenter = RunPresenter("text")
    presenter.submitted(JOB)
    presenter.output_line("a line the script printed")
    presenter.update(Update(status=status, batches=[("counts", progress)]))
    status.state, status.end_time = JobState.FINISHED, status.start_time + 1.5
    presenter.ended(status, detached=False)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"Job has been submitted with JobID {JOB}",
        "a line the script printed",
        "Program execution finished",
        f"Job with JobID {JOB} has finished.",
        "Job Runtime: 1500 ms",
        "",
    ]
    assert "query=counts batch=0 " in captured.err


# -- control requests: expiry and withdrawal --------------------------------------------------


def test_a_request_that_times_out_is_withdrawn(env: Env) -> None:
    from flinkish_cli.client.asking import ask
    from flinkish_cli.errors import JobError
    from flinkish_cli.registry.protocol import TriggerSavepoint

    silent = env.driver(answer=False)
    with pytest.raises(JobError, match="did not answer the savepoint request within 1 s; the "):
        ask(env.registry, JOB, TriggerSavepoint("/sp"), timeout=0.6)
    assert env.control_files() == []
    assert silent.channel.pending() == []  # a driver that wakes up later finds nothing


def test_an_interrupted_request_is_withdrawn(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.driver(answer=False)

    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("flinkish_cli.client.asking.time.sleep", interrupt)
    result = env.flinkish("savepoint", JOB)
    assert result.code == 130
    assert f"Interrupted: the savepoint request to job {JOB} was withdrawn" in result.err
    assert env.control_files() == []


def test_a_request_the_job_took_is_not_withdrawn(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    silent = env.driver(answer=False)
    calls = []

    def take_then_interrupt(_seconds: float) -> None:
        calls.append(silent.channel.pending())  # the driver claims it, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr("flinkish_cli.client.asking.time.sleep", take_then_interrupt)
    result = env.flinkish("savepoint", JOB)
    assert result.code == 130 and len(calls[0]) == 1
    assert f"job {JOB} had already started the savepoint request; it may still complete" in (
        result.err
    )


def test_a_damaged_response_is_a_clear_error(env: Env, driver: FakeDriver) -> None:
    driver.damaged_response = "<html>not json</html>"
    result = env.flinkish("savepoint", JOB)
    assert result.code == 1
    assert f"Savepoint of job {JOB} failed: its response" in result.err
    assert "is unreadable" in result.err and "Traceback" not in result.err


def test_broken_pipe_does_not_change_the_exit_status(env: Env, driver: FakeDriver) -> None:
    import subprocess
    import sys

    flinkish = str(Path(sys.executable).with_name("flinkish"))
    for _ in range(3):
        # `list | head -1` closes the pipe after the first line
        result = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {flinkish} list -a | head -1"],
            capture_output=True,
            text=True,
            env={**os.environ},
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Waiting for response...\n"
        assert "BrokenPipe" not in result.stderr


def test_channel_request_files_are_plain_json(env: Env) -> None:
    channel = ControlChannel(env.registry, JOB)
    request = channel.send(ControlRequest("cancel"))
    document = json.loads((env.checkpoints / JOB / "_flinkish" / "control" / (
        f"{request.request_id}.request.json")).read_text())  # fmt: skip
    assert document["action"] == "cancel" and "expires" in document


# -- savepoint list --------------------------------------------------------------------------


def test_savepoint_list_reads_the_history_newest_first(env: Env, driver: FakeDriver) -> None:
    from flinkish_cli.registry.history import (
        SavepointHistory,
        SavepointRecord,
        SavepointState,
        Trigger,
    )

    history = SavepointHistory(env.registry)
    old = f"{env.savepoints}/savepoint-3f9c12-000000000001"
    new = f"{env.savepoints}/savepoint-3f9c12-000000000002"
    history.record(SavepointRecord(JOB, Trigger.MANUAL, SavepointState.COMPLETED, old, size=5))
    history.record(SavepointRecord(JOB, Trigger.STOP, SavepointState.FAILED, str(env.savepoints)))
    history.record(SavepointRecord(JOB, Trigger.PERIODIC, SavepointState.COMPLETED, new, size=9))
    listed = env.flinkish("savepoint", "list", JOB, "--output", "json")
    assert listed.code == 0, listed
    records = json.loads(listed.out)["savepoints"]
    assert [(r["trigger"], r["state"], r["path"]) for r in records] == [
        ("PERIODIC", "COMPLETED", new),
        ("STOP", "FAILED", str(env.savepoints)),
        ("MANUAL", "COMPLETED", old),
    ]
    assert set(records[0]) >= {"job_id", "trigger", "time", "path", "state", "size"}
    text = env.flinkish("savepoint", "list")  # every job's, plain text off a terminal
    assert text.code == 0 and text.lines[0].split()[:1] == ["time"]
    assert [line.split()[-1] for line in text.lines[1:]] == [new, str(env.savepoints), old]


def test_savepoint_list_refuses_what_it_cannot_list(env: Env) -> None:
    unknown = env.flinkish("savepoint", "list", "0" * 32)
    assert unknown.code == 1 and f"No job with JobID {'0' * 32}" in unknown.err
    assert "Traceback" not in unknown.err
    extra = env.flinkish("savepoint", "list", JOB, "more")
    assert extra.code != 0 and "Usage: flinkish savepoint list [<JobID>]" in extra.err
    bad = env.flinkish("savepoint", "list", "not-a-job-id")
    assert bad.code != 0 and "not-a-job-id" in bad.err
    assert env.flinkish("savepoint", "list").out.strip() == "No savepoints."
