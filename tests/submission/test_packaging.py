"""Packaging the job's directory or package for the executors."""

import zipfile
from pathlib import Path

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import job_root
from flinkish_cli.submission import packaging


def _write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_script_directory_is_the_root(tmp_path: Path) -> None:
    script = _write(tmp_path / "job" / "main.py", "import helpers.prices\n")
    _write(tmp_path / "job" / "helpers" / "__init__.py")
    _write(tmp_path / "job" / "helpers" / "prices.py", "def tax(x): return x * 1.2\n")
    _write(tmp_path / "job" / "data.csv", "a,b\n")
    _write(tmp_path / "job" / "__pycache__" / "main.cpython-311.pyc")
    _write(tmp_path / "job" / ".git" / "hooks.py")
    _write(tmp_path / "job" / "venv" / "lib.py")
    package = packaging.package_job(script, tmp_path)
    names = zipfile.ZipFile(package.zip_path).namelist()
    assert sorted(names) == ["helpers/__init__.py", "helpers/prices.py", "main.py"]
    assert package.script_in_zip == "main.py"
    assert package.files == 3


def test_script_inside_a_package_ships_the_package(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "pipelines" / "__init__.py")
    script = _write(tmp_path / "src" / "pipelines" / "orders" / "job.py")
    _write(tmp_path / "src" / "pipelines" / "orders" / "__init__.py")
    _write(tmp_path / "src" / "pipelines" / "common.py")
    assert job_root(script) == (tmp_path / "src").resolve()
    package = packaging.package_job(script, tmp_path)
    assert package.script_in_zip == "pipelines/orders/job.py"
    assert "pipelines/common.py" in zipfile.ZipFile(package.zip_path).namelist()


def test_a_huge_directory_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(packaging, "MAX_FILES", 3)
    for index in range(5):
        _write(tmp_path / "job" / f"m{index}.py")
    with pytest.raises(JobError, match="ships that whole directory"):
        packaging.package_job(tmp_path / "job" / "m0.py", tmp_path)


def test_flinkish_itself_can_be_packaged_for_cluster_drivers(tmp_path: Path) -> None:
    zip_path = packaging.package_flinkish(tmp_path)
    names = zipfile.ZipFile(zip_path).namelist()
    assert "flinkish_cli/runtime/driver/driver.py" in names
    assert "flinkish_cli/runtime/entry/flinkish_driver.py" in names
