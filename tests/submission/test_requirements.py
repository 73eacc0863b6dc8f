"""-pyreq: requirements installed by pip into a zip shipped with the job, or refused clearly."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.submission.packaging import install_requirements


def _wheel(directory: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal wheel built by hand (a zip with its dist-info), so no index is needed."""
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in [*contents, f"{info}/RECORD"])
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**contents, f"{info}/RECORD": record}.items():
            archive.writestr(path, text)
    return wheel


def test_pure_python_requirements_are_installed_offline_and_zipped(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _wheel(cache, "tinyhelper", {"tinyhelper/__init__.py": "ANSWER = 42\n"})
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tinyhelper==1.0\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    zip_path = install_requirements(f"{requirements}#{cache}", run_dir)
    assert "tinyhelper/__init__.py" in zipfile.ZipFile(zip_path).namelist()


def test_compiled_requirements_are_refused_with_the_alternative(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _wheel(cache, "fastthing", {"fastthing/__init__.py": "", "fastthing/_speed.so": "ELF"})
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("fastthing\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(JobError, match="compiled extensions") as info:
        install_requirements(f"{requirements}#{cache}", run_dir)
    assert "-pyarch" in (info.value.hint or "")


def test_unresolvable_requirements_say_what_pip_said(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("surely-not-a-package-flinkish==0.0.1\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(JobError, match="Installing the requirements") as info:
        install_requirements(f"{requirements}#{empty}", run_dir)
    assert "surely-not-a-package-flinkish" in info.value.message
