"""Where Spark is: pyspark's zipped copies of its Python code give way to the installed
package when they are that package's own (a driver and a local job's Python daemon call
:func:`prefer_installed_pyspark` before importing pyspark)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flinkish_cli.spark.install import prefer_installed_pyspark, pyspark_home


def _installed(site: Path) -> Path:
    """A site directory with pyspark (and its zips) and py4j installed, as pip lays them out."""
    for package in ("pyspark", "py4j"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip"):
        (lib / name).write_bytes(b"")
    return lib


def test_the_installed_packages_own_zips_leave_the_path(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    lib = _installed(site)
    job = str(tmp_path / "job.zip")
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), job, str(site)]
    removed = prefer_installed_pyspark(path)
    assert path == [job, str(site)]
    assert removed == [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]


def test_a_spark_home_of_its_own_keeps_its_zips(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    _installed(site)
    other = tmp_path / "spark-4.3.0-bin-hadoop3" / "python" / "lib"
    other.mkdir(parents=True)
    path = [str(other / "pyspark.zip"), str(other / "py4j-0.10.9.9-src.zip"), str(site)]
    assert prefer_installed_pyspark(list(path)) == []
    # nor without an installed pyspark (and py4j) on the path at all
    lib = _installed(tmp_path / "elsewhere")
    assert prefer_installed_pyspark([str(lib / "pyspark.zip")]) == []


def test_a_driver_as_spark_submit_starts_it_imports_the_installed_pyspark() -> None:
    """The path spark-submit gives a driver (the zips first), then the entry's first step:
    pyspark comes from the installed package, with its bytecode."""
    lib = pyspark_home() / "python" / "lib"
    zips = sorted(str(p) for p in lib.glob("*.zip"))
    assert any(z.endswith("pyspark.zip") for z in zips), zips
    code = (
        "from flinkish_cli.spark.install import prefer_installed_pyspark as p; p(); "
        "import pyspark, py4j; print(pyspark.__file__); print(py4j.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(zips)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    for line in done.stdout.split():
        assert ".zip" not in line and Path(line).is_file(), line
    # without the step, the zip wins: what the step is for
    plain = subprocess.run(
        [sys.executable, "-c", "import pyspark; print(pyspark.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pyspark.zip" in plain.stdout
