"""Class-data sharing (CDS) for the fresh driver's JVM: one archive per Spark, Java and flinkish.

A PySpark driver's JVM spends seconds loading and verifying Spark's classes. Java 17 can map
them from a dynamic CDS archive instead (``-XX:SharedArchiveFile``), which the JVM accepts
only when the driver's class path is the one the archive was made with, every directory on
it is empty, and the jars are unchanged. So a client-mode driver:

- runs with ``SPARK_CONF_DIR`` set to one fixed, empty directory (:func:`spark_conf_dir`),
  never the job's run directory; the log configuration travels as
  ``-Dlog4j.configurationFile`` and the settings as ``--properties-file``;
- gets ``-XX:SharedArchiveFile=<archive>`` when an archive for this Spark, this Java, this
  flinkish and this workload exists in ``$XDG_CACHE_HOME/flinkish/cds`` (else
  ``~/.cache/flinkish/cds``);
- sends the JVM's own warnings to standard error, the job's log, where a refused archive
  (stale, or made for another class path) is one line; the driver then starts without it.

The archive is made by :func:`build`: one run of a small representative streaming workload
(:mod:`flinkish_cli.runtime.entry.cds_workload`) under ``-XX:ArchiveClassesAtExit``, into a
temporary name renamed into place, so concurrent first runs never leave a torn archive.
``scripts/setup.sh`` starts a builder in the background at the lowest CPU priority
(:func:`build_in_background`, ``--background``) and, for the tests, waits for it; a job that
finds none starts one the same way and runs without it; :func:`build` waits for a running
builder rather than make the archive twice. Cluster deploy
modes (the driver runs elsewhere) and session-cluster jobs (no driver JVM of their own) use
none; a session cluster's Connect server, a driver itself, maps it (``scripts/start-cluster.sh``
asks :func:`archive_path`, :func:`usable` and :func:`driver_options`).
``env.java.class-data-sharing: false`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from flinkish_cli import __version__
from flinkish_cli.spark import loopback
from flinkish_cli.spark.install import java_binary

#: The first four bytes of a dynamic archive (HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, stored in
#: the machine's byte order).
_DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, sys.byteorder)
#: The program whose classes go into the archive (its text is part of the archive's name).
WORKLOAD = Path(__file__).resolve().parent.parent / "runtime" / "entry" / "cds_workload.py"
#: The builder's command (``python -m``; never ``__name__``, which is ``__main__`` when this
#: module runs as one).
MODULE = "flinkish_cli.spark.cds"
#: A builder that has not finished in this long is taken for dead and its lock ignored.
BUILD_TIMEOUT = 600.0
#: The builder's JVM: quiet, the first compiler tier alone and the serial collector (the
#: workload runs once, for its classes: C2 and G1's threads only cost it CPU; an archive holds
#: classes, not compiled code nor the collector's choice, and drivers with G1 map it).
#: Measured on two cores: 48.7 s and 67.5 CPU-s with the JVM's defaults, 43.2 s and 50.4.
BUILDER_JVM_OPTIONS = (
    "-Xlog:disable",
    "-Xlog:all=error:stderr",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
)
#: Archives of other installations (each about 190 MiB) are removed when a new one is made
#: and they have not been used for this long, or are more than KEEP_ARCHIVES.
UNUSED_FOR = 7 * 86400.0
KEEP_ARCHIVES = 4


def cache_dir() -> Path:
    """flinkish's cache directory: ``$XDG_CACHE_HOME/flinkish``, else ``~/.cache/flinkish``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "flinkish"


def spark_conf_dir(fallback: Path | None = None) -> Path:
    """The fixed, empty ``SPARK_CONF_DIR`` of every client-mode driver (on its class path).
    Where the cache cannot be written, an empty directory under ``fallback`` (the job runs,
    without an archive); :class:`OSError` when there is none."""
    path = cache_dir() / "spark-conf"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        if fallback is None:
            raise
        path = fallback / "spark-conf"
        path.mkdir(exist_ok=True)
    return path


def archive_path(spark_home: Path) -> Path | None:
    """Where the archive for this Spark, Java and flinkish lives (whether or not it exists);
    None when no Java or no Spark is found."""
    java = java_binary()
    if java is None:
        return None
    digest = hashlib.sha256()
    digest.update(f"flinkish {__version__}\n{java}\n{spark_home}\n".encode())
    with contextlib.suppress(OSError):  # a changed workload makes another archive
        digest.update(WORKLOAD.read_bytes())
    java_home = Path(java).parent.parent
    with contextlib.suppress(OSError):
        digest.update((java_home / "release").read_bytes())
    with contextlib.suppress(OSError):
        jvm = next((java_home / "lib" / "server").glob("libjvm.*")).stat()
        digest.update(f"{jvm.st_size} {jvm.st_mtime_ns}\n".encode())
    try:
        jars = sorted(os.scandir(spark_home / "jars"), key=lambda entry: entry.name)
    except OSError:
        return None
    for jar in jars:
        stat = jar.stat()
        digest.update(f"{jar.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    try:
        digest.update(str(spark_conf_dir()).encode())
    except OSError:  # no writable cache: no archive
        return None
    return cache_dir() / "cds" / f"driver-{digest.hexdigest()[:16]}.jsa"


def usable(archive: Path) -> bool:
    """Whether ``archive`` is a whole dynamic archive (the JVM checks the rest itself)."""
    try:
        with open(archive, "rb") as handle:
            return handle.read(4) == _DYNAMIC_MAGIC
    except OSError:
        return False


def jvm_logging_options() -> list[str]:
    """The JVM's own messages go to standard error (the job's log), never standard output
    (the program's output, which scripts parse)."""
    return ["-Xlog:disable", "-Xlog:all=warning:stderr:uptime,level,tags"]


def driver_options(archive: Path) -> list[str]:
    """The JVM options that map ``archive``; the JVM starts without it if it refuses it.
    The archive's modification time records its last use (see :func:`prune`)."""
    with contextlib.suppress(OSError):
        os.utime(archive)
    return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]


def prune(keep: Path) -> list[Path]:
    """Remove the archives of other installations that have not been used for
    :data:`UNUSED_FOR`, and the least recently used beyond :data:`KEEP_ARCHIVES`; returns
    what was removed. An archive in use stays mapped by its JVMs even when removed."""
    try:
        others = sorted(
            (p for p in keep.parent.glob("driver-*.jsa") if p != keep),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return []
    now, removed = time.time(), []
    for rank, archive in enumerate(others, start=2):
        with contextlib.suppress(OSError):
            if rank > KEEP_ARCHIVES or now - archive.stat().st_mtime > UNUSED_FOR:
                archive.unlink()
                removed.append(archive)
    return removed


def make_missing(spark_home: Path, archive: Path) -> str:
    """For a driver that started without ``archive``: start making it in the background
    (a damaged one is removed first). Returns the line for the job's log."""
    if archive.exists() and not usable(archive):
        with contextlib.suppress(OSError):
            archive.unlink()
        said = f"Class-data sharing archive {archive} is damaged: removed"
    else:
        said = "No class-data sharing archive for this Spark and Java yet"
    started = build_in_background(spark_home, archive)
    making = "making one in the background" if started else "one is being made"
    return f"{said}; the driver starts without it ({making})."


def _lock_path(archive: Path) -> Path:
    return archive.with_name(archive.name + ".building")


def build_in_background(spark_home: Path, archive: Path) -> bool:
    """Start a builder for ``archive`` at the lowest CPU priority, unless one is running.
    Never raises: a job never waits for, or fails because of, its archive."""
    lock = _lock_path(archive)
    if not _take_lock(lock):
        return False  # another builder holds the lock, or the cache is not writable
    try:
        with open(archive.parent / "build.log", "ab") as out:
            builder = subprocess.Popen(
                [sys.executable, "-m", MODULE, "--lock", str(lock), str(spark_home)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                preexec_fn=lambda: os.nice(19),
            )
        lock.write_text(str(builder.pid))  # the lock is the builder's, not this process's
        return True
    except OSError:
        with contextlib.suppress(OSError):
            lock.unlink()
        return False


def _holder_alive(lock: Path) -> bool:
    """Whether ``lock`` is held by a live builder: it exists, is younger than
    :data:`BUILD_TIMEOUT`, and the process whose id it holds (when it holds one) runs."""
    try:
        if time.time() - lock.stat().st_mtime > BUILD_TIMEOUT:
            return False
        text = lock.read_text().strip()
    except OSError:
        return False
    if not text.isdigit():
        return True  # being taken: its holder writes its id next
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def _take_lock(lock: Path) -> bool:
    """Take the builder's lock for this process (:func:`build_in_background` hands it to its
    builder); a dead builder's (its process gone, or older than :data:`BUILD_TIMEOUT`) is
    taken over. False when a live builder holds it or the cache is not writable."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.exists() and not _holder_alive(lock):
            with contextlib.suppress(OSError):
                lock.unlink()
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))
    return True


def _wait_for_builder(lock: Path, timeout: float, poll: float = 0.5) -> None:
    """Wait while a live builder holds ``lock``, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _holder_alive(lock):
        time.sleep(poll)


def build(
    spark_home: Path, timeout: float = BUILD_TIMEOUT, locked: bool = False
) -> tuple[Path | None, str]:
    """Make the archive (unless it exists): one run of the CDS workload under
    ``-XX:ArchiveClassesAtExit`` into a temporary name, then renamed into place. A builder
    already making it (:func:`build_in_background`) is waited for, not run twice; ``locked``
    says the caller holds the builder's lock. Returns the archive (None when it could not be
    made) and a sentence saying what happened."""
    archive = archive_path(spark_home)
    if archive is None:
        return None, f"no Java, or no Spark in {spark_home}: none made"
    if usable(archive):
        return archive, f"{archive} is up to date"
    if locked:
        return _build(spark_home, archive, timeout)
    lock = _lock_path(archive)
    if not _take_lock(lock):
        started = time.monotonic()
        _wait_for_builder(lock, timeout)
        if usable(archive):
            waited = time.monotonic() - started
            return archive, f"made {archive} in the background (waited {waited:.0f} s)"
        if not _take_lock(lock):
            return _build(spark_home, archive, timeout)  # a cache that takes no lock
    try:
        return _build(spark_home, archive, timeout)
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()


def _build(spark_home: Path, archive: Path, timeout: float) -> tuple[Path | None, str]:
    """:func:`build`'s work, its lock held (or none to be had)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    options = [f"-XX:ArchiveClassesAtExit={partial}", *BUILDER_JVM_OPTIONS]
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--master",
        "local[1]",
        "--conf",
        f"spark.driver.defaultJavaOptions={' '.join(options)}",
        "--conf",
        "spark.ui.port=0",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        str(WORKLOAD),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["SPARK_CONF_DIR"] = str(spark_conf_dir())
    addresses: dict[str, str] = {}
    loopback.apply("local[1]", addresses, env, os.environ)
    loopback_conf = [
        arg for key, value in addresses.items() for arg in ("--conf", f"{key}={value}")
    ]
    command[-1:-1] = loopback_conf  # before the workload, whose arguments follow it
    started = time.monotonic()
    try:
        result = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0 or not usable(partial):
            tail = " ".join((result.stderr or "").strip().splitlines()[-3:])
            return None, f"the workload exited with status {result.returncode}: {tail}"
        os.replace(partial, archive)
        prune(archive)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"making it failed: {error}"
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    return archive, f"made {archive} in {time.monotonic() - started:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """``python -m flinkish_cli.spark.cds [--background | --lock FILE] [SPARK_HOME]``: make the
    archive (for pyspark's Spark by default), waiting for a builder that is making it;
    ``--background`` starts a builder at the lowest CPU priority and returns at once
    (``scripts/setup.sh``); ``--lock FILE`` is that builder, which removes ``FILE`` (its lock,
    see :func:`build_in_background`) when done.

    Always exits 0: an archive that cannot be made only means drivers start without one.
    """
    from flinkish_cli.spark.install import named_spark_home

    args = list(sys.argv[1:] if argv is None else argv)
    lock = None
    if args[:1] == ["--background"]:
        home = named_spark_home(args[1:])
        archive = archive_path(home)
        if archive is None or usable(archive):
            said = build(home)[1]
        elif build_in_background(home, archive):
            said = f"being made in the background ({archive.parent / 'build.log'})"
        else:
            said = "being made by a builder already running"
        print(f"Class-data sharing archive for the driver: {said}.", flush=True)
        return 0
    if args[:1] == ["--lock"] and len(args) > 1:
        lock, args = Path(args[1]), args[2:]
    try:
        _, said = build(named_spark_home(args), locked=lock is not None)
    finally:
        if lock is not None:
            with contextlib.suppress(OSError):
                lock.unlink()
    print(f"Class-data sharing archive for the driver: {said}.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
