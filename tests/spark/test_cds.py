"""Class-data sharing for fresh drivers: made without any step by the user, mapped by every
later driver, and a refused or damaged archive never stops a job. (Its key,
``env.java.class-data-sharing: false``, is tested where the driver's options are chosen:
tests/submission/test_submit.py.)

What the JVM really did is read from the kernel: a JVM that uses the archive has the file
mapped (``/proc/<pid>/maps``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flinkish_cli.spark import cds
from flinkish_cli.spark.install import pyspark_home
from tests.fixtures.flinkish_env import FlinkishEnv, write_events

TEXT = {"capture_output": True, "text": True, "timeout": 60}


def _jvm_of(env: FlinkishEnv, job_id: str) -> int:
    """The driver's JVM: ``spark-submit``'s java process, the parent of the Python driver."""
    stat = Path(f"/proc/{env.driver_pid(job_id)}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def _mapped(pid: int) -> set[str]:
    return {
        line.split(maxsplit=5)[5]
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
        if len(line.split(maxsplit=5)) == 6
    }


def _start(env: FlinkishEnv, cache: Path, *extra: str) -> str:
    inputs = env.root / "in"
    if not inputs.exists():
        write_events(inputs, [{"key": "k", "value": 1, "seq": 1}])
    output = env.root / f"out-{time.monotonic_ns()}"
    job_id = env.run_counts_detached(inputs, output, *extra, env={"XDG_CACHE_HOME": str(cache)})
    env.wait_for_state(job_id, {"RUNNING"})
    return job_id


def _log(env: FlinkishEnv, job_id: str) -> str:
    return (env.logs / f"flinkish-{job_id}.log").read_text(errors="replace")


def _wait_for(predicate, what: str, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _builder_of(lock: Path) -> int | None:
    """The live builder that holds ``lock`` (its process id), None while there is none."""
    try:
        pid = int(lock.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if cds.MODULE.encode() in command else None


def _the_setups_archive() -> Path:
    """The archive in the user's cache, which ``scripts/setup.sh --test`` makes before the
    tests (made here, by the same builder, when the tests run without that step)."""
    archive = cds.archive_path(pyspark_home())
    assert archive is not None
    if not cds.usable(archive):
        made, said = cds.build(pyspark_home())
        assert made == archive, said
    return archive


@pytest.mark.spark
def test_the_first_job_starts_the_archive_and_drivers_map_it_or_say_it_was_refused(
    flinkish_env: FlinkishEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"  # a user who never ran scripts/setup.sh's step

    # 1. no archive yet: the job runs without one and says so once, and a builder (the one
    #    scripts/setup.sh runs, which made the archive of step 2) starts making it meanwhile;
    #    stopped here, as a builder killed at any moment is (its lock is then taken over)
    first = _start(flinkish_env, cache)
    _wait_for(lambda: "class-data sharing archive" in _log(flinkish_env, first), "the log line")
    said = [line for line in _log(flinkish_env, first).splitlines() if "class-data" in line]
    assert len(said) == 1 and "making one in the background" in said[0], said
    [lock] = (cache / "flinkish" / "cds").glob("driver-*.jsa.building")
    _wait_for(lambda: _builder_of(lock) is not None, "the builder")
    builder = _builder_of(lock)
    assert builder is not None
    os.killpg(builder, signal.SIGKILL)  # its session: the builder, spark-submit and the JVM
    flinkish_env.run("cancel", first, check=True)

    # 2. a driver maps the archive of its Spark, Java and flinkish (the user's cache)
    archive = _the_setups_archive()
    second = _start(flinkish_env, cds.cache_dir().parent)
    assert str(archive) in _mapped(_jvm_of(flinkish_env, second))
    assert "class-data" not in _log(flinkish_env, second).lower()
    flinkish_env.run("cancel", second, check=True)

    # 3. an archive the JVM refuses (made for another class path: the other cache's
    #    configuration directory): one line in the job's log, nothing on the job's output,
    #    and the job runs
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    elsewhere = cds.archive_path(pyspark_home())
    assert elsewhere is not None and elsewhere != archive
    shutil.copyfile(archive, elsewhere)
    third = _start(flinkish_env, cache)
    assert str(elsewhere) not in _mapped(_jvm_of(flinkish_env, third))
    refused = [line for line in _log(flinkish_env, third).splitlines() if "[cds" in line]
    assert len(refused) == 1, refused
    flinkish_env.run("cancel", third, check=True)


def test_a_damaged_archive_is_removed_and_made_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    archive = tmp_path / "flinkish" / "cds" / "driver-x.jsa"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"half an archive")
    lock = archive.with_name(archive.name + ".building")
    said = cds.make_missing(tmp_path / "no-spark", archive)
    assert "is damaged: removed" in said and "making one in the background" in said
    assert not archive.exists()
    _wait_for(lambda: not lock.exists(), "the builder to release its lock", timeout=60)


@pytest.fixture
def held_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An archive's path in a private cache, and its builder's lock, held."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    archive = tmp_path / "flinkish" / "cds" / "driver-x.jsa"
    archive.parent.mkdir(parents=True)
    lock = archive.with_name(archive.name + ".building")
    lock.touch()
    return archive, lock


def test_a_builder_already_running_is_not_started_twice(
    held_lock: tuple[Path, Path], tmp_path: Path
) -> None:
    archive, lock = held_lock
    assert cds.build_in_background(tmp_path / "no-spark", archive) is False
    assert lock.exists() and not archive.exists()


def test_a_lock_left_by_a_dead_builder_is_taken_over(
    held_lock: tuple[Path, Path], tmp_path: Path
) -> None:
    archive, lock = held_lock
    old = time.time() - cds.BUILD_TIMEOUT - 60
    os.utime(lock, (old, old))
    # the builder starts, finds no Spark there, says so in its log and releases the lock
    assert cds.build_in_background(tmp_path / "no-spark", archive) is True
    _wait_for(lambda: not lock.exists(), "the builder to release its lock", timeout=60)
    assert "Class-data sharing archive" in (archive.parent / "build.log").read_text()
    assert not archive.exists()


def test_only_a_whole_dynamic_archive_is_used(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsa"
    torn.write_bytes(b"")
    assert not cds.usable(torn)
    torn.write_bytes(b"\x00\x01\x02\x03 rest")
    assert not cds.usable(torn)
    torn.write_bytes((0xF00BABA8).to_bytes(4, "little") + b" rest")
    assert cds.usable(torn) is (sys.byteorder == "little")
    assert not cds.usable(tmp_path / "missing.jsa")


def test_the_cache_follows_xdg(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cds.cache_dir() == tmp_path / "flinkish"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")  # as the XDG spec says
    assert cds.cache_dir() == Path.home() / ".cache" / "flinkish"


def test_archives_of_other_installations_are_pruned(tmp_path: Path) -> None:
    now = time.time()
    made = {}
    for name, age_days in (("new", 0), ("recent", 1), ("a", 2), ("b", 3), ("c", 4), ("old", 30)):
        made[name] = tmp_path / f"driver-{name}.jsa"
        made[name].write_bytes(b"x")
        os.utime(made[name], (now - age_days * 86400, now - age_days * 86400))
    removed = cds.prune(made["new"])
    # kept: the new one and the three most recently used; "c" is one too many, "old" unused
    assert sorted(p.name for p in removed) == ["driver-c.jsa", "driver-old.jsa"]
    assert sorted(p.name for p in tmp_path.glob("*.jsa")) == [
        "driver-a.jsa",
        "driver-b.jsa",
        "driver-new.jsa",
        "driver-recent.jsa",
    ]


@pytest.fixture
def fake_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A Spark installation with no ``spark-submit`` (so a builder fails at once), a private
    cache, and where its archive would go."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    archive = cds.archive_path(home)
    assert archive is not None
    return home, archive


def test_making_the_archive_waits_for_the_builder_already_making_it(
    fake_spark: tuple[Path, Path],
) -> None:
    home, archive = fake_spark
    lock = archive.with_name(archive.name + ".building")
    archive.parent.mkdir(parents=True)
    lock.touch()

    def the_builder_finishes() -> None:
        time.sleep(1.0)
        archive.write_bytes((0xF00BABA8).to_bytes(4, sys.byteorder) + b" classes")
        lock.unlink()

    builder = threading.Thread(target=the_builder_finishes)
    builder.start()
    made, said = cds.build(home)
    builder.join()
    assert made == archive and "in the background (waited" in said, said


def test_a_foreground_build_holds_the_lock_and_releases_it(fake_spark: tuple[Path, Path]) -> None:
    home, archive = fake_spark
    made, said = cds.build(home)
    assert made is None and "making it failed" in said, said  # no spark-submit there
    assert not archive.with_name(archive.name + ".building").exists()
    assert not list(archive.parent.glob("*.tmp"))


def test_setup_starts_the_builder_in_the_background_and_returns(
    fake_spark: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, archive = fake_spark
    assert cds.main(["--background", str(home)]) == 0
    assert "being made in the background" in capsys.readouterr().out
    lock = archive.with_name(archive.name + ".building")
    _wait_for(lambda: not lock.exists(), "the builder to release its lock", timeout=60)
    assert "making it failed" in (archive.parent / "build.log").read_text()


def test_a_lock_whose_builder_died_is_not_waited_for(fake_spark: tuple[Path, Path]) -> None:
    """A builder that died at once (here: a process that exited) leaves its lock: the next
    build takes it over at once instead of waiting for it to age."""
    home, archive = fake_spark
    lock = archive.with_name(archive.name + ".building")
    archive.parent.mkdir(parents=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **TEXT)
    lock.write_text(gone.stdout.strip())
    started = time.monotonic()
    made, said = cds.build(home)
    assert made is None and "making it failed" in said, said
    assert time.monotonic() - started < cds.BUILD_TIMEOUT / 10
    assert not lock.exists()


def test_the_background_builder_runs_as_a_module_and_holds_the_lock(
    fake_spark: tuple[Path, Path],
) -> None:
    """``python -m flinkish_cli.spark.cds --background`` (scripts/setup.sh) starts the builder
    by its module's name; the lock holds the builder's process id until it is done."""
    home, archive = fake_spark
    started = subprocess.run(
        [sys.executable, "-m", "flinkish_cli.spark.cds", "--background", str(home)],
        check=True,
        **TEXT,
    )
    assert "being made in the background" in started.stdout, started
    lock = archive.with_name(archive.name + ".building")
    _wait_for(lambda: not lock.exists(), "the builder to release its lock", timeout=60)
    log = (archive.parent / "build.log").read_text()
    assert "making it failed" in log and "Error while finding module" not in log, log
