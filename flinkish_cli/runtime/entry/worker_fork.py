"""Pre-started Python workers for a session cluster: a fork server and the launcher the
Spark Connect server runs as its Python (``PYSPARK_PYTHON``).

Spark Connect starts a new Python process for each ``foreachBatch`` query and each
streaming listener (``StreamingPythonRunner``: ``<python> -m
pyspark.sql.connect.streaming.worker.foreach_batch_worker``), and that process spends about
a second importing pyspark's Connect client (pandas, pyarrow, grpc) before the query's first
batch can run. No Spark setting pools or pre-starts these workers. So
``scripts/start-cluster.sh --session`` starts a **fork server** beside the Connect server:
one Python with those modules imported, which forks a ready worker for each request.

- **The launcher** (``python -S worker_fork.py <python's arguments>``, from the script the
  server has as ``PYSPARK_PYTHON``): for ``-m <one of PRESTARTED>`` it hands its standard
  streams (the descriptors, ``SCM_RIGHTS``), arguments, environment and working directory to
  the fork server over its Unix socket (``FLINKISH_WORKER_FORK``), forwards the signals the
  server sends it to the forked worker, and exits with the worker's status: to the server it
  is the worker. For anything else (``pyspark.daemon``, the UDF workers' daemon, any other
  command), or when the fork server does not answer, it becomes the real interpreter
  (``exec``), as if the launcher were not there.
- **The fork server** (``python worker_fork.py --serve SOCKET --parent PID``) forks one child
  per request: the child takes the streams, the environment (``PYTHONPATH`` entries first on
  its path), the directory and the arguments, then runs the module as ``__main__``, as
  ``python -m`` would. The zips on a worker's ``PYTHONPATH`` (Spark gives workers
  ``pyspark.zip``, py4j's zip and spark-core's jar, thousands of entries) have their
  directories read once, in the fork server, before it forks (:func:`_prime`): a worker's
  first import of a module it did not have read them again otherwise, about 80 ms a worker.
  The server reaps each child and sends its status back; a launcher
  that goes away (killed by the Connect server) takes its worker with it. It ends when the
  Connect server (``--parent``) is gone, and ends its workers then. A fork server that is
  killed leaves its workers running: each launcher then waits for its worker itself (and
  still passes signals on), so a running query keeps its worker.

Only the standard library (and, in the fork server, pyspark): the launcher runs without
``site`` so that it starts in milliseconds. Nothing secret is on a command line: the
environment travels over the socket, which only its owner can open.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator

#: The modules a worker is forked for (imported ahead in the fork server).
PRESTARTED = (
    "pyspark.sql.connect.streaming.worker.foreach_batch_worker",
    "pyspark.sql.connect.streaming.worker.listener_worker",
)
#: Where the launcher finds the fork server.
SOCKET_VARIABLE = "FLINKISH_WORKER_FORK"
#: The interpreter the launcher becomes when it does not hand over.
PYTHON_VARIABLE = "FLINKISH_WORKER_PYTHON"
_HEADER = struct.Struct("!I")


# -- the launcher ---------------------------------------------------------------------------
def launch(args: list[str]) -> None:
    """Run ``python ARGS`` as a worker forked by the fork server, or as the interpreter."""
    python = os.environ.pop(PYTHON_VARIABLE, sys.executable)
    path = os.environ.pop(SOCKET_VARIABLE, "")
    if len(args) == 2 and args[0] == "-m" and path:
        status = _hand_over(path, args)
        if status is not None:
            os._exit(status)
    os.execv(python, [python, *args])


def _hand_over(path: str, args: list[str]) -> int | None:
    """The forked worker's exit status; None when the fork server did not take the request."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        request = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()})
        body = request.encode()
        socket.send_fds(conn, [_HEADER.pack(len(body)) + body], [0, 1, 2])
        pid = _read_int(conn)
    except OSError:
        return None
    if pid is None:
        return None

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    try:
        status = _read_int(conn)
    except OSError:
        status = None
    if status is None:  # the fork server is gone (killed): the worker runs on, wait for it
        while _running(pid):
            time.sleep(0.2)
        return 1
    return status


def _running(pid: int) -> bool:
    """Whether the process runs (a zombie, ended and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return _alive(pid)


def _read_int(conn: socket.socket) -> int | None:
    data = b""
    while len(data) < 4:
        try:
            chunk = conn.recv(4 - len(data))
        except InterruptedError:
            continue
        if not chunk:
            return None
        data += chunk
    return int(_HEADER.unpack(data)[0])


# -- the fork server ------------------------------------------------------------------------
def serve(path: str, parent: int, modules: tuple[str, ...] = PRESTARTED) -> None:
    """Fork workers of ``modules`` for launchers until the process ``parent`` is gone (or
    this one is told to stop: SIGTERM)."""
    import importlib

    for module in modules:
        importlib.import_module(module)  # the second a worker spends: spent once, here
    _prime(_spark_python_path())
    _say(f"ready: {', '.join(modules)}")

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    with _listening(path) as listener:
        _loop(listener, parent, modules)


def _spark_python_path() -> list[str]:
    """What Spark puts on its Python workers' ``PYTHONPATH`` (``PythonUtils.sparkPythonPath``)
    for the pyspark installed here: its zips and spark-core's jar (a guess; each request's
    own entries are primed too)."""
    from pathlib import Path

    import pyspark

    home = Path(pyspark.__file__).parent
    found = [*sorted((home / "python" / "lib").glob("*.zip"))]
    found += sorted((home / "jars").glob("spark-core_*.jar"))
    return [str(path) for path in found]


def _prime(entries: list[str]) -> None:
    """Have the path entries' importers made (for a zip: its directory read) in this process,
    so that forked workers inherit them (``sys.path_importer_cache``)."""
    import pkgutil

    for entry in entries:
        if entry and entry not in sys.path_importer_cache:
            with contextlib.suppress(Exception):
                pkgutil.get_importer(entry)


def _say(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} fork server: {line}", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()


@contextlib.contextmanager
def _listening(path: str) -> Iterator[socket.socket]:
    """The fork server's socket at ``path`` (only its owner may connect), there once it
    listens (bound under a temporary name, then renamed), and removed at the end."""
    temporary = path + ".new"
    for stale in (path, temporary):  # a killed server's
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(temporary)
    finally:
        os.umask(old)
    listener.listen(16)
    os.replace(temporary, path)
    try:
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)


def _loop(listener: socket.socket, parent: int, modules: tuple[str, ...]) -> None:
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}  # pid -> its launcher's connection
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "wake")
    try:
        _serve_requests(listener, parent, modules, selector, children, (wake_read, wake_write))
    finally:
        for pid in list(children):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _serve_requests(
    listener: socket.socket,
    parent: int,
    modules: tuple[str, ...],
    selector: selectors.BaseSelector,
    children: dict[int, socket.socket],
    wake: tuple[socket.socket, socket.socket],
) -> None:
    wake_read = wake[0]
    while _alive(parent):
        for key, _events in selector.select(timeout=1.0):
            if key.data == "accept":
                _accept(listener, selector, children, modules, (listener, *wake))
            elif key.data == "wake":
                with contextlib.suppress(BlockingIOError):
                    wake_read.recv(4096)
            else:  # a launcher went away before its worker ended: the worker goes too
                pid = key.data
                selector.unregister(key.fileobj)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        _reap(children, selector)
    _say(f"the Connect server (pid {parent}) is gone: stopping")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _accept(
    listener: socket.socket,
    selector: selectors.BaseSelector,
    children: dict[int, socket.socket],
    modules: tuple[str, ...],
    own: tuple[socket.socket, ...],
) -> None:
    conn, _ = listener.accept()
    try:
        conn.settimeout(10)
        head, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
        (size,) = _HEADER.unpack(head)
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ConnectionError("the launcher went away")
            body += chunk
        request = json.loads(body)
        if len(fds) != 3:
            raise ValueError("not a worker request")
    except (OSError, ValueError, KeyError, IndexError):
        conn.close()
        return
    module = request["argv"][1]
    if module not in modules:  # the launcher runs it with the real interpreter
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    _prime(str(request["env"].get("PYTHONPATH", "")).split(os.pathsep))
    pid = os.fork()
    if pid == 0:
        _become_worker(request, fds, [conn, *own, *children.values()])
    for fd in fds:
        os.close(fd)
    _say(f"forked worker {pid} for {module}")
    conn.settimeout(None)
    conn.sendall(_HEADER.pack(pid))
    children[pid] = conn
    selector.register(conn, selectors.EVENT_READ, pid)


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.sendall(_HEADER.pack(code if code >= 0 else 128 - code))
        conn.close()


def _become_worker(request: dict, fds: list[int], close: list[socket.socket]) -> None:
    """In the forked child: become ``python -m <module>`` as the launcher was asked."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        for sock in close:
            sock.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        env = request["env"]
        os.environ.clear()
        os.environ.update(env)
        os.chdir(request["cwd"])
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [os.getcwd(), *(p for p in extra if p not in sys.path)]  # as python -m
        if env.get("PYTHONUNBUFFERED"):
            sys.stdout.reconfigure(write_through=True)  # type: ignore[union-attr]
        module = request["argv"][1]
        sys.argv = [module]
        import runpy

        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def main(argv: list[str]) -> None:
    """``--serve SOCKET --parent PID [--module M ...]``: the fork server (the modules it
    forks workers of: :data:`PRESTARTED` unless named); anything else: the launcher."""
    if argv[:1] != ["--serve"]:
        launch(argv)
        return
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # this script's directory is no worker's
    path, parent, modules = argv[1], os.getppid(), []
    options = argv[2:]
    while options:
        name, value, *options = options
        if name == "--parent":
            parent = int(value)
        elif name == "--module":
            modules.append(value)
        else:
            raise SystemExit(f"unknown option {name}")
    serve(path, parent, tuple(modules) or PRESTARTED)


if __name__ == "__main__":
    main(sys.argv[1:])
