"""``flinkish logs``: only the job's own log under env.log.dir, whatever its status file says."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.registry.logs import log_path, open_log, stream_log
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.processes import child_until_stdin_closes

JOB = "3f9c" + "0" * 28


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    return JobRegistry.open(str(tmp_path / "checkpoints"))


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "log"
    directory.mkdir()
    return directory


def _status(registry: JobRegistry, **fields: object) -> JobStatus:
    status = JobStatus(job_id=JOB, name="orders", state=JobState.RUNNING, pid=1)
    status.host = socket.gethostname()
    for key, value in fields.items():
        setattr(status, key, value)
    registry.write(status)
    return status


def _read(registry: JobRegistry, log_dir: Path, **kwargs: object) -> str:
    return "".join(stream_log(registry, JOB, str(log_dir), **kwargs))  # type: ignore[arg-type]


def test_the_log_path_comes_from_env_log_dir_and_a_valid_job_id(tmp_path: Path) -> None:
    assert log_path(str(tmp_path), JOB.upper()) == str(tmp_path / f"flinkish-{JOB}.log")
    with pytest.raises(JobError, match="not a valid JobID"):
        log_path(str(tmp_path), "../../etc/passwd")


def test_a_log_path_in_the_status_file_is_never_opened(
    tmp_path: Path, registry: JobRegistry, log_dir: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    _status(registry, log_path=str(secret), state=JobState.FINISHED)
    (log_dir / f"flinkish-{JOB}.log").write_text("the job's own log\n")
    assert _read(registry, log_dir) == "the job's own log\n"


def test_without_its_own_log_the_status_path_is_only_named(
    tmp_path: Path, registry: JobRegistry, log_dir: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    _status(registry, log_path=str(secret))
    with pytest.raises(JobError) as caught:
        _read(registry, log_dir)
    message = str(caught.value)
    assert f"has no log at {log_dir}/flinkish-{JOB}.log" in message
    assert "TOP SECRET" not in message


def test_a_log_on_another_host_is_named_with_that_host(
    registry: JobRegistry, log_dir: Path
) -> None:
    _status(registry, host="driver-host-7\x1b[31m", log_path="/var/log/flinkish/x.log")
    with pytest.raises(JobError, match=r"on host driver-host-7\?\[31m \(at /var/log/flinkish/x"):
        _read(registry, log_dir)


def test_a_link_inside_env_log_dir_is_followed(registry: JobRegistry, log_dir: Path) -> None:
    _status(registry, state=JobState.FINISHED)
    (log_dir / "archive").mkdir()
    (log_dir / "archive" / "real.log").write_text("rotated\n")
    (log_dir / f"flinkish-{JOB}.log").symlink_to(log_dir / "archive" / "real.log")
    assert _read(registry, log_dir) == "rotated\n"


def test_a_log_dir_that_is_itself_a_link_is_fine(
    tmp_path: Path, registry: JobRegistry, log_dir: Path
) -> None:
    _status(registry, state=JobState.FINISHED)
    (log_dir / f"flinkish-{JOB}.log").write_text("big disk\n")
    (tmp_path / "log-link").symlink_to(log_dir)
    assert _read(registry, tmp_path / "log-link") == "big disk\n"


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_a_link_out_of_env_log_dir_is_refused(
    tmp_path: Path, registry: JobRegistry, log_dir: Path, relative: bool
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    _status(registry, state=JobState.FINISHED)
    (log_dir / f"flinkish-{JOB}.log").symlink_to("../secret.txt" if relative else secret)
    with pytest.raises(JobError, match=r"symbolic link that leads out of env\.log\.dir") as caught:
        _read(registry, log_dir)
    assert "TOP SECRET" not in str(caught.value) and "secret.txt" not in str(caught.value)


@pytest.mark.timeout(30)
def test_a_pipe_or_directory_at_the_log_path_is_refused_without_blocking(
    registry: JobRegistry, log_dir: Path
) -> None:
    _status(registry)
    os.mkfifo(log_dir / f"flinkish-{JOB}.log")
    with pytest.raises(JobError, match="is not a regular file"):
        _read(registry, log_dir)
    os.unlink(log_dir / f"flinkish-{JOB}.log")
    (log_dir / f"flinkish-{JOB}.log").mkdir()
    with pytest.raises(JobError, match="is a directory"):
        _read(registry, log_dir)


def test_the_log_is_shown_when_the_status_is_damaged_or_gone(
    registry: JobRegistry, log_dir: Path
) -> None:
    (log_dir / f"flinkish-{JOB}.log").write_text("still here\n")
    assert _read(registry, log_dir, follow=True) == "still here\n"  # no status: no follow
    registry.storage.write_text(registry.status_path(JOB), "{damaged")
    assert _read(registry, log_dir, follow=True) == "still here\n"
    os.unlink(log_dir / f"flinkish-{JOB}.log")
    with pytest.raises(JobError, match=r"unreadable.*no log at"):
        _read(registry, log_dir)


def test_an_unknown_job_without_a_log(registry: JobRegistry, log_dir: Path) -> None:
    with pytest.raises(JobError, match=f"No job with JobID {JOB}.*and no log at"):
        _read(registry, log_dir)


def test_a_job_whose_driver_ran_in_the_cluster(registry: JobRegistry, log_dir: Path) -> None:
    _status(registry, log_path=None, master="yarn")
    with pytest.raises(JobError, match=r"driver ran in the cluster \(yarn\)"):
        _read(registry, log_dir)


def test_last_lines(registry: JobRegistry, log_dir: Path) -> None:
    _status(registry, state=JobState.FINISHED)
    (log_dir / f"flinkish-{JOB}.log").write_text("".join(f"line {i}\n" for i in range(10)))
    assert _read(registry, log_dir, last_lines=2) == "line 8\nline 9\n"


@pytest.mark.timeout(60)
def test_follow_prints_new_lines_until_the_job_ends(registry: JobRegistry, log_dir: Path) -> None:
    status = _status(registry)
    log = log_dir / f"flinkish-{JOB}.log"
    log.write_text("started\n")
    chunks = stream_log(registry, JOB, str(log_dir), follow=True)
    assert next(chunks) == "started\n"

    def finish() -> None:
        with open(log, "a") as out:
            out.write("batch 1\n")
        status.state = JobState.FINISHED
        registry.write(status)

    writer = threading.Timer(0.5, finish)
    writer.start()
    rest = "".join(chunks)
    writer.join()
    assert rest == "batch 1\n"


def test_open_log_gives_none_when_there_is_none(log_dir: Path) -> None:
    assert open_log(str(log_dir), JOB) is None
    (log_dir / f"flinkish-{JOB}.log").symlink_to(log_dir / "not-yet.log")
    assert open_log(str(log_dir), JOB) is None


def test_the_cli_reads_only_env_log_dir(flinkish_env: FlinkishEnv, tmp_path: Path) -> None:
    """A hostile status file pointing the log at another file: the CLI prints the job's own
    log, or says there is none, and never the other file."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    registry = JobRegistry.open(str(flinkish_env.checkpoints))
    _status(registry, log_path=str(secret))
    missing = flinkish_env.run("logs", JOB)
    assert missing.returncode == 1
    assert "TOP SECRET" not in missing.stdout + missing.stderr
    assert "has no log at" in missing.stderr and "Traceback" not in missing.stderr
    flinkish_env.logs.mkdir(exist_ok=True)
    (flinkish_env.logs / f"flinkish-{JOB}.log").write_text("own log\n")
    shown = flinkish_env.run("logs", JOB, "-n", "5")
    assert shown.returncode == 0 and shown.stdout == "own log\n"


@pytest.mark.timeout(60)
def test_follow_reads_the_supervisors_last_lines_after_the_jobs_end(
    registry: JobRegistry, log_dir: Path
) -> None:
    """The end is recorded, then the driver and its supervisor still write a line or two
    before they exit: `logs -f` shows them, as `kubectl logs -f` shows a container's last."""
    log = log_dir / f"flinkish-{JOB}.log"
    log.write_text("started\n")
    last_line = "open(sys.argv[1], 'a').write('Driver attempt 0 ended with status 0.\\n')"
    with child_until_stdin_closes(last_line, str(log)) as supervisor:
        _status(registry, state=JobState.FINISHED, supervisor_pid=supervisor.pid)
        chunks = stream_log(registry, JOB, str(log_dir), follow=True)
        assert next(chunks) == "started\n"

        # it writes and exits, and is not reaped until the end (as under a container's init
        # that reaps nothing): a zombie has ended
        threading.Timer(0.5, supervisor.stdin.close).start()  # type: ignore[union-attr]
        assert "".join(chunks) == "Driver attempt 0 ended with status 0.\n"
    # a pid that no longer runs (or one on another host) is not waited for
    _status(registry, state=JobState.FINISHED, supervisor_pid=supervisor.pid)
    assert _read(registry, log_dir, follow=True).endswith("status 0.\n")
