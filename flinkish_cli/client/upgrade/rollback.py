"""The previous program of a job being upgraded, brought back before the job is touched.

A rollback runs the program the old job ran, as it was submitted: the script on disk is
usually the new version by then, so :func:`bring_back` fetches the job's kept program
(:mod:`flinkish_cli.registry.program`) into a local directory under ``env.log.dir``, unpacks
its code, and builds a :class:`Rollback`: the run request (its script or module, arguments,
files and archives) and its configuration, the kept one with the secrets of the command that
rolls back (the kept record never holds any). The request is prepared once as a check, so a
program that cannot be brought back refuses the upgrade rather than fails its rollback.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flinkish_cli.registry import program as programs
from flinkish_cli.registry.store import JobRegistry

if TYPE_CHECKING:
    from flinkish_cli.submission.submit import RunRequest


@dataclass
class Rollback:
    """The previous program, brought back before anything is touched."""

    request: RunRequest
    config: Any
    program: str  # what to call it: the script as it was submitted
    directory: Path  # the local copy of its code (kept while a rollback job runs it)


def bring_back(registry: JobRegistry, config: Any, job_id: str) -> Rollback:
    """The job's kept program, fetched and checked: what a rollback will run (its local
    copy is the caller's to delete once no rollback job runs it)."""
    from flinkish_cli.submission import submit

    record = programs.load(registry, job_id)
    log_dir = Path(str(config.get("env.log.dir"))).expanduser()
    log_dir.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix=f"flinkish-program-{job_id}-", dir=log_dir))
    try:
        files = programs.fetch(registry, job_id, record, directory / "kept")
        request = _request(record, files, directory / "code")
        previous = _config(record, config)
        prepared = submit.prepare(request, previous)
        prepared.discard()
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    shown = record.origin if record.kind == "file" else f"-pym {record.target}"
    return Rollback(request, previous, shown, directory)


def _request(record: programs.ProgramRecord, files: list[Path], code: Path) -> RunRequest:
    """The previous program as a run request: its script unpacked from its kept job.zip."""
    from flinkish_cli.submission.submit import RunRequest

    script, py_files = programs.unpack(record, files, code)
    return RunRequest(
        script=str(script) if script is not None else None,
        module=record.target if record.kind == "module" else None,
        args=list(record.args),
        py_files=[str(path) for path in py_files],
        py_archives=list(record.archives),
        jobmanager=record.options.get("jobmanager"),
    )


def _config(record: programs.ProgramRecord, config: Any) -> Any:
    """The previous program's configuration, with this command's secrets (the record never
    holds any)."""
    from flinkish_cli.config import Configuration

    everything = config.to_flat(include_secrets=True)
    public = config.to_flat(include_secrets=False)
    secrets = {key: value for key, value in everything.items() if key not in public}
    return Configuration.from_flat({**record.conf, **secrets})
