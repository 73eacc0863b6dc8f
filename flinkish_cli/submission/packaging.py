"""Packaging the job's Python code so that executors (and a cluster's driver) can import it.

The job's *root* (:func:`flinkish_cli.plan.job.job_root`) is the directory of its script,
or, when the script sits inside a Python package (directories with ``__init__.py``), the
directory above the outermost package, so that ``import package.module`` resolves the same
way on an executor as on the user's machine.
Every ``.py`` file under the root goes into ``job.zip`` (shipped with ``--py-files``), except
hidden directories, virtual environments and caches. Data files are not shipped: use
``-pyfs`` or ``-pyarch`` for those.

The files shipped beside it are here too: ``-pyfs`` items (a directory zipped first, each kept
under a name of its own) and ``-pyreq`` requirements, installed into a zip of their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import job_root

SKIP_DIRS = {"__pycache__", "node_modules", "venv", "env", "site-packages", "build", "dist"}
MAX_FILES = 5000
MAX_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class JobPackage:
    """The zip of the job's code and where the script sits inside it."""

    root: Path
    zip_path: Path
    script_in_zip: str
    files: int
    bytes: int


def package_job(script: Path, dest_dir: Path) -> JobPackage:
    """Zip the Python files under the job's root into ``dest_dir/job.zip``."""
    root = job_root(script)
    zip_path = dest_dir / "job.zip"
    files = 0
    total = 0
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for current, dirs, names in os.walk(root):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d not in SKIP_DIRS
                and not (Path(current, d) / "pyvenv.cfg").exists()
            )
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = Path(current, name)
                files += 1
                total += path.stat().st_size
                if files > MAX_FILES or total > MAX_BYTES:
                    raise JobError(
                        f"The job's directory {root} holds more than {MAX_FILES} Python files "
                        f"or {MAX_BYTES // 2**20} MB of them; flinkish ships that whole directory.",
                        "Put the job in a directory of its own, or package its dependencies "
                        "and pass them with -pyfs / -pyarch.",
                    )
                archive.write(path, path.relative_to(root).as_posix())
    return JobPackage(
        root=root,
        zip_path=zip_path,
        script_in_zip=script.resolve().relative_to(root).as_posix(),
        files=files,
        bytes=total,
    )


def package_flinkish(dest_dir: Path) -> Path:
    """Zip flinkish's own package, for a driver that runs on a cluster (cluster deploy mode)."""
    import flinkish_cli

    source = Path(flinkish_cli.__file__).parent
    zip_path = dest_dir / "flinkish_cli.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            archive.write(path, Path("flinkish_cli", path.relative_to(source)).as_posix())
    return zip_path


def distinct_names(files: list[Path], run_dir: Path) -> list[Path]:
    """The files to keep, each under a name of its own (two -pyfs files may share one):
    a clash is copied into the run directory under a numbered name."""
    named: list[Path] = []
    for index, path in enumerate(files):
        if any(p.name == path.name for p in named):
            copy = run_dir / f"kept-{index}-{path.name}"
            shutil.copyfile(path, copy)
            path = copy
        named.append(path)
    return named


def as_py_file(item: str, run_dir: Path) -> str:
    """Spark ships .py, .zip and .egg files; a directory is zipped first."""
    path = Path(item)
    if "://" in item or not path.is_dir():
        return item if "://" in item else str(path.resolve())
    zip_path = run_dir / f"pyfs-{path.resolve().name}.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(path.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(path).as_posix())
    return str(zip_path)


def install_requirements(spec: str, run_dir: Path) -> Path:
    """``-pyreq``: install the requirements into a zip shipped with ``--py-files``.

    ``requirements.txt#cache_dir`` installs offline from ``cache_dir``, as Flink's form does.
    Pure-Python packages import from the zip on every executor; packages with compiled
    extensions cannot import from a zip, and flinkish says so: ship those in a packed
    virtual environment with ``-pyarch venv.tar.gz#venv -pyexec venv/bin/python``.
    """
    requirements, _, cache = spec.partition("#")
    target = run_dir / "requirements"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target)]
    command += ["-r", requirements]
    if cache:
        command += ["--no-index", "--find-links", cache]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise JobError(
            f"Installing the requirements of {requirements} failed:\n"
            + "\n".join(result.stderr.strip().splitlines()[-5:]),
            "Fix the requirements file, or ship a packed environment with -pyarch.",
        )
    compiled = sorted({p.name for p in target.rglob("*.so")})
    if compiled:
        raise JobError(
            f"The requirements of {requirements} include compiled extensions "
            f"({', '.join(compiled[:3])}), which Spark cannot import from --py-files.",
            "Ship them in a packed virtual environment: -pyarch venv.tar.gz#venv "
            "-pyexec venv/bin/python.",
        )
    zip_path = run_dir / "requirements.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(target.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(target).as_posix())
    return zip_path
