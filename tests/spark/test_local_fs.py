"""flinkish's local file system for Hadoop (:mod:`flinkish_cli.spark.local_fs`), built as
``scripts/setup.sh`` builds it and used by a real JVM with pyspark's own Hadoop: files,
directories and checksums as Hadoop's local file system makes them, permissions set with no
``chmod`` process (the probe runs with no ``chmod`` on its PATH), and the sticky bit still
Hadoop's way."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from flinkish_cli.spark import local_fs
from flinkish_cli.spark.install import java_binary, pyspark_home

PROBE = """
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

public class Probe {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", args[1]);
    FileSystem fs = FileSystem.get(new URI("file:///"), conf);
    System.out.println(fs.getClass().getName());
    Path dir = new Path(args[0], "offsets");
    fs.mkdirs(dir);
    try (FSDataOutputStream out = fs.create(new Path(dir, "0"))) {
      out.writeBytes("v1");
    }
    fs.setPermission(new Path(dir, "0"), new FsPermission((short) 0640));
    try {
      fs.setPermission(dir, new FsPermission((short) 01777));
      System.out.println("sticky: set");
    } catch (java.io.IOException e) {
      System.out.println("sticky: Hadoop's way");
    }
  }
}
"""


@pytest.fixture(scope="module")
def jar() -> Path:
    if shutil.which("javac") is None:
        pytest.skip("no javac: setup.sh makes no jar, and Hadoop's own file system is used")
    made, said = local_fs.build(pyspark_home())
    assert made is not None and local_fs.usable(made), said
    assert local_fs.build(pyspark_home()) == (made, f"{made} is there")  # made once
    return made


def test_files_are_hadoops_with_no_chmod_process(jar: Path, tmp_path: Path) -> None:
    classes = tmp_path / "classes"
    (tmp_path / "Probe.java").write_text(PROBE)
    hadoop = local_fs.hadoop_jar(pyspark_home())
    subprocess.run(
        ["javac", "-nowarn", "-cp", str(hadoop), "-d", str(classes), str(tmp_path / "Probe.java")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    class_path = os.pathsep.join([str(classes), str(jar), str(pyspark_home() / "jars" / "*")])
    data = tmp_path / "data"
    data.mkdir()
    nowhere = tmp_path / "empty-path"
    nowhere.mkdir()
    ran = subprocess.run(
        [java_binary() or "java", "-cp", class_path, "Probe", str(data), local_fs.CLASS],
        env={**os.environ, "PATH": str(nowhere)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == [local_fs.CLASS, "sticky: Hadoop's way"]
    offsets = data / "offsets"
    assert (offsets / "0").read_text() == "v1"
    assert (offsets / ".0.crc").is_file()  # still Hadoop's checksummed local file system
    assert stat.S_IMODE((offsets / "0").stat().st_mode) == 0o640
    assert not stat.S_IMODE(offsets.stat().st_mode) & stat.S_ISVTX


def test_without_the_source_or_spark_there_is_no_jar(tmp_path: Path) -> None:
    assert local_fs.jar_path(tmp_path) is None  # no Hadoop jar to compile against
    made, said = local_fs.build(tmp_path)
    assert made is None and "no Hadoop jar" in said
    assert not local_fs.usable(tmp_path / "missing.jar")


def test_a_driver_takes_the_jar_last_and_executors_here_take_it_too(
    jar: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPARK_DIST_CLASSPATH", "/opt/hadoop/conf")
    conf, classpath = local_fs.driver_settings(pyspark_home()) or ({}, "")
    assert conf == {"spark.hadoop.fs.file.impl": local_fs.CLASS}
    assert classpath == f"/opt/hadoop/conf{os.pathsep}{jar}"  # after the user's, never before
    # what scripts/start-cluster.sh reads for its Connect server, whose executors it starts
    assert local_fs.main(["--driver", str(pyspark_home())]) == 0
    assert capsys.readouterr().out.splitlines() == [
        classpath,
        f"spark.hadoop.fs.file.impl={local_fs.CLASS}",
        f"spark.executor.extraClassPath={jar}",
    ]
    monkeypatch.delenv("SPARK_DIST_CLASSPATH")
    assert local_fs.driver_settings(pyspark_home()) == (conf, str(jar))


def test_without_a_jar_a_driver_gets_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert local_fs.driver_settings(tmp_path) is None
    assert local_fs.main(["--driver", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
