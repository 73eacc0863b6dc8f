"""A savepoint whose process is SIGKILLed at any moment is refused or whole, never between.

Without Spark. A child process takes a real savepoint (:func:`~flinkish_cli.savepoints.create.
take_savepoint`, the real :class:`~flinkish_cli.storage.LocalStorage`) of two query
checkpoints as Spark leaves them (:func:`~tests.savepoints.checkpoints.fake_checkpoint`),
and SIGKILLs itself after its Nth change to the disk (:mod:`tests.savepoints.kill_points`:
a fault injector in the child only). A first run without a kill lists every change (about
180 with hard links, 300 with copies); then a child is killed right after each chosen change
(and one before the first), so the kill moves across the whole savepoint: before any file,
after the savepoint's directory, among each query's directories and data files (a copy's
temporary file empty, written, renamed), between the two queries, after all the data before
and during its ``fsync``, after the manifest's temporary file (created, then written and
synced) before its rename, after the rename, after the rename's ``fsync``. Both ways of
copying are covered: hard links (one file system) and copies (as between two). The short
form kills at the first, middle and last changes of each step and at every change of the
manifest (about 30 kills per way, a few seconds); with ``FLINKISH_SOAK_ROUNDS`` set it
kills after every change (:func:`kill_points`).

What each leftover must be is judged by the leftover itself, never by the timing:

- **refused** -- ``flinkish savepoint info`` (the console script's entry point, run in this
  process) exits 1 with one ``ERROR:`` line naming the path (and its hint line), ``run
  -s``'s pre-flight check
  (:func:`~flinkish_cli.savepoints.restore.plan_restore`, which runs before anything
  starts) refuses it with the same message, and ``savepoint -d`` refuses it too, leaving
  every file as it was (see :func:`~flinkish_cli.savepoints.dispose.dispose`: a directory
  without a manifest cannot be told from a savepoint being written right now);
- or **whole** -- ``info`` accepts it, every file the manifest lists has the size and SHA-256
  the manifest says (computed here, with hashlib), the savepoint holds exactly those files,
  byte for byte the checkpoint's, ``run -s``'s check accepts it, each query restored from
  it (:func:`~flinkish_cli.savepoints.restore.restore_query`, what the job's driver runs)
  resumes at its last committed batch with the next batch's planned offsets (a resumed
  query replays exactly that batch: nothing skipped, nothing done twice), and ``savepoint
  -d`` disposes of it.

And the line between the two is the manifest's rename: every kill before it leaves a refused
leftover, every kill from it on a whole savepoint. The real ``flinkish`` binary is run on one
leftover of each kind as well (``run -s`` of a refused one: exit 1, nothing started; ``run
-s`` of a whole one would start Spark, so that is ``test_driver_failover.py``'s).
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.cli.main import main
from flinkish_cli.config import Configuration
from flinkish_cli.errors import SavepointError
from flinkish_cli.savepoints.restore import open_source, plan_restore, restore_query
from flinkish_cli.storage import LocalStorage
from flinkish_cli.submission.submit import RunRequest
from tests.fixtures.flinkish_env import COUNTS_JOB, FlinkishEnv
from tests.fixtures.long_form import LONG_FORM
from tests.fixtures.savepoint_files import assert_whole, tree
from tests.savepoints.checkpoints import fake_checkpoint
from tests.savepoints.kill_points import KillSpec, take_savepoint_and_die

JOB = "c0ffee" + "0" * 26
COMMITTED = {"counts": 2, "raw": 1}  # each query's last committed batch
MODES = {"links": True, "copies": False}
#: The soak form kills after every change; the short form after a few of each step.
EVERY_CHANGE = LONG_FORM

pytestmark = pytest.mark.soak


@dataclass
class Leftover:
    """What a child killed after change ``point`` left: the savepoint's path (which may not
    exist) and the last change it made."""

    point: int
    path: Path
    last_change: str


@pytest.fixture(scope="module")
def children() -> Any:
    """Children forked from a server that has flinkish imported (milliseconds each)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.savepoints.kill_points"])
    return context


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Where the checkpoints and savepoints go: a directory in memory (``/dev/shm``) when the
    machine has one. Each child syncs every file it writes, and on a busy disk those syncs
    are most of the test's time; a kill is the death of a process, not of the machine, so
    what it leaves is the same on any file system (the order of the syncs is
    ``test_hostile.py``'s)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    scratch = Path(tempfile.mkdtemp(prefix="flinkish-kills-", dir=shm))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def checkpoints(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The job's two query checkpoints, and a configuration that the CLI reads."""
    tmp_path = scratch
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text(
        "\n".join(f"{key}: {value}" for key, value in _settings(tmp_path).items()) + "\n"
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf))
    monkeypatch.setenv("NO_COLOR", "1")
    return {
        name: str(fake_checkpoint(tmp_path / "checkpoints" / JOB / name, committed))
        for name, committed in COMMITTED.items()
    }


def _settings(tmp_path: Path) -> dict[str, str]:
    return {
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
        "parallelism.default": "2",
        "state.backend.type": "rocksdb",
    }


def _kill(
    children: Any, queries: dict[str, str], root: Path, point: int | None, links: bool
) -> tuple[Leftover, list[str]]:
    """Run a child that takes a savepoint into ``root`` and dies after change ``point``
    (None: lives); what it left, and every change it made."""
    root.mkdir(parents=True)
    name = f"savepoint-{JOB[:6]}-{(0xFFFFFF if point is None else point):012x}"
    trace = root.with_name(root.name + ".trace")
    spec = KillSpec(queries, str(root), name, JOB, str(trace), point, links)
    child = children.Process(target=take_savepoint_and_die, args=(spec,))
    child.start()
    child.join(60)
    expected = 0 if point is None else -signal.SIGKILL
    assert child.exitcode == expected, f"kill point {point}: exit code {child.exitcode}"
    changes = trace.read_text().splitlines() if trace.exists() else []
    assert point is None or len(changes) == point, (point, changes[-3:])
    return Leftover(len(changes), root / name, changes[-1] if changes else "(none)"), changes


def _cli(*args: str) -> tuple[int, str, str]:
    """``flinkish ARGS`` through the console script's entry point: status, out, err."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            status = 0
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def _one_error_line(err: str, path: Path, where: str) -> str:
    """The refusal: one ``ERROR:`` line naming ``path`` (a hint may follow), no traceback."""
    lines = err.splitlines()
    assert lines and lines[0].startswith("ERROR: ") and str(path) in lines[0], (where, err)
    assert len(lines) <= 2 and "Traceback" not in err, (where, err)
    return lines[0].removeprefix("ERROR: ")


def _config(tmp_path: Path) -> Configuration:
    return Configuration.from_flat(_settings(tmp_path))


def _assert_refused(leftover: Leftover, config: Configuration) -> str:
    """info, run -s and dispose refuse it, and nothing of it changes; the refusal."""
    where = f"kill after change {leftover.point} ({leftover.last_change})"
    before = tree(leftover.path)
    status, out, err = _cli("savepoint", "info", "--no-rows", str(leftover.path))
    assert status == 1 and not out, (where, out, err)
    refusal = _one_error_line(err, leftover.path, where)
    with pytest.raises(SavepointError) as refused:
        plan_restore(RunRequest(from_savepoint=str(leftover.path)), config)
    assert refused.value.message == refusal, where
    status, out, err = _cli("savepoint", "-d", str(leftover.path))
    assert status == 1, (where, out, err)
    assert _one_error_line(err, leftover.path, where) == refusal
    assert tree(leftover.path) == before, f"{where}: a refusal changed the leftover"
    return "refused"


def _assert_whole(
    leftover: Leftover, queries: dict[str, str], config: Configuration, restored: Path
) -> str:
    """Checksums hold, the files are the checkpoints', run -s accepts it, each query resumes
    at its last committed batch, and dispose deletes it."""
    where = f"kill after change {leftover.point} ({leftover.last_change})"
    path = leftover.path
    status, out, err = _cli("savepoint", "info", "--no-rows", "--output", "json", str(path))
    assert status == 0, (where, err)
    shown = json.loads(out)
    assert {q["name"]: q["last-committed-batch"] for q in shown["queries"]} == COMMITTED

    for relative, data in assert_whole(path, where).items():
        if relative != "_metadata":
            query, _, inside = relative.partition("/")
            assert data == Path(queries[query], inside).read_bytes(), f"{where}: {relative}"

    plan = plan_restore(RunRequest(from_savepoint=str(path)), config)
    assert plan.source == str(path)
    storage = LocalStorage(str(path.parent))
    source = open_source(storage, str(path))
    for query, committed in COMMITTED.items():
        target = restored / query
        assert restore_query(storage, source, query, storage, str(target))
        commits = sorted(int(p.name) for p in (target / "commits").iterdir() if p.name.isdigit())
        offsets = sorted(int(p.name) for p in (target / "offsets").iterdir() if p.name.isdigit())
        assert commits[-1] == committed and offsets[-1] == committed + 1, (where, query)

    status, out, err = _cli("savepoint", "-d", str(path))
    assert status == 0, (where, err)
    assert f"Disposing savepoint '{path}'." in out.splitlines()
    assert not path.exists()
    return "whole"


def _judge(
    leftover: Leftover, queries: dict[str, str], config: Configuration, restored: Path
) -> str:
    """ "refused" or "whole", as ``savepoint info`` finds the leftover, after checking
    everything that must then hold."""
    status, _, _ = _cli("savepoint", "info", "--no-rows", str(leftover.path))
    if status == 0:
        return _assert_whole(leftover, queries, config, restored)
    return _assert_refused(leftover, config)


def _step(change: str, savepoint: Path, manifest_from: int, index: int) -> str:
    """The step of the savepoint a change belongs to: its queries' directories or data
    files (per query), the ``fsync`` of them all, or the manifest (its temporary file, its
    rename and the rename's ``fsync``)."""
    kind, _, path = change.partition(" ")
    if index >= manifest_from:
        return "manifest"
    if kind == "fsync":
        return "sync"
    query = path.removeprefix(f"{savepoint}/").split("/", 1)[0]
    return f"{'directories' if kind == 'mkdir' else 'data'} of {query}"


def kill_points(changes: list[str], savepoint: Path) -> list[int]:
    """Where to kill: after every change with ``FLINKISH_SOAK_ROUNDS`` set (the soak form);
    otherwise before the first change and, in each step (:func:`_step`), after its first,
    its last and three in its middle (in a copy: a temporary file created, written, renamed),
    and after every change of the manifest."""
    manifest_from = next(i for i, c in enumerate(changes, 1) if f"{savepoint}/._metadata" in c)
    if EVERY_CHANGE:
        return list(range(len(changes) + 1))
    steps: dict[str, list[int]] = {}
    for index, change in enumerate(changes, 1):
        steps.setdefault(_step(change, savepoint, manifest_from, index), []).append(index)
    points = {0}
    for step, indices in steps.items():
        middle = len(indices) // 2
        chosen = indices if step == "manifest" else indices[middle : middle + 3]
        points |= {indices[0], indices[-1], *chosen}
    return sorted(points)


@pytest.mark.parametrize("mode", MODES)
def test_a_savepoint_killed_at_any_change_is_refused_or_whole(
    scratch: Path, children: Any, checkpoints: dict[str, str], mode: str
) -> None:
    tmp_path, links = scratch, MODES[mode]
    config = _config(tmp_path)
    runs = tmp_path / "runs"
    done, changes = _kill(children, checkpoints, runs / "unkilled", None, links)
    assert _judge(done, checkpoints, config, tmp_path / "restored" / "unkilled") == "whole"
    # the change that makes a savepoint whole: its manifest renamed into place
    renamed = next(i for i, c in enumerate(changes, 1) if c.endswith(f"{done.path}/_metadata"))
    assert changes[renamed - 1].startswith("rename "), changes[renamed - 1]
    kinds = {change.split(" ", 1)[0] for change in changes[: renamed - 1]}
    assert {"mkdir", "create", "fsync"} <= kinds, kinds
    assert ("link" in kinds) == links and ("write" in kinds) != links, kinds

    points = kill_points(changes, done.path)
    assert points[-1] == len(changes) and renamed - 1 in points and renamed in points
    outcomes = {}
    for point in points:
        leftover, _ = _kill(children, checkpoints, runs / str(point), point, links)
        outcomes[point] = _judge(leftover, checkpoints, config, tmp_path / "restored" / str(point))
    expected = {point: "whole" if point >= renamed else "refused" for point in points}
    assert outcomes == expected, "a kill before the manifest's rename left a whole savepoint"


def test_the_flinkish_command_refuses_or_accepts_what_a_kill_left(
    flinkish_env: FlinkishEnv, scratch: Path, children: Any
) -> None:
    """The real ``flinkish`` binary on a savepoint killed among its data files, one killed
    with its manifest written but not renamed, and one killed just after the rename: the
    first two refused by ``savepoint info``, ``run -s`` (nothing started) and ``savepoint
    -d`` (nothing deleted); the third shown and disposed of."""
    env = flinkish_env
    queries = {
        name: str(fake_checkpoint(scratch / "checkpoints" / JOB / name, committed))
        for name, committed in COMMITTED.items()
    }
    done, changes = _kill(children, queries, scratch / "runs" / "unkilled", None, True)
    renamed = next(i for i, c in enumerate(changes, 1) if c.endswith(f"{done.path}/_metadata"))
    first_link = next(i for i, c in enumerate(changes, 1) if c.startswith("link "))
    for point in (first_link + 3, renamed - 1):
        leftover, _ = _kill(children, queries, scratch / "runs" / str(point), point, True)
        before = tree(leftover.path)
        for args in (
            ["savepoint", "info", "--no-rows", str(leftover.path)],
            ["run", "-d", "-s", str(leftover.path), COUNTS_JOB, "--input", "in", "--output", "out"],
            ["savepoint", "-d", str(leftover.path)],
        ):
            result = env.run(*args)
            assert result.returncode == 1, (point, args, result.stdout, result.stderr)
            refusal = _one_error_line(result.stderr, leftover.path, f"{point} {args[0]}")
            assert refusal.endswith("is not a complete savepoint: it has no _metadata."), refusal
        assert "If no job is taking a savepoint into it, delete the directory yourself." in (
            result.stderr  # savepoint -d's hint: flinkish's own leftover, deleted by hand
        )
        assert tree(leftover.path) == before
        assert not env.checkpoints.exists() or not any(env.checkpoints.iterdir()), "started"
        assert not env.logs.exists() or not any(env.logs.glob("flinkish-*.log")), "started"

    whole, _ = _kill(children, queries, scratch / "runs" / str(renamed), renamed, True)
    info = env.run("savepoint", "info", "--no-rows", "--output", "json", str(whole.path))
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["job-id"] == JOB
    disposed = env.run("savepoint", "-d", str(whole.path))
    assert disposed.returncode == 0, disposed.stderr
    assert not whole.path.exists()
