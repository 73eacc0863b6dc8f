"""The warm runner's protocol (:mod:`flinkish_cli.runtime.warm`, the server's pool
:mod:`flinkish_cli.submission.warm_runner`) with doubles, no Spark: a
spare is handed one run directory and serves that job only, a job of another environment
starts cold, a dead spare is replaced, end of file ends a waiting spare, and a supervisor's
first attempt (only) runs in the spare client. The real path (a Connect server, flinkish
web) is tests/submission/test_upload.py's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.plan.rundir import SupervisorSpec
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.runtime import warm
from flinkish_cli.runtime.supervisor.supervisor import Supervisor
from flinkish_cli.submission import warm_runner

JOB = "cd" * 16
REPO = Path(__file__).resolve().parents[2]

#: A spare's double: writes the line it is given (and its environment's MARK) to argv[1].
SPARE = textwrap.dedent("""
    import os, sys
    line = sys.stdin.readline()
    with open(sys.argv[1], "a") as out:
        out.write(f"{line.strip() or '<eof>'} {os.environ.get('MARK', '-')}\\n")
    sys.exit(3)
""")


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), **extra}


def _runner(tmp_path: Path) -> tuple[warm_runner.WarmRunner, Path]:
    seen = tmp_path / "seen"
    command = [sys.executable, "-c", SPARE, str(seen)]
    return warm_runner.WarmRunner(_env(MARK="job-env"), command).start(), seen


def _wait_for(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_spare_serves_one_job_and_the_next_one_starts_once_it_runs(tmp_path: Path) -> None:
    runner, seen = _runner(tmp_path)
    try:
        first = runner.spare_pid()
        assert first is not None
        assert runner.take(tmp_path / "run-x", _env(MARK="other")) is None  # another env: cold
        assert runner.spare_pid() == first
        spare = runner.take(tmp_path / "run-1", _env(MARK="job-env"))
        assert spare is not None and spare.pid == first
        assert spare.wait(10) == 3
        assert seen.read_text() == f"{tmp_path / 'run-1'} job-env\n"
        running = False
        runner.refill_after(lambda: running)
        time.sleep(3 * warm_runner.REFILL_POLL)
        assert runner.spare_pid() is None  # the next spare waits until the job runs
        running = True
        _wait_for(lambda: runner.spare_pid() is not None)
        second = runner.spare_pid()
        assert second != first and runner.taken == 1
        runner.refill_after(lambda: 1 / 0, timeout=0.1)  # a spare there already: no other
        time.sleep(0.3)
        assert runner.spare_pid() == second
    finally:
        runner.close()


def test_a_dead_spare_is_replaced_and_a_closed_runner_ends_its_spare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_runner, "WATCH_POLL", 0.05)
    monkeypatch.setattr(warm_runner, "SHORTEST_LIFE", 0.0)
    runner, seen = _runner(tmp_path)
    try:
        killed = runner.spare_pid()
        assert killed is not None
        os.killpg(killed, 9)  # in a session of its own: its group is its own
        _wait_for(lambda: runner.spare_pid() not in (None, killed))  # seen dead: replaced
        monkeypatch.setattr(warm_runner, "SHORTEST_LIFE", 60.0)
        dead = runner.spare_pid()
        assert dead is not None
        os.killpg(dead, 9)  # died young: replaced when the next job comes
        _wait_for(lambda: runner.spare_pid() is None)
        time.sleep(0.2)
        assert runner.spare_pid() is None
        spare = runner.take(tmp_path / "run-2", _env(MARK="job-env"))
        assert spare is not None and spare.pid != dead
        spare.wait(10)
        assert seen.read_text() == f"{tmp_path / 'run-2'} job-env\n"
        taken_none = runner.take(tmp_path / "run-3", _env(MARK="job-env"))  # no wait: a new one
        assert taken_none is not None
        taken_none.wait(10)
        _wait_for(lambda: len(seen.read_text().splitlines()) == 2)
    finally:
        runner.close()
    closed = tmp_path / "closed"
    closed.mkdir()
    runner, seen = _runner(closed)
    pid = runner.spare_pid()
    runner.close()
    assert runner.spare_pid() is None
    assert seen.read_text() == "<eof> job-env\n"  # end of file: it got no job
    assert runner.take(tmp_path / "run-4", _env(MARK="job-env")) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid or 0, 0)


def _spec(tmp_path: Path, argv: list[str], client: bool = True) -> SupervisorSpec:
    spec = SupervisorSpec(
        argv=argv, env={"SPARK_REMOTE": "sc://127.0.0.1:1"}, job_id=JOB,
        checkpoint_root=str(tmp_path / "checkpoints"), log_path=str(tmp_path / "log" / "job.log"),
        client=client,
    )  # fmt: skip
    spec.write(tmp_path)
    return spec


def _spare_client(tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SPARE, str(tmp_path / "client-seen")],
        stdin=subprocess.PIPE, env=_env(), start_new_session=True,
    )  # fmt: skip


def test_only_the_first_attempt_runs_in_the_spare_client(tmp_path: Path) -> None:
    argv = [sys.executable, warm.connect_client_file(), str(tmp_path)]
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    registry.write(JobStatus(job_id=JOB, name="job", state=JobState.CREATED))
    spec = _spec(tmp_path, argv)
    supervisor = Supervisor(tmp_path, spec, "a=b\n", registry, Configuration.from_flat({}))
    supervisor.warm_client = _spare_client(tmp_path)
    ended = supervisor._run_driver(0)
    assert ended.returncode == 3 and ended.client and not ended.reported
    assert (tmp_path / "client-seen").read_text() == f"{tmp_path} -\n"
    assert supervisor.warm_client is None  # a restart starts a cold client

    # a client of another Python is not the spare's: the spare is killed, the job starts cold
    other = _spare_client(tmp_path)
    supervisor.warm_client = other
    spec.argv = ["/other/python", warm.connect_client_file(), str(tmp_path)]
    assert supervisor._warm_client() is None
    assert other.wait(10) == -9


def test_a_spare_waits_for_its_run_directory_then_takes_the_jobs_streams(
    tmp_path: Path,
) -> None:
    _spec(tmp_path, [])
    code = (
        "import os, sys\n"
        "from flinkish_cli.runtime import warm\n"
        "warm.CLIENT_IMPORTS = ()\n"
        "run_dir = warm.client_wait()\n"
        "print('handed', run_dir, os.environ['SPARK_REMOTE'], sys.argv[1:], flush=True)\n"
        "print('an error line', file=sys.stderr)\n"
        "print('stdin', repr(sys.stdin.read()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=f"{tmp_path}\n".encode(), env=_env(),
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    lines = (tmp_path / "log" / "job.log").read_text().splitlines()
    assert lines == [
        f"handed {tmp_path} sc://127.0.0.1:1 ['{tmp_path}']",
        "an error line",
        "stdin ''",
    ]
    # end of file instead of a run directory: nothing handed, nothing written
    eof = subprocess.run(
        [sys.executable, "-c", code.replace("run_dir = ", "assert not ").split("print")[0]],
        input=b"", env=_env(), capture_output=True, timeout=60,
    )  # fmt: skip
    assert eof.returncode == 0, eof.stderr


def test_a_spare_supervisor_starts_its_client_and_ends_it_without_a_job(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from flinkish_cli.runtime import warm\n"
        f"client = [sys.executable, '-c', {SPARE!r}, {str(tmp_path / 'client-seen')!r}]\n"
        "handed = warm.serve_one_job(client)\n"
        "print('handed', handed[0] if handed else None)\n"
        "if handed: handed[1].stdin.write(b'x\\n'); handed[1].stdin.close(); handed[1].wait()\n"
    )
    _spec(tmp_path, [])
    done = subprocess.run(
        [sys.executable, "-c", code], input=f"{tmp_path}\n".encode(), env=_env(),
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "log" / "job.log").read_text() == f"handed {tmp_path}\n"
    assert (tmp_path / "client-seen").read_text() == "x -\n"
    quiet = subprocess.run(
        [sys.executable, "-c", code], input=b"", env=_env(), capture_output=True, timeout=60
    )
    assert quiet.stdout == b"handed None\n", quiet.stderr
    assert (tmp_path / "client-seen").read_text() == "x -\n<eof> -\n"  # its client ended too
