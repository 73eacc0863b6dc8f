"""The kept program of a job: written with its files, read back whole, and a damaged or
missing record refused with a message that says what to do."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from flinkish_cli.errors import JobError
from flinkish_cli.registry import program
from flinkish_cli.registry.program import ProgramRecord
from flinkish_cli.registry.store import JobRegistry

JOB = "3f2a9c1e5b7d4f60a8e1c2b3d4e5f607"


@pytest.fixture
def registry(tmp_path: Path) -> JobRegistry:
    return JobRegistry.open(str(tmp_path / "checkpoints"))


def _record() -> ProgramRecord:
    return ProgramRecord(
        kind="file",
        target="pipelines/job.py",
        args=["--input", "/data in", "--output", "/out"],
        archives=["venv.tar.gz#venv"],
        options={"jobmanager": "localhost:15002"},
        conf={"parallelism.default": "4", "execution.checkpointing.interval": "10 s"},
        origin="/deploy/pipelines/job.py",
    )


def test_a_kept_program_comes_back_with_its_files(registry, tmp_path: Path) -> None:
    code = tmp_path / "run" / "job.zip"
    code.parent.mkdir()
    code.write_bytes(b"PK\x05\x06" + bytes(18))
    deps = tmp_path / "run" / "pyfs-lib.zip"
    deps.write_bytes(b"library")
    assert program.keep(registry, JOB, _record(), [code, deps])

    loaded = program.load(registry, JOB)
    assert loaded == ProgramRecord(**{**_record().__dict__, "files": ["job.zip", "pyfs-lib.zip"]})
    fetched = program.fetch(registry, JOB, loaded, tmp_path / "back")
    assert [p.read_bytes() for p in fetched] == [code.read_bytes(), b"library"]


def test_code_too_large_is_not_kept(registry, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(program, "MAX_KEPT_BYTES", 10)
    big = tmp_path / "job.zip"
    big.write_bytes(b"x" * 11)
    assert not program.keep(registry, JOB, _record(), [big])
    with pytest.raises(JobError, match="was not kept") as refused:
        program.load(registry, JOB)
    assert "--no-rollback" in str(refused.value.hint)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "unreadable"),
        ("[1, 2]", "not a JSON object"),
        ('{"version": 7, "kind": "file", "target": "a.py"}', "version 7"),
        ('{"version": 1, "kind": "jar", "target": "a.jar"}', "names no program"),
        (
            '{"version": 1, "kind": "file", "target": "a.py", "files": ["../../etc/passwd"]}',
            "cannot be a kept file",
        ),
        ('{"version": 1, "kind": "file", "target": "a.py", "args": [1]}', "not all strings"),
    ],
)
def test_a_damaged_record_is_refused_with_its_path(registry, text: str, says: str) -> None:
    path = Path(registry.meta_dir(JOB)) / "program" / "program.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(JobError, match="unreadable") as refused:
        program.load(registry, JOB)
    assert says in refused.value.message and str(path) in refused.value.message


def test_a_missing_kept_file_is_named(registry, tmp_path: Path) -> None:
    code = tmp_path / "job.zip"
    code.write_bytes(b"code")
    program.keep(registry, JOB, _record(), [code])
    (Path(registry.meta_dir(JOB)) / "program" / "job.zip").unlink()
    with pytest.raises(JobError, match=r"misses job\.zip"):
        program.fetch(registry, JOB, program.load(registry, JOB), tmp_path / "back")


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def test_a_kept_script_is_unpacked_from_its_job_zip(tmp_path: Path) -> None:
    job_zip = _zip(tmp_path / "job.zip", {"pipelines/job.py": "print(1)\n", "lib.py": ""})
    deps = tmp_path / "pyfs-lib.zip"
    script, rest = program.unpack(_record(), [job_zip, deps], tmp_path / "code")
    assert script == tmp_path / "code" / "pipelines" / "job.py"
    assert script.read_text() == "print(1)\n" and (tmp_path / "code" / "lib.py").exists()
    assert rest == [deps]


def test_a_kept_module_needs_no_unpacking(tmp_path: Path) -> None:
    record = ProgramRecord(kind="module", target="pipelines.job")
    files = [tmp_path / "pyfs-lib.zip"]
    assert program.unpack(record, files, tmp_path / "code") == (None, files)
    assert not (tmp_path / "code").exists()


def test_a_job_zip_with_a_path_outside_is_not_unpacked(tmp_path: Path) -> None:
    job_zip = _zip(tmp_path / "job.zip", {"pipelines/job.py": "", "../escaped.py": ""})
    with pytest.raises(JobError, match=r"unsafe path '\.\./escaped\.py'"):
        program.unpack(_record(), [job_zip], tmp_path / "code")
    assert not (tmp_path / "escaped.py").exists()
    assert not (tmp_path / "code" / "pipelines" / "job.py").exists()
