"""The session cluster's pre-started Python workers
(``flinkish_cli/runtime/entry/worker_fork.py``), at their seam: the launcher the Connect
server runs as its Python, and the fork server, with a stand-in worker module
(``tests/fixtures/fork_probe.py``) in place of pyspark's ``foreachBatch`` worker.

To the one who started it, a launcher is the worker: the worker's output on its streams, its
exit status, signals passed on, and a launcher killed takes its worker with it. Without a
fork server, or for a module it does not serve, the launcher is plain Python. The session
cluster itself (scripts/start-cluster.sh, a real Connect server) is tested in
tests/scripts/test_session_cluster_scripts.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flinkish_cli.runtime.warm import connect_client_file

ENTRY = Path(connect_client_file()).with_name("worker_fork.py")
REPO = Path(__file__).resolve().parents[2]
PROBE = "tests.fixtures.fork_probe"


def _wait(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie is gone too (its parent has not reaped it yet)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def start_server(socket_path: Path, parent: int, *modules: str) -> subprocess.Popen[str]:
    args = [sys.executable, str(ENTRY), "--serve", str(socket_path), "--parent", str(parent)]
    for module in modules or (PROBE,):
        args += ["--module", module]
    server = subprocess.Popen(
        args,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait(lambda: socket_path.exists() or server.poll() is not None, "the fork server ready")
    assert server.poll() is None, server.stderr.read() if server.stderr else ""
    return server


@pytest.fixture
def fork_server(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    path = tmp_path / "fork.sock"
    server = start_server(path, os.getpid())
    yield path, server
    server.terminate()
    server.wait(timeout=20)


def launcher(
    socket_path: Path, cwd: Path, module: str = PROBE, **env: str
) -> subprocess.Popen[str]:
    """``<the server's Python> -m module``, as the Connect server starts a worker."""
    environment = {
        **os.environ,
        "FLINKISH_WORKER_FORK": str(socket_path),
        "FLINKISH_WORKER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PROBE_PATH_ENTRY", "/nowhere")]),
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-S", str(ENTRY), "-m", module],
        env=environment,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(launched: subprocess.Popen[str], status: int = 0) -> dict:
    """The stand-in worker's report, once the launcher has exited with ``status``."""
    out, err = launched.communicate(timeout=60)
    assert launched.returncode == status, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_worker_is_forked_ready_with_its_environment_directory_and_status(
    fork_server: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    path, server = fork_server
    work = tmp_path / "work"
    work.mkdir()
    launched = launcher(path, work, PROBE_SECRET="s3cr3t", PROBE_EXIT="3")
    report = finished(launched, 3)
    assert report["preloaded"] is True, "forked from the fork server, imports done"
    assert report["ppid"] == server.pid
    assert report["cwd"] == str(work)
    assert report["secret"] == "s3cr3t"  # the environment travelled, never as an argument
    assert report["path_entry"] is False  # no PROBE_PATH_ENTRY here (next test)
    assert "s3cr3t" not in " ".join(launched.args)


def test_the_worker_gets_the_pythonpath_it_was_started_with(
    fork_server: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    path, _server = fork_server
    extra = tmp_path / "artifacts"
    extra.mkdir()
    assert finished(launcher(path, tmp_path, PROBE_PATH_ENTRY=str(extra)))["path_entry"] is True


def test_the_zips_on_a_workers_path_are_read_once_in_the_fork_server(
    fork_server: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    """As pyspark.zip and spark-core's jar are on a real worker's path: the worker finds
    the zip's importer made (its directory read) before it imports anything, and imports
    from it as usual."""
    import zipfile

    path, _server = fork_server
    zipped = tmp_path / "lib.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("zipped_probe_module.py", "VALUE = 42\n")
    report = finished(
        launcher(path, tmp_path, PROBE_PATH_ENTRY=str(zipped), PROBE_IMPORT="zipped_probe_module")
    )
    assert report["primed"] == "zipimporter" and report["imported"] == 42


def test_without_a_fork_server_the_launcher_is_python(tmp_path: Path) -> None:
    launched = launcher(tmp_path / "no-such.sock", REPO, PROBE_EXIT="4")
    report = finished(launched, 4)
    assert report["preloaded"] is False and report["pid"] == launched.pid  # exec'd


def test_a_module_the_server_does_not_serve_runs_in_python(tmp_path: Path) -> None:
    path = tmp_path / "fork.sock"
    server = start_server(path, os.getpid(), "json")
    try:
        assert finished(launcher(path, REPO))["preloaded"] is False
    finally:
        server.terminate()
        server.wait(timeout=20)


def _running_worker(path: Path, cwd: Path) -> tuple[subprocess.Popen[str], int]:
    launched = launcher(path, cwd, PROBE_SLEEP="120")
    assert launched.stdout is not None
    report = json.loads(launched.stdout.readline())
    return launched, int(report["pid"])


def test_a_killed_launcher_takes_its_worker_with_it(
    fork_server: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    launched, worker = _running_worker(fork_server[0], tmp_path)
    launched.kill()  # the Connect server's destroyForcibly, or its own death
    launched.wait(timeout=20)
    _wait(lambda: _gone(worker), "the worker gone")


def test_a_terminated_launcher_passes_the_signal_on_and_exits_as_its_worker(
    fork_server: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    launched, worker = _running_worker(fork_server[0], tmp_path)
    launched.send_signal(signal.SIGTERM)
    assert launched.wait(timeout=20) == 128 + signal.SIGTERM
    _wait(lambda: _gone(worker), "the worker gone")


def test_the_fork_server_ends_with_its_parent_and_removes_its_socket(tmp_path: Path) -> None:
    parent = subprocess.Popen(["sleep", "120"])
    path = tmp_path / "fork.sock"
    server = start_server(path, parent.pid)
    launched, worker = _running_worker(path, tmp_path)
    parent.kill()
    parent.wait()
    assert server.wait(timeout=20) == 0
    assert not path.exists()
    _wait(lambda: _gone(worker), "the worker gone with its server")
    launched.wait(timeout=20)
    assert server.stderr is not None and "is gone: stopping" in server.stderr.read()


def test_a_launcher_outlives_a_killed_fork_server_as_long_as_its_worker(tmp_path: Path) -> None:
    """The fork server killed (SIGKILL) while a worker runs: the worker goes on, and its
    launcher stays the worker to the Connect server until the worker ends."""
    path = tmp_path / "fork.sock"
    server = start_server(path, os.getpid())
    launched, worker = _running_worker(path, tmp_path)
    server.kill()
    server.wait(timeout=20)
    # the launcher saw its connection end: it now waits for the worker itself (between looks
    # it sleeps, where before it read its socket), and neither has ended
    _wait(lambda: _waits_in_a_sleep(launched.pid) or launched.poll() is not None, "a look")
    assert launched.poll() is None and not _gone(worker)
    launched.send_signal(signal.SIGTERM)  # what the Connect server does at the query's end
    assert launched.wait(timeout=20) == 1  # its status is unknown without the fork server
    _wait(lambda: _gone(worker), "the worker gone")


def _waits_in_a_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "hrtimer_nanosleep"
    except OSError:
        return False
