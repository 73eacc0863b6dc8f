"""The previous program of an upgraded job, brought back from what its submission kept: its
code unpacked, its request and configuration (with this command's secrets), checked once;
nothing left behind when it cannot be brought back."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.client.upgrade.rollback import bring_back
from flinkish_cli.config import Configuration
from flinkish_cli.errors import JobError
from flinkish_cli.registry import program
from flinkish_cli.registry.program import ProgramRecord
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.submission import submit

JOB = "3f2a9c1e5b7d4f60a8e1c2b3d4e5f607"


class Prepared:
    def discard(self) -> None:
        pass


@pytest.fixture
def prepared(monkeypatch) -> list[tuple[Any, Any]]:
    """What the rollback asked to prepare (without planning a Spark job)."""
    asked: list[tuple[Any, Any]] = []

    def prepare(request: Any, config: Any) -> Prepared:
        asked.append((request, config))
        return Prepared()

    monkeypatch.setattr(submit, "prepare", prepare)
    return asked


def _keep(registry: JobRegistry, tmp_path: Path, record: ProgramRecord) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    files = [shipped / "pyfs-lib.zip"]
    files[0].write_bytes(b"library")
    if record.kind == "file":
        files.insert(0, shipped / "job.zip")
        with zipfile.ZipFile(files[0], "w") as archive:
            archive.writestr("pipelines/job.py", "print('v1')\n")
    assert program.keep(registry, JOB, record, files)


def _config(tmp_path: Path) -> Configuration:
    return Configuration.from_flat(
        {
            "env.log.dir": str(tmp_path / "log"),
            "parallelism.default": "8",  # the new program's: not the previous one's
            "s3.secret-key": "from-this-command",
        }
    )


def test_a_kept_script_comes_back_with_its_arguments_and_secrets(
    tmp_path: Path, prepared: list
) -> None:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    record = ProgramRecord(
        kind="file",
        target="pipelines/job.py",
        args=["--input", "/in"],
        archives=["venv.tar.gz#venv"],
        options={"jobmanager": "localhost:15002"},
        conf={"parallelism.default": "2"},
        origin="/deploy/pipelines/job.py",
    )
    _keep(registry, tmp_path, record)
    rollback = bring_back(registry, _config(tmp_path), JOB)
    assert rollback.program == "/deploy/pipelines/job.py"
    assert rollback.directory.parent == tmp_path / "log"
    request = rollback.request
    assert Path(request.script).read_text() == "print('v1')\n"
    assert Path(request.script).is_relative_to(rollback.directory)
    assert request.module is None and request.args == ["--input", "/in"]
    assert [Path(p).read_bytes() for p in request.py_files] == [b"library"]
    assert request.py_archives == ["venv.tar.gz#venv"]
    assert request.jobmanager == "localhost:15002"
    assert rollback.config.to_flat(include_secrets=True) == {
        "parallelism.default": "2",
        "s3.secret-key": "from-this-command",
    }
    assert prepared == [(request, rollback.config)]


def test_a_kept_module_is_named_by_its_module(tmp_path: Path, prepared: list) -> None:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    _keep(registry, tmp_path, ProgramRecord(kind="module", target="pipelines.job"))
    rollback = bring_back(registry, _config(tmp_path), JOB)
    assert rollback.program == "-pym pipelines.job"
    assert rollback.request.script is None and rollback.request.module == "pipelines.job"
    assert len(rollback.request.py_files) == 1


def test_a_program_that_cannot_be_brought_back_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    _keep(registry, tmp_path, ProgramRecord(kind="file", target="pipelines/job.py"))

    def refuse(request: Any, config: Any) -> None:
        raise JobError("Java is not installed.")

    monkeypatch.setattr(submit, "prepare", refuse)
    with pytest.raises(JobError, match="Java"):
        bring_back(registry, _config(tmp_path), JOB)
    assert list((tmp_path / "log").iterdir()) == []


def test_a_job_without_a_kept_program_cannot_be_rolled_back(tmp_path: Path) -> None:
    registry = JobRegistry.open(str(tmp_path / "cp"))
    with pytest.raises(JobError, match="was not kept"):
        bring_back(registry, _config(tmp_path), JOB)
