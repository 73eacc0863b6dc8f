"""What a job ran, kept beside its status so that an upgrade can bring it back.

``flinkish upgrade`` rolls a failed upgrade back to the previous program, with its previous
arguments and configuration. By then the script on disk is usually the new version (CI
checked it out over the old one), so the CLI that submits a job keeps, once, what it
shipped::

    <root>/<JobID>/_flinkish/program/program.json   the request and configuration
    <root>/<JobID>/_flinkish/program/<file>         the job's code as shipped (job.zip, ...)

A script is kept as the ``job.zip`` it was shipped in; :func:`unpack` makes it runnable
again, refusing an archive with a name that would land outside where it is unpacked.

``program.json`` never holds a secret: its configuration is the job's plan's (secret keys
left out); a rollback takes the secrets from the configuration of the command that rolls
back. Archives (``-pyarch``) are large and are kept by reference only: a rollback ships
them from where they were.

A program record that cannot be read is a :class:`~flinkish_cli.errors.JobError` naming the
file; it is never half-trusted.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flinkish_cli.errors import FlinkishError, JobError
from flinkish_cli.registry.store import JobRegistry

PROGRAM_DIR = "program"
RECORD_FILE = "program.json"
FORMAT_VERSION = 1
#: Code beyond this size is not kept (the job still runs; it cannot be rolled back to).
MAX_KEPT_BYTES = 256 * 1024 * 1024


@dataclass
class ProgramRecord:
    """A job's program: its entry, arguments, shipped files and configuration."""

    kind: str  # "file" | "module"
    #: the script's path inside ``job.zip`` (``kind`` file), or the module's name
    target: str
    args: list[str] = field(default_factory=list)
    #: the kept files, by name: ``job.zip`` first for a script, then -pyfs and -pyreq's
    files: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    #: the run options that are not configuration keys (-m, the Python interpreters)
    options: dict[str, str] = field(default_factory=dict)
    conf: dict[str, str] = field(default_factory=dict)
    #: where the script was when the job was submitted (shown to the user)
    origin: str = ""
    version: int = FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ProgramRecord:
        """:class:`ValueError` naming what is wrong when ``text`` is not a program record."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"its version {data.get('version')!r} is not {FORMAT_VERSION}")
        record = cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        if record.kind not in ("file", "module") or not isinstance(record.target, str):
            raise ValueError("it names no program")
        for name in record.files:
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                raise ValueError(f"it names the file {name!r}, which cannot be a kept file")
        if not all(isinstance(v, str) for v in [*record.args, *record.archives]):
            raise ValueError("its arguments are not all strings")
        if not isinstance(record.conf, dict) or not isinstance(record.options, dict):
            raise ValueError("its configuration is not an object")
        return record


def _dir(registry: JobRegistry, job_id: str) -> str:
    from flinkish_cli.storage import join

    return join(registry.meta_dir(job_id), PROGRAM_DIR)


def keep(registry: JobRegistry, job_id: str, record: ProgramRecord, files: list[Path]) -> bool:
    """Keep the job's program: ``files`` (local, named as ``record.files`` will list them)
    first, the record last, so that a record always finds its files. False, with nothing
    kept, when the code is larger than :data:`MAX_KEPT_BYTES`."""
    from flinkish_cli.storage import join

    if sum(path.stat().st_size for path in files) > MAX_KEPT_BYTES:
        return False
    directory = _dir(registry, job_id)
    for path in files:
        registry.storage.upload_file(str(path), join(directory, path.name))
    record.files = [path.name for path in files]
    registry.storage.write_text(join(directory, RECORD_FILE), record.to_json())
    return True


def load(registry: JobRegistry, job_id: str) -> ProgramRecord:
    """The job's program record; a :class:`JobError` when it has none or it is damaged."""
    from flinkish_cli.storage import join

    path = join(_dir(registry, job_id), RECORD_FILE)
    try:
        text = registry.storage.read_text(path)
    except FileNotFoundError:
        raise JobError(
            f"Job {job_id}'s program was not kept ({path} does not exist): it was submitted "
            "by an older flinkish, or its code was larger than "
            f"{MAX_KEPT_BYTES // 2**20} MB, so there is nothing to roll back to.",
            "Upgrade with --no-rollback (a failed new program is then left to its restart "
            "strategy).",
        ) from None
    except FlinkishError:
        raise
    try:
        return ProgramRecord.from_json(text)
    except (ValueError, TypeError, RecursionError) as error:
        raise JobError(
            f"Job {job_id}'s program record {path} is unreadable: {error}.",
            "Upgrade with --no-rollback, or restore the file.",
        ) from None


def fetch(registry: JobRegistry, job_id: str, record: ProgramRecord, dest: Path) -> list[Path]:
    """Copy the kept files into ``dest`` (created); their local paths, in order."""
    from flinkish_cli.storage import join

    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory = _dir(registry, job_id)
    local = []
    for name in record.files:
        path = dest / name
        try:
            registry.storage.download_file(join(directory, name), str(path))
        except FileNotFoundError:
            raise JobError(
                f"Job {job_id}'s kept program misses {name} (under {directory}).",
                "Upgrade with --no-rollback.",
            ) from None
        local.append(path)
    return local


def unpack(record: ProgramRecord, files: list[Path], dest: Path) -> tuple[Path | None, list[Path]]:
    """The kept files (from :func:`fetch`) made runnable: a script's ``job.zip`` (its first
    file) unpacked into ``dest``. The script's path (None for a module) and the other kept
    files (-pyfs, -pyreq's), in order."""
    if record.kind != "file":
        return None, files
    job_zip, rest = files[0], files[1:]
    with zipfile.ZipFile(job_zip) as archive:
        _extract(archive, dest)
    return dest / record.target, rest


def _extract(archive: zipfile.ZipFile, dest: Path) -> None:
    """Unpack the kept code, refusing any name that would land outside ``dest``."""
    root = dest.resolve()
    for name in archive.namelist():
        target = (dest / name).resolve()
        if not target.is_relative_to(root):
            raise JobError(f"The kept program holds the unsafe path {name!r}; not unpacked.")
    archive.extractall(dest)
