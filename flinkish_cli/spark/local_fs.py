"""flinkish's local file system for Hadoop: Spark's own, without a process start per file.

Without its native library (pip's pyspark ships none), Hadoop's ``RawLocalFileSystem`` sets
each file's permissions by starting ``chmod``: every file a streaming query writes on local
disk (offsets, commits, state store files, their ``.crc`` checksums, a file sink's parts)
costs the JVM one process start, about 2 ms each on an idle machine and more under load.
An attached BATCH run of three micro-batches started 94 of them in the session cluster's
server (counted with ``strace``). ``java/NioLocalFileSystem.java`` is Hadoop's local file
system with one method replaced: permissions are set through ``java.nio`` (the same
``chmod(2)``, inside the JVM); the sticky bit, which ``java.nio`` cannot set, still goes
Hadoop's way.

- :func:`jar_path`: where the jar for this Spark and this source lives, built or not
  (flinkish's cache directory).
- :func:`build`: compiles the source against pyspark's own Hadoop jar (``javac``) and zips the
  classes into a temporary name renamed into place. ``scripts/setup.sh`` runs it
  (``python -m flinkish_cli.spark.local_fs``); without ``javac`` (a JRE only) or when it
  fails, there is no jar and Spark runs as before.
- :func:`driver_settings`: how a driver uses it, when :func:`jar_path` is :func:`usable`:
  ``spark.hadoop.fs.file.impl`` (:data:`CLASS`), the jar last on the driver's class path
  (``SPARK_DIST_CLASSPATH``, after Spark's jars, so the class path the drivers' class-data
  sharing archive was made with stays its prefix and the archive still maps), and for
  executors started on this machine the jar on their class path. A fresh driver with a local
  master (its executors in its JVM: :func:`flinkish_cli.submission.spark_submit.build_command`)
  and ``scripts/start-cluster.sh --session``'s Connect server (``--driver``, its executors the
  script's own) use it. Drivers of other clusters do not: their executors run elsewhere,
  where the jar may not be.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from flinkish_cli.spark.cds import cache_dir

#: The file system class (``fs.file.impl``).
CLASS = "io.flinkish.hadoop.NioLocalFileSystem"
#: Its source, compiled by :func:`build`.
SOURCE = Path(__file__).resolve().parent / "java" / "NioLocalFileSystem.java"


def hadoop_jar(spark_home: Path) -> Path | None:
    """Spark's Hadoop client jar (the classes the source is compiled against), or None."""
    found = sorted((spark_home / "jars").glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None


def jar_path(spark_home: Path) -> Path | None:
    """Where the jar for this Spark's Hadoop and this source lives (built or not); None
    without a Hadoop jar to compile against, or without the source."""
    hadoop = hadoop_jar(spark_home)
    if hadoop is None:
        return None
    try:
        source = SOURCE.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256(source + f"\n{hadoop.name}\n".encode()).hexdigest()[:16]
    return cache_dir() / "local-fs" / f"flinkish-local-fs-{digest}.jar"


def usable(jar: Path) -> bool:
    """Whether ``jar`` is a whole jar holding the class."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return f"{CLASS.replace('.', '/')}.class" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def build(spark_home: Path) -> tuple[Path | None, str]:
    """Compile the jar if it is not there yet; the jar (None when it cannot be made) and
    one line saying what happened."""
    jar = jar_path(spark_home)
    hadoop = hadoop_jar(spark_home)
    if jar is None or hadoop is None:
        return None, f"no Hadoop jar in {spark_home / 'jars'} to compile against"
    if usable(jar):
        return jar, f"{jar} is there"
    javac = shutil.which("javac")
    if javac is None:
        return None, "no javac (a JDK's compiler) on the PATH; Hadoop's own is used"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flinkish-local-fs-") as scratch:
        classes = Path(scratch) / "classes"
        compiled = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-cp", str(hadoop), "-d", str(classes),
             str(SOURCE)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if compiled.returncode != 0:
            return None, f"javac failed: {compiled.stderr.strip()[-500:]}"
        temporary = jar.with_name(f".{jar.name}.{os.getpid()}")
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(temporary, jar)
    return jar, f"made {jar}"


def driver_settings(spark_home: Path, executors: bool = False) -> tuple[dict[str, str], str] | None:
    """How a driver on this machine uses the jar, when :func:`jar_path` is :func:`usable`: its
    Spark settings (``spark.hadoop.fs.file.impl``; with ``executors``, executors started on
    this machine, ``spark.executor.extraClassPath`` too) and its ``SPARK_DIST_CLASSPATH``,
    the environment's with the jar last, so that the class path the drivers' class-data
    sharing archive was made with stays its prefix. None without a usable jar. The one
    decision for both users: :func:`flinkish_cli.submission.spark_submit.build_command` and
    ``scripts/start-cluster.sh --session`` (through :func:`main`'s ``--driver``)."""
    jar = jar_path(spark_home)
    if jar is None or not usable(jar):
        return None
    conf = {"spark.hadoop.fs.file.impl": CLASS}
    if executors:
        conf["spark.executor.extraClassPath"] = str(jar)
    given = os.environ.get("SPARK_DIST_CLASSPATH")
    return conf, f"{given}{os.pathsep}{jar}" if given else str(jar)


def main(argv: list[str] | None = None) -> int:
    """``python -m flinkish_cli.spark.local_fs [SPARK_HOME]``: make the jar (for pyspark's
    Spark by default). Always exits 0: without the jar, Hadoop's own file system is used.

    ``--driver SPARK_HOME``: print :func:`driver_settings` with executors for a shell script,
    nothing without a usable jar: the ``SPARK_DIST_CLASSPATH`` on the first line, then one
    ``key=value`` Spark setting a line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--driver"]:
        settings = driver_settings(Path(args[1]), executors=True) if len(args) > 1 else None
        if settings is not None:
            conf, classpath = settings
            print("\n".join([classpath, *(f"{key}={value}" for key, value in conf.items())]))
        return 0
    try:
        from flinkish_cli.spark.install import named_spark_home

        _, said = build(named_spark_home(args))
    except Exception as error:  # never fails the set-up
        said = f"not made ({type(error).__name__}: {error})"
    print(f"Local file system for Spark's Hadoop: {said}.", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
