"""Programs submitted to a session cluster through ``flinkish web``, as Flink's CLI submits
a jar through ``/jars/upload`` and ``/jars/:id/run``.

Both sides of the exchange live here (the routes are :mod:`flinkish_cli.rest.wire`'s):

- **The CLI** (:func:`program_archive`) checks the program as ``run`` always does (present,
  valid Python, not PyFlink) and zips the job's code, the same files a job ships to its
  executors (:func:`~flinkish_cli.submission.packaging.package_job`), in memory. It imports
  neither pyspark nor pandas: the job's program runs on the server's machine.
- **The server** (:func:`unpack`) writes the upload into a private directory
  (``<env.log.dir>/.upload-<id>``, mode 0700; no path may leave it), and
  (:func:`start_uploaded`) starts the job exactly as a session-cluster ``run`` on that
  machine does: the job's own supervisor process, which runs its Connect client process and
  restarts it by the job's restart strategy, so savepoints, periodic savepoints, restarts
  and upgrades are those of any session-cluster job, and a dying job takes no other with it.
  The job runs with **its own configuration** (the one the CLI sent, ``-D`` included, never
  the server's) and an environment holding only the variables a Python process and Spark
  need (:data:`KEPT_ENVIRONMENT`): none of the server's secrets (its token, its AWS
  credentials) reach the program. It starts in the server's warm runner when there is one
  (:func:`warm_runner`, ``flinkish.web.submit.warm-runner``): a supervisor and a client
  with pyspark's Connect client imported, started ahead in that environment
  (:mod:`flinkish_cli.runtime.warm`), the job otherwise the same.

A ``savepointPath`` is checked against the program as ``run -s`` checks it (the state check
of :mod:`.restore_check`, its planning process in the job's environment). ``upgrade``
through the endpoint sends its new program the same way, then asks the server to carry the
upgrade out (:mod:`flinkish_cli.client.upgrade`, on the server's machine; its programs start
through :func:`start_prepared` as these do).

Not through the endpoint (refused with the alternative): ``-pyfs``, ``-pyarch``, ``-pyreq``,
``-pyexec``, ``-pyclientexec``, ``-pym`` and ``-sae``. The uploaded program stays in its
directory while its job runs (a restarted client reads it again); the kept program of the
registry (``program.zip``) is what an upgrade's rollback uses.

An upload is bounded before anything is written: the request's body by
``rest.server.max-content-length``, what it unpacks by :data:`MAX_ENTRIES` entries,
:data:`MAX_UNPACKED_BYTES` in all and a compression ratio of :data:`MAX_RATIO` (a zip bomb
is refused, with nothing left). Each entry is streamed to disk in pieces, never read whole
into memory. :func:`sweep` removes the uploads that were never run after
``flinkish.web.upload-timeout``, and those that were once their job has ended.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flinkish_cli.errors import JobError, UsageError
from flinkish_cli.registry.status import JobState
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.submission import packaging
from flinkish_cli.submission.submit import PreparedJob, RunRequest, check_program
from flinkish_cli.submission.warm_runner import WarmRunner

if TYPE_CHECKING:
    from flinkish_cli.submission.launcher import Launched

#: An upload's directory is ``<env.log.dir>/.upload-<id>``.
UPLOAD_PREFIX = ".upload-"
#: The environment variables a submitted job's processes keep from the server's: what Python,
#: Java and Spark need to start, nothing that carries a credential.
KEPT_ENVIRONMENT = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "JAVA_HOME",
    "SPARK_HOME",
    "SPARK_CONF_DIR",
    "VIRTUAL_ENV",
    "PYTHONPATH",
)


@dataclass
class UploadedRun:
    """What ``/flinkish/jars/:id/run`` asks: the program inside the upload, its arguments,
    its configuration (flat, as :meth:`Configuration.to_flat` gives it) and run's options."""

    entry: str
    args: list[str] = field(default_factory=list)
    configuration: dict[str, str] = field(default_factory=dict)
    detached: bool = False
    parallelism: int | None = None
    from_savepoint: str | None = None
    allow_non_restored_state: bool = False
    claim_mode: str = "no_claim"
    #: the program as the user named it (what the registry's kept program shows)
    origin: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "entryClass": self.entry,
            "programArgsList": list(self.args),
            "flinkConfiguration": dict(self.configuration),
            "detached": self.detached,
            "parallelism": self.parallelism,
            "savepointPath": self.from_savepoint,
            "allowNonRestoredState": self.allow_non_restored_state,
            "claimMode": self.claim_mode,
            "origin": self.origin,
        }

    @classmethod
    def from_json(cls, body: Any) -> UploadedRun:
        """The request's body, checked; :class:`UsageError` naming what is wrong."""
        if not isinstance(body, dict):
            raise UsageError("The run request is not a JSON object.")
        entry = body.get("entryClass")
        args = body.get("programArgsList") or []
        conf = body.get("flinkConfiguration") or {}
        parallelism = body.get("parallelism")
        if not isinstance(entry, str) or not entry:
            raise UsageError("The run request names no program (entryClass).")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UsageError("programArgsList must be a list of strings.")
        if not isinstance(conf, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in conf.items()
        ):
            raise UsageError("flinkConfiguration must map keys to string values.")
        if parallelism is not None and (not isinstance(parallelism, int) or parallelism < 1):
            raise UsageError("parallelism must be a positive integer.")
        savepoint = body.get("savepointPath")
        if savepoint is not None and not isinstance(savepoint, str):
            raise UsageError("savepointPath must be a string.")
        return cls(
            entry=entry,
            args=list(args),
            configuration=dict(conf),
            detached=bool(body.get("detached")),
            parallelism=parallelism,
            from_savepoint=savepoint or None,
            allow_non_restored_state=bool(body.get("allowNonRestoredState")),
            claim_mode=str(body.get("claimMode") or "no_claim"),
            origin=str(body["origin"]) if body.get("origin") else None,
        )


# -- the CLI's side --------------------------------------------------------------------------
def program_archive(request: RunRequest) -> tuple[bytes, str]:
    """The job's code as a zip (in memory) and its script's path inside it; the program is
    checked first, as ``run`` checks it. :class:`UsageError` for an option that does not
    go through the endpoint."""
    unsupported = [
        flag
        for flag, given in (
            ("-pym", request.module),
            ("-pyfs", request.py_files),
            ("-pyarch", request.py_archives),
            ("-pyreq", request.py_requirements),
            ("-pyexec", request.py_executable),
            ("-pyclientexec", request.py_client_executable),
            ("-sae", request.shutdown_on_attached_exit),
        )
        if given
    ]
    if unsupported:
        raise UsageError(
            f"{', '.join(unsupported)} cannot be submitted through flinkish web yet.",
            "Give -m the session cluster's Connect server (-m sc://host:port) to run the "
            "program from this machine, with these options.",
        )
    script = check_program(request)
    assert script is not None
    with tempfile.TemporaryDirectory(prefix="flinkish-upload-") as scratch:
        package = packaging.package_job(script, Path(scratch))
        return package.zip_path.read_bytes(), package.script_in_zip


def run_request(upload: Path, run: UploadedRun, session_cluster: str) -> RunRequest:
    """The :class:`RunRequest` of an uploaded program, as ``run -m <session cluster>`` on the
    server's machine would make it."""
    script = (upload / run.entry).resolve()
    if not script.is_relative_to(upload.resolve()) or not script.is_file():
        raise JobError(f"The upload holds no program {run.entry}.")
    return RunRequest(
        script=str(script),
        args=list(run.args),
        parallelism=run.parallelism,
        detached=run.detached,
        jobmanager=session_cluster,
        from_savepoint=run.from_savepoint,
        allow_non_restored_state=run.allow_non_restored_state,
        claim_mode=run.claim_mode,
    )


# -- the server's side -----------------------------------------------------------------------
#: An upload unpacks to at most this many entries ...
MAX_ENTRIES = 1000
#: ... this many bytes in all ...
MAX_UNPACKED_BYTES = 64 << 20
#: ... and at most this many times its compressed size (once it unpacks to 1 MiB or more).
MAX_RATIO = 100
#: The file in an upload's directory naming the job it was run as.
JOB_FILE = ".job"


def unpack(data: bytes, base: Path) -> str:
    """Write an uploaded zip into a new private directory under ``base``, each entry
    streamed to disk within the bounds above; its id. :class:`UsageError` for anything that
    is not a zip of files inside it, or beyond a bound (nothing is left then)."""
    upload_id = secrets.token_hex(16)
    target = base / f"{UPLOAD_PREFIX}{upload_id}"
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError):
        raise UsageError("The upload is not a zip archive.") from None
    if len(entries) > MAX_ENTRIES:
        raise UsageError(
            f"The upload holds {len(entries)} entries; flinkish web takes at most "
            f"{MAX_ENTRIES} entries."
        )
    base.mkdir(parents=True, exist_ok=True)
    target.mkdir(mode=0o700)
    os.chmod(target, 0o700)
    try:
        written = 0
        for entry in entries:
            name = entry.filename
            path = (target / name).resolve()
            if name.startswith("/") or not path.is_relative_to(target.resolve()):
                raise UsageError(f"The upload holds a path outside its directory: {name}.")
            if entry.is_dir():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            written = _write_entry(archive, entry, path, written, len(data))
    except zipfile.BadZipFile as error:
        shutil.rmtree(target, ignore_errors=True)
        raise UsageError(f"The upload is not a zip archive that can be read ({error}).") from None
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return upload_id


def _write_entry(
    archive: zipfile.ZipFile, entry: zipfile.ZipInfo, path: Path, written: int, size: int
) -> int:
    """Stream one entry to ``path``, counting what it really unpacks to (never what its
    header says); the bytes written so far in all."""
    with archive.open(entry) as source, open(path, "xb") as sink:
        while chunk := source.read(1 << 16):
            written += len(chunk)
            if written > MAX_UNPACKED_BYTES:
                raise UsageError(
                    f"The upload unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB; flinkish "
                    "web takes at most that."
                )
            if written >= 1 << 20 and written > MAX_RATIO * size:
                raise UsageError(
                    f"The upload unpacks to more than {MAX_RATIO} times its size (it is "
                    "compressed like a zip bomb); flinkish web refuses it."
                )
            sink.write(chunk)
    return written


def mark_run(upload: Path, job_id: str) -> None:
    """Note in the upload's directory that it runs as ``job_id`` (kept until that job ends)."""
    (upload / JOB_FILE).write_text(job_id)


def sweep(base: Path, max_age: float, ended: Callable[[str], bool]) -> int:
    """Remove the uploads under ``base`` that were never run and are older than ``max_age``
    seconds, and those whose job has ``ended``; how many were removed."""
    removed = 0
    now = time.time()
    for found in base.glob(f"{UPLOAD_PREFIX}*") if base.is_dir() else ():
        try:
            marker = found / JOB_FILE
            if marker.is_file():
                gone = ended(marker.read_text().strip())
            else:
                gone = now - found.stat().st_mtime > max_age
        except (OSError, ValueError):
            continue
        if gone:
            shutil.rmtree(found, ignore_errors=True)
            removed += 1
    return removed


def upload_dir(base: Path, upload_id: str) -> Path:
    """The directory of an upload; :class:`JobError` when there is none of that id."""
    if not upload_id.isalnum():
        raise JobError(f"There is no upload {upload_id}.")
    found = base / f"{UPLOAD_PREFIX}{upload_id}"
    if not found.is_dir():
        raise JobError(f"There is no upload {upload_id}.", "Upload the program first.")
    return found


def job_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a submitted job starts with: :data:`KEPT_ENVIRONMENT` and ``LC_*`` of
    the server's, nothing else."""
    source = dict(os.environ if environ is None else environ)
    return {k: v for k, v in source.items() if k in KEPT_ENVIRONMENT or k.startswith("LC_")}


def warm_runner() -> WarmRunner:
    """The server's warm runner (:mod:`flinkish_cli.submission.warm_runner`): its spare started now,
    in the environment of a submitted job."""
    return WarmRunner(job_environment()).start()


def start_uploaded(
    upload: Path, run: UploadedRun, session_cluster: str, warm: WarmRunner | None = None
) -> str:
    """Start the uploaded program as a session-cluster job with its own configuration (in
    the spare of ``warm`` when there is one); its JobID once its supervisor runs (the caller
    follows the registry)."""
    from flinkish_cli.config.model import Configuration
    from flinkish_cli.submission import submit
    from flinkish_cli.submission.run import restore_plan

    config = Configuration.from_flat(run.configuration)
    request = run_request(upload, run, session_cluster)
    config = config.with_overrides(request.config_flags())
    environment = job_environment()  # the state check runs the program as the job will
    prepared = submit.prepare(request, config, restore_plan(request, config, None, environment))
    if run.origin:  # the user's program, not the upload's copy
        prepared.program.origin = run.origin
    start_prepared(prepared, environment, warm)
    return prepared.plan.job_id


def start_prepared(
    prepared: PreparedJob, environment: dict[str, str], warm: WarmRunner | None
) -> Launched:
    """Start a prepared job as the server starts submitted ones: in ``environment``, its
    output to its log only, in the spare of ``warm`` when there is one (and the next spare
    started once this job runs: its imports would slow the job's start)."""
    from flinkish_cli.submission import submit

    launched = submit.start(prepared, pipe_output=False, environment=environment, warm=warm)
    if warm is not None:
        job_id = prepared.plan.job_id
        warm.refill_after(lambda: _has_started(prepared.registry, job_id))
    return launched


def _has_started(registry: JobRegistry, job_id: str) -> bool:
    status = registry.find(job_id)
    return status is not None and (status.state is JobState.RUNNING or status.state.is_terminal)
