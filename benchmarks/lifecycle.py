"""Section 4: a job's life cycle, with 100 thousand and 1 million keys of state.

``jobs/counts_per_key.py`` (queries ``counts``, a running count per account in RocksDB state,
and ``raw``, a copy of every row) runs over a backlog with that many distinct accounts. Each
command is timed as a user waits for it, and compared with what the same work takes without
flinkish, measured in the same run:

* ``run -d`` until it returns (the job is RUNNING): against ``spark-submit`` of the same
  script with the same Spark settings until Spark has started both queries (its log says
  "Starting <query> [id = ...]", which is when ``start()`` returns);
* ``savepoint`` and ``stop --savepointPath`` until the path is printed: against copying the
  same files (those listed in the savepoint's ``_metadata``) from the job's checkpoint, one
  by one with ``shutil.copyfile`` for local disk, with boto3 (8 threads) for S3;
* ``run -s`` until RUNNING: against ``spark-submit`` resuming a copy of the job's checkpoint
  until both queries have started;
* an S3-to-S3 copy of a savepoint through flinkish's storage layer (what the driver does when
  checkpoints and savepoints are both on S3): against downloading and re-uploading the files;
* ``state ls`` and ``state show --key`` (one account) of the stopped job's savepoint, each
  with its local Spark's start: against ``savepoint info`` of the same savepoint (full runs).

The bytes a savepoint copies are the sum of the file sizes in its ``_metadata``. How each file
travelled (hard link, server-side copy, transfer) and how long the copy took come from the
driver's log (``Savepoint <path>: query '<q>': N files, ... in S s (...)``); the checksum
share is measured by running flinkish's own ``checksum_files`` over the same files.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    JOBS,
    Background,
    BenchError,
    FlinkishCli,
    S3Server,
    Timed,
    Workspace,
    clean_env,
    fmt_bytes,
    fmt_seconds,
    job_id_of,
    median,
    read_text,
    savepoint_path_of,
    spark_submit_argv,
    started_queries,
    translated_spark_conf,
    wait_for,
    write_json_lines,
)
from benchmarks.report import Row, Section

SCRIPT = JOBS / "counts_per_key.py"
QUERIES = ("counts", "raw")
BUCKET = "bench-lifecycle"
#: a stop with a savepoint to S3 at most this many times the same stop to local disk
STOP_TO_S3_GOAL = 1.3
COPY_LOG = re.compile(
    r"Savepoint (?P<path>\S+): query '(?P<query>[^']+)': (?P<files>\d+) files, .*? in "
    r"(?P<seconds>[\d.]+) s(?: \((?P<how>[^)]*)\))?"
)
RESTORE_LOG = re.compile(
    r"Restored query '(?P<query>[^']+)' at batch \d+: (?P<files>\d+) files, .*? in "
    r"(?P<seconds>[\d.]+) s(?: \((?P<how>[^)]*)\))?"
)


@dataclass(frozen=True)
class LifecycleParams:
    sizes: tuple[int, ...]  # distinct keys of each job
    files: int  # input files of each backlog
    s3_cycle: bool = True  # also stop to S3 and restore from there
    savepoint_reps: int = 3  # savepoints of the running job per target (median reported)
    read_state: bool = True  # also time state ls and state show --key (full runs)


@dataclass
class SavepointFacts:
    """One savepoint: its path, wall time, and what the copy did."""

    path: str
    seconds: float
    files: int
    bytes: int
    copy_seconds: float
    how: dict[str, int] = field(default_factory=dict)
    checksum_seconds: float | None = None
    driver_seconds: float | None = None  # the request written → its response written


def _say(message: str) -> None:
    print(f"[bench] lifecycle: {message}", file=sys.stderr, flush=True)


def write_backlog(directory: Path, keys: int, files: int) -> None:
    """``keys`` transactions, one per account, spread over ``files`` files."""
    per_file = -(-keys // files)
    for number in range(files):
        first, last = number * per_file, min(keys, (number + 1) * per_file)
        rows = [
            f'{{"transaction_id":"t{i}","account_id":"acct-{i:07d}","amount":1.0}}'
            for i in range(first, last)
        ]
        write_json_lines(directory / f"part-{number:05d}.json", rows)


def _how(text: str | None) -> dict[str, int]:
    """``"12 hard-linked, 3 transferred"`` → ``{"hard-linked": 12, "transferred": 3}``."""
    found: dict[str, int] = {}
    for part in (text or "").split(","):
        number, _, label = part.strip().partition(" ")
        if number.isdigit():
            found[label] = found.get(label, 0) + int(number)
    return found


def copy_stats(log_text: str, path: str) -> tuple[float, dict[str, int]]:
    """Seconds the driver spent copying the savepoint ``path`` and how the files travelled."""
    seconds, how = 0.0, {}
    for match in COPY_LOG.finditer(log_text):
        if match.group("path") == path:
            seconds += float(match.group("seconds"))
            for key, value in _how(match.group("how")).items():
                how[key] = how.get(key, 0) + value
    if not how:
        raise BenchError(f"The job's log has no copy statistics for {path}.")
    return seconds, how


def restore_stats(log_text: str) -> tuple[float, dict[str, int]]:
    seconds, how = 0.0, {}
    for match in RESTORE_LOG.finditer(log_text):
        seconds += float(match.group("seconds"))
        for key, value in _how(match.group("how")).items():
            how[key] = how.get(key, 0) + value
    return seconds, how


def manifest_files(path: str, settings: Any) -> list[tuple[str, int]]:
    """``(relative path, size)`` of every file the savepoint's ``_metadata`` lists."""
    from flinkish_cli.savepoints.manifest import load_manifest
    from flinkish_cli.storage import open_storage

    manifest = load_manifest(open_storage(path, settings), path, "Nothing was measured")
    return [(entry.path, entry.size) for entry in manifest.files]


def driver_side(control: Path, before: set[Path]) -> float | None:
    """Seconds from the CLI writing its savepoint/stop request to the driver writing the
    response (the request's ``created`` time; the response file's modification time)."""
    for request in sorted(set(control.glob("*.request.json")) - before):
        data = json.loads(request.read_text())
        response = request.with_name(request.name.replace(".request.", ".response."))
        if data.get("action") in ("savepoint", "stop") and response.exists():
            return max(0.0, response.stat().st_mtime - float(data["created"]))
    return None


def measure_checksums(path: str, settings: Any, files: list[tuple[str, int]]) -> float:
    """Time flinkish's ``checksum_files`` over the savepoint's files (what taking it did)."""
    from flinkish_cli.savepoints.create import checksum_files
    from flinkish_cli.storage import open_storage

    storage = open_storage(path, settings)
    began = time.perf_counter()
    checksum_files(storage, path, [name for name, _ in files])
    return time.perf_counter() - began


def measure_verification(path: str, settings: Any) -> float:
    """Time what ``run -s`` checks before it starts anything (manifest, sizes, SHA-256)."""
    from flinkish_cli.savepoints.restore import read_savepoint
    from flinkish_cli.storage import open_storage

    storage = open_storage(path, settings)
    began = time.perf_counter()
    read_savepoint(storage, path, verify=True)
    return time.perf_counter() - began


class Lifecycle:
    """The life cycle of jobs of one configuration (local checkpoints, S3 reachable)."""

    def __init__(self, workspace: Workspace, ncores: int, s3: S3Server) -> None:
        self.workspace = workspace
        self.s3 = s3
        s3.client().create_bucket(Bucket=BUCKET)
        self.conf_dir = workspace.conf_dir(
            "lifecycle", {"parallelism.default": ncores, **s3.flink_conf()}
        )
        self.cli = FlinkishCli(self.conf_dir, workspace.root)
        self.spark_conf, self.master = translated_spark_conf(self.conf_dir, {})
        self.settings = s3.settings()
        self.checkpoint_root = Path(str(self.cli.config().get("execution.checkpointing.dir")))

    # -- references without flinkish -----------------------------------------------------
    def spark_submit_start(self, name: str, data: Path, checkpoint: Path) -> float:
        """Seconds until ``spark-submit`` of the script has started both queries."""
        directory = self.workspace.dir("lifecycle", name)
        log_path = directory / "spark.log"
        conf = {**self.spark_conf, "spark.sql.streaming.checkpointLocation": str(checkpoint)}
        args = ["--input", str(data), "--output", str(directory / "output")]
        began = time.perf_counter()
        driver = Background(
            spark_submit_argv(SCRIPT, args, conf, self.master), clean_env(), directory, log_path
        )
        try:
            wait_for(f"{name} to start its queries", lambda: self._started(driver, log_path), 900)
            return time.perf_counter() - began
        finally:
            driver.stop()

    @staticmethod
    def _started(driver: Background, log_path: Path) -> bool:
        if not driver.running():
            raise BenchError(f"spark-submit exited:\n{read_text(log_path)[-3000:]}")
        return len(set(started_queries(read_text(log_path))) & set(QUERIES)) == len(QUERIES)

    def copy_locally(self, job_id: str, files: list[tuple[str, int]], name: str) -> float:
        """Copy the savepoint's files from the job's checkpoint, one by one (like ``cp``)."""
        source = self.checkpoint_root / job_id
        target = self.workspace.dir("lifecycle", name)
        began = time.perf_counter()
        for relative, _ in files:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / relative, destination)
        return time.perf_counter() - began

    def upload(self, job_id: str, files: list[tuple[str, int]], prefix: str) -> float:
        """Upload the savepoint's files from the job's checkpoint to S3 with boto3."""
        client = self.s3.client()
        source = self.checkpoint_root / job_id
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(
                pool.map(
                    lambda item: client.upload_file(
                        str(source / item[0]), BUCKET, f"{prefix}/{item[0]}"
                    ),
                    files,
                )
            )
        return time.perf_counter() - began

    def transfer(self, source: str, files: list[tuple[str, int]], prefix: str) -> float:
        """Download every file of an S3 savepoint and upload it elsewhere (no server copy)."""
        client = self.s3.client()
        key = source.removeprefix(f"s3://{BUCKET}/")

        def one(item: tuple[str, int]) -> None:
            body = client.get_object(Bucket=BUCKET, Key=f"{key}/{item[0]}")["Body"].read()
            client.put_object(Bucket=BUCKET, Key=f"{prefix}/{item[0]}", Body=body)

        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, files))
        return time.perf_counter() - began

    # -- flinkish ------------------------------------------------------------------------
    def run_detached(self, data: Path, output: Path, *flags: str) -> tuple[str, Timed]:
        timed = self.cli.run(
            "run", "-d", *flags, str(SCRIPT), "--input", str(data), "--output", str(output)
        ).check()
        return job_id_of(timed), timed

    def wait_processed(self, job_id: str, keys: int) -> float:
        began = time.perf_counter()

        def done() -> bool:
            status = self.cli.status(job_id)
            if status is None:
                return False
            if status.effective_state().is_terminal:
                raise BenchError(f"job {job_id} ended {status.state.value}: {status.failure_cause}")
            counts, raw = status.queries.get("counts"), status.queries.get("raw")
            return bool(
                counts
                and raw
                and raw.last_committed_batch is not None
                and any(p.state_rows >= keys for p in counts.recent)
            )

        wait_for(f"job {job_id} to process its backlog", done, timeout=1800, interval=0.5)
        return time.perf_counter() - began

    def repeated_savepoint(
        self, job_id: str, target: str, reps: int
    ) -> tuple[SavepointFacts, list[float]]:
        """``reps`` savepoints of the running job; the one of median time, and every time."""
        taken = [self.savepoint(job_id, ["savepoint", job_id, target]) for _ in range(reps)]
        ordered = sorted(taken, key=lambda facts: facts.seconds)
        return ordered[len(ordered) // 2], [facts.seconds for facts in taken]

    def control_dir(self, job_id: str) -> Path:
        return self.checkpoint_root / job_id / "_flinkish" / "control"

    def savepoint(self, job_id: str, command: list[str]) -> SavepointFacts:
        control = self.control_dir(job_id)
        before = set(control.glob("*.request.json")) if control.exists() else set()
        timed = self.cli.run(*command, timeout=1800).check()
        path = savepoint_path_of(timed)
        files = manifest_files(path, self.settings)
        copy_seconds, how = copy_stats(read_text(self.cli.log_path(job_id)), path)
        return SavepointFacts(
            path=path,
            seconds=timed.seconds,
            files=len(files),
            bytes=sum(size for _, size in files),
            copy_seconds=copy_seconds,
            how=how,
            driver_seconds=driver_side(control, before),
        )

    # -- one size ------------------------------------------------------------------------
    def read_state(self, label: str, path: str, keys: int) -> list[Row]:
        """``state ls`` and ``state show --key`` of a savepoint (each starts its own local
        Spark), against ``savepoint info`` of it (which starts Spark to count its rows)."""
        info = self.cli.run("savepoint", "info", path, "--output", "json", timeout=1800).check()
        listed = self.cli.run("state", "ls", path, "--output", "json", timeout=1800).check()
        account = f"acct-{keys // 2:07d}"
        show = ("state", "show", path, "--query", "counts", "--key", account, "--output", "json")
        shown = self.cli.run(*show, timeout=1800).check()
        found = json.loads(shown.stdout)["stores"][0]["rows"]
        if [row["key"] for row in found] != [{"account_id": account}]:
            raise BenchError(f"state show --key {account} found {found}")
        _say(
            f"{label}: savepoint info {info.seconds:.2f} s, state ls {listed.seconds:.2f} s, "
            f"state show --key {shown.seconds:.2f} s"
        )
        reference = "`savepoint info` of it (Spark started, rows counted)"
        return [
            _row(f"{label}: `state ls` (local savepoint, Spark's start included)",
                 listed.seconds, reference, info.seconds, {"goal": "at most 1.5"}),
            _row(f"{label}: `state show --key` one key (a full scan: Spark's reader has no "
                 "lookup by key)", shown.seconds, reference, info.seconds,
                 {"goal": "under 3 s", "key": account}),
        ]  # fmt: skip

    def measure(
        self, keys: int, files: int, s3_cycle: bool, reps: int, read_state: bool = True
    ) -> tuple[list[Row], dict[str, Any]]:
        """Every command for a job with ``keys`` keys (``reps`` savepoints per target while
        it runs); ``s3_cycle`` adds a stop to S3 and a restore from there."""
        label = f"{keys:,} keys"
        base = self.workspace.dir("lifecycle", f"k{keys}")
        data = base / "input"
        write_backlog(data, keys, files)
        facts: dict[str, Any] = {"keys": keys}
        rows: list[Row] = []
        start_ref = "spark-submit, same settings, until both queries started"
        resume_ref = "spark-submit resuming a copy of the checkpoint, until both queries started"
        copy_ref = "copying the same files (cp, one by one)"
        upload_ref = "uploading the same files (boto3, 8 threads)"

        ref_start = self.spark_submit_start(f"k{keys}-ref-start", data, base / "ref-ckpt")
        job1, submitted = self.run_detached(data, base / "out1")
        _say(f"{label}: run -d {submitted.seconds:.1f} s (spark-submit {ref_start:.1f} s)")
        processing = self.wait_processed(job1, keys)
        rows.append(
            _row(
                f"{label}: `run -d` until RUNNING",
                submitted.seconds,
                start_ref,
                ref_start,
                {"processing the backlog afterwards, seconds": processing},
            )
        )

        local, local_samples = self.repeated_savepoint(job1, str(base / "sp-local"), reps)
        local_files = manifest_files(local.path, self.settings)
        local.checksum_seconds = measure_checksums(local.path, self.settings, local_files)
        copies = [
            self.copy_locally(job1, local_files, f"k{keys}-ref-copy-{n}") for n in range(reps)
        ]
        rows.append(
            _row(
                f"{label}: `savepoint` to local disk"
                + (f" (median of {reps})" if reps > 1 else ""),
                median(local_samples),
                copy_ref,
                median(copies),
                _saved(local),
                local_samples,
                copies,
            )
        )
        _say(f"{label}: savepoint local {median(local_samples):.2f} s, copy {median(copies):.2f} s")

        sp_dir = f"s3://{BUCKET}/k{keys}/sp"
        remote, remote_samples = self.repeated_savepoint(job1, sp_dir, reps)
        remote_files = manifest_files(remote.path, self.settings)
        remote.checksum_seconds = measure_checksums(remote.path, self.settings, remote_files)
        uploads = [self.upload(job1, remote_files, f"k{keys}/ref-upload-{n}") for n in range(reps)]
        ref_upload = median(uploads)
        rows.append(
            _row(
                f"{label}: `savepoint` to S3" + (f" (median of {reps})" if reps > 1 else ""),
                median(remote_samples),
                upload_ref,
                ref_upload,
                _saved(remote),
                remote_samples,
                uploads,
            )
        )
        _say(f"{label}: savepoint S3 {median(remote_samples):.2f} s, upload {ref_upload:.2f} s")

        stop_local = self.savepoint(job1, ["stop", "--savepointPath", str(base / "sp-stop"), job1])
        self.cli.wait_exited(job1)
        stop_files = manifest_files(stop_local.path, self.settings)
        ref_stop_copy = self.copy_locally(job1, stop_files, f"k{keys}-ref-stop-copy")
        rows.append(
            _row(
                f"{label}: `stop --savepointPath` to local disk",
                stop_local.seconds,
                copy_ref,
                ref_stop_copy,
                _saved(stop_local),
            )
        )

        if read_state:
            rows += self.read_state(label, stop_local.path, keys)

        resumed_ckpt = base / "ref-resume-ckpt"
        for query in QUERIES:
            shutil.copytree(self.checkpoint_root / job1 / query, resumed_ckpt / query)
        ref_resume = self.spark_submit_start(f"k{keys}-ref-resume", data, resumed_ckpt)
        verify_local = measure_verification(stop_local.path, self.settings)
        job2, restored = self.run_detached(data, base / "out2", "-s", stop_local.path)
        copy_seconds, how = restore_stats(read_text(self.cli.log_path(job2)))
        rows.append(
            _row(
                f"{label}: `run -s` (local savepoint) until RUNNING",
                restored.seconds,
                resume_ref,
                ref_resume,
                {
                    "checksum verification before the start, seconds": verify_local,
                    "restore copy in the driver, seconds": copy_seconds,
                    "how": _how_text(how),
                },
            )
        )
        _say(f"{label}: run -s local {restored.seconds:.1f} s (spark-submit {ref_resume:.1f} s)")

        s3_savepoint, s3_files = remote.path, remote_files
        verify_remote = None
        if s3_cycle:
            stop_remote = self.savepoint(
                job2, ["stop", "--savepointPath", f"s3://{BUCKET}/k{keys}/stop", job2]
            )
            self.cli.wait_exited(job2)
            s3_savepoint = stop_remote.path
            s3_files = manifest_files(stop_remote.path, self.settings)
            ref_stop_upload = self.upload(job2, s3_files, f"k{keys}/ref-stop-upload")
            rows.append(
                _row(
                    f"{label}: `stop --savepointPath` to S3",
                    stop_remote.seconds,
                    upload_ref,
                    ref_stop_upload,
                    _saved(stop_remote),
                )
            )
            rows.append(
                Row(
                    measurement=f"{label}: `stop --savepointPath` to S3",
                    value=stop_remote.seconds,
                    unit="s",
                    reference="the same stop to local disk (flinkish)",
                    reference_value=stop_local.seconds,
                    samples=[stop_remote.seconds],
                    reference_samples=[stop_local.seconds],
                    goal=f"ratio ≤ {STOP_TO_S3_GOAL}",
                    goal_met=stop_remote.seconds <= STOP_TO_S3_GOAL * stop_local.seconds,
                )
            )
            verify_remote = measure_verification(stop_remote.path, self.settings)
            job3, restored_remote = self.run_detached(data, base / "out3", "-s", stop_remote.path)
            copy_seconds, how = restore_stats(read_text(self.cli.log_path(job3)))
            self.cli.run("cancel", job3, timeout=300).check()
            self.cli.wait_exited(job3)
            rows.append(
                _row(
                    f"{label}: `run -s` (S3 savepoint) until RUNNING",
                    restored_remote.seconds,
                    resume_ref,
                    ref_resume,
                    {
                        "checksum verification before the start (downloads every file), "
                        "seconds": verify_remote,
                        "restore copy in the driver (S3 to local disk), seconds": copy_seconds,
                        "how": _how_text(how),
                    },
                )
            )
            _say(f"{label}: run -s S3 {restored_remote.seconds:.1f} s")
        else:
            self.cli.run("cancel", job2, timeout=300).check()
            self.cli.wait_exited(job2)

        from flinkish_cli.storage import open_storage

        storage = open_storage(s3_savepoint, self.settings)
        offset = self.s3.log_size()
        stats = storage.copy_tree(
            s3_savepoint,
            storage,
            f"s3://{BUCKET}/k{keys}/s3-copy",
            files=[name for name, _ in s3_files],
        )
        source_key = s3_savepoint.removeprefix(f"s3://{BUCKET}/")
        gets = [
            r
            for r in self.s3.requests_since(offset)
            if r.startswith("GET ") and f"/{BUCKET}/{source_key}/" in r and "?" not in r
        ]
        ref_transfer = self.transfer(s3_savepoint, s3_files, f"k{keys}/ref-transfer")
        rows.append(
            _row(
                f"{label}: S3-to-S3 copy of a savepoint (storage layer)",
                stats.seconds,
                "downloading and re-uploading the same files (boto3, 8 threads)",
                ref_transfer,
                {
                    "files": stats.files,
                    "bytes": stats.bytes,
                    "server-side copies": stats.server_side,
                    "transferred": stats.transferred,
                    "GET requests for the source objects in moto's log": len(gets),
                },
            )
        )
        _say(f"{label}: S3 to S3 {stats.seconds:.2f} s, {stats.server_side} server-side")
        facts.update(
            {
                "run_seconds": submitted.seconds,
                "local": local,
                "remote": remote,
                "restore_seconds": restored.seconds,
                "verify_local_seconds": verify_local,
                "s3_copy": stats,
                "s3_copy_gets": len(gets),
            }
        )
        return rows, facts


def _row(
    measurement: str,
    value: float,
    reference: str,
    reference_value: float,
    details: dict[str, Any],
    samples: list[float] | None = None,
    reference_samples: list[float] | None = None,
) -> Row:
    return Row(
        measurement=measurement,
        value=value,
        unit="s",
        reference=reference,
        reference_value=reference_value,
        samples=samples or [value],
        reference_samples=reference_samples or [reference_value],
        details=details,
    )


def _how_text(how: dict[str, int]) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in how.items()) or "nothing copied"


def _saved(facts: SavepointFacts) -> dict[str, Any]:
    details: dict[str, Any] = {
        "files": facts.files,
        "bytes": facts.bytes,
        "copy in the driver (its log), seconds": facts.copy_seconds,
    }
    if facts.checksum_seconds is not None:
        details["SHA-256 of every file (re-measured), seconds"] = facts.checksum_seconds
    if facts.driver_seconds is not None:
        details["in the driver (request written to response written), seconds"] = (
            facts.driver_seconds
        )
    details["how"] = _how_text(facts.how)
    return details


def run(
    workspace: Workspace, params: LifecycleParams, ncores: int, s3: S3Server
) -> tuple[Section, list[dict[str, Any]]]:
    lifecycle = Lifecycle(workspace, ncores, s3)
    section = Section(
        key="lifecycle",
        title="4. Job life cycle: run, savepoint, stop, resume",
        method=(
            "`jobs/counts_per_key.py` over a backlog with one transaction per account "
            f"({', '.join(f'{k:,}' for k in params.sizes)} distinct accounts, "
            f"{params.files} files), RocksDB state (the repository's default), "
            f"`parallelism.default: {ncores}`, checkpoints on local disk, savepoints to local "
            "disk and to a moto S3 server. Each command is timed as its user waits (`run -d` "
            "and `run -s` until they return with the job RUNNING, `savepoint` and `stop` until "
            "the path is printed) against the same work done without flinkish in the same run "
            "(each row's reference). "
            + (
                f"`savepoint` of the running job is taken {params.savepoint_reps} times per "
                "target (median, and its references as many times); every other command once "
                "per size, as each changes the job."
                if params.savepoint_reps > 1
                else "Each command once per size."
            )
        ),
    )
    all_facts = []
    try:
        for keys in params.sizes:
            rows, facts = lifecycle.measure(
                keys, params.files, params.s3_cycle, params.savepoint_reps, params.read_state
            )
            section.rows += rows
            all_facts.append(facts)
    finally:
        lifecycle.cli.cleanup()
    section.notes += _findings(all_facts)
    return section, all_facts


def _findings(all_facts: list[dict[str, Any]]) -> list[str]:
    notes = []
    for facts in all_facts:
        local: SavepointFacts = facts["local"]
        checksum = local.checksum_seconds or 0.0
        driver = local.driver_seconds or 0.0
        in_driver = max(0.0, driver - local.copy_seconds - checksum)
        cli = max(0.0, local.seconds - driver)
        notes.append(
            f"{facts['keys']:,} keys, savepoint to local disk ({fmt_seconds(local.seconds)}): "
            f"{local.files} files, {fmt_bytes(local.bytes)}; hard links "
            f"{fmt_seconds(local.copy_seconds)} ({local.copy_seconds / local.seconds:.0%}), "
            f"SHA-256 of every file {fmt_seconds(checksum)} ({checksum / local.seconds:.0%}), "
            f"the rest of the driver's side {fmt_seconds(in_driver)} "
            f"({in_driver / local.seconds:.0%}: picking the request up, which it polls every "
            "0.5 s, listing the checkpoint, writing the manifest and the response), the CLI's "
            f"side {fmt_seconds(cli)} ({cli / local.seconds:.0%}: start-up, configuration, "
            "writing the request, polling for the response every 0.2 s)."
        )
    if len(all_facts) >= 2:
        small, large = all_facts[0]["local"], all_facts[-1]["local"]
        byte_growth = large.bytes / max(1, small.bytes)
        file_growth = large.files / max(1, small.files)
        link_growth = large.copy_seconds / max(0.01, small.copy_seconds)  # log has 10 ms steps
        total_growth = large.seconds / max(1e-6, small.seconds)
        follows_files = link_growth < max(2.0, byte_growth / 2) or large.copy_seconds <= 0.02
        notes.append(
            f"From {all_facts[0]['keys']:,} to {all_facts[-1]['keys']:,} keys the local "
            f"savepoint's bytes grew {byte_growth:.1f}× and its files {file_growth:.1f}×; the "
            f"hard links took {fmt_seconds(small.copy_seconds)} and "
            f"{fmt_seconds(large.copy_seconds)}, the whole command {total_growth:.2f}× as "
            "long: "
            + (
                "the savepoint's time follows the number of files, not their bytes."
                if follows_files and total_growth < max(1.5, byte_growth / 2)
                else "the savepoint's time grew with the bytes here."
            )
        )
    for facts in all_facts[-1:]:
        local = facts["local"]
        if local.checksum_seconds and local.bytes:
            rate = local.bytes / 2**20 / local.checksum_seconds
            notes.append(
                f"The SHA-256 of every file is the part that grows with the bytes: for "
                f"{facts['keys']:,} keys it read {fmt_bytes(local.bytes)} in "
                f"{fmt_seconds(local.checksum_seconds)} ({rate:.0f} MiB/s, "
                f"{local.checksum_seconds / local.seconds:.0%} of the savepoint); the profiling "
                "section measures it on big files."
            )
        remote = facts.get("remote")
        if remote is not None and remote.checksum_seconds and remote.driver_seconds:
            notes.append(
                f"On S3 the checksums read every file back from the server after uploading "
                f"it: {fmt_seconds(remote.checksum_seconds)} for {facts['keys']:,} keys, against "
                f"{fmt_seconds(remote.copy_seconds)} for the upload itself."
            )
    for facts in all_facts:
        stats = facts["s3_copy"]
        notes.append(
            f"{facts['keys']:,} keys, S3 to S3: {stats.server_side} of {stats.files} files "
            f"copied server-side ({stats.transferred} transferred); moto's request log shows "
            f"{facts['s3_copy_gets']} GET requests for the source objects during the copy."
        )
    notes.append(
        "Here checkpoints are local, so savepoints to S3 are uploads and restores from S3 "
        "are downloads. A job whose checkpoints are on S3 (through S3A: section 12) takes its "
        "savepoints S3 to S3; the S3-to-S3 row measures that copy through the same storage "
        "code (`Storage.copy_tree`)."
    )
    return notes
