"""Section 3: how long the CLI takes for commands people type all day.

``flinkish --help``, ``flinkish list`` with 50 jobs in the registry (on local disk, and on a
moto S3 server with ``execution.checkpointing.dir: s3://...``) and ``flinkish config``, each
the fastest of several runs, against the same interpreter starting and doing nothing
(``python -c pass``). The 50 jobs are status files written the way a job's driver writes
them (``JobRegistry.write(JobStatus(...))``, two queries with 30 recent batches each), which
is all ``list`` reads.

Then the job actions through ``flinkish web`` (``-m host:port``, one server per registry,
started once and warm): ``list -a`` over the S3 registry through the endpoint and straight
from storage, ``savepoint -detached`` and ``stop -detached`` of its jobs, and ``cancel`` of a
job on local disk whose driver is a :class:`~tests.fixtures.fake_driver.FakeDriver` polling
its control channel as often as a real driver polls a local one (0.1 s): the time until the
command has printed its last line and exited. And a registry on S3 whose status index is gone
(50 status files as a flinkish older than the index, or a hand, leaves them): ``list -a``
through the endpoint and ``GET /jobs/overview`` of it, which the server answers from its
cache of statuses revalidated by ETag.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    FLINKISH,
    PYTHON,
    Background,
    BenchError,
    S3Server,
    Workspace,
    clean_env,
    median,
    run_timed,
    wait_for,
)
from benchmarks.report import Row, Section

JOBS_IN_REGISTRY = 50
JOB_LINE = re.compile(r"\b[0-9a-f]{32}\b")


@dataclass(frozen=True)
class CliParams:
    runs: int


@dataclass
class Command:
    label: str
    args: list[str]
    conf_dir: Path | None
    goal_seconds: float
    expect_jobs: bool = False


def seed_registry(conf_dir: Path, jobs: int = JOBS_IN_REGISTRY) -> None:
    """Write ``jobs`` status files as running jobs' drivers do."""
    from flinkish_cli.config import load_configuration
    from flinkish_cli.registry.jobid import new_job_id
    from flinkish_cli.registry.status import JobState, JobStatus, Progress, QueryStatus
    from flinkish_cli.registry.store import registry_for

    registry = registry_for(load_configuration(conf_dir=str(conf_dir)))
    now = time.time()
    for number in range(jobs):
        status = JobStatus(
            job_id=new_job_id(),
            name=f"bench-job-{number:02d}",
            state=JobState.RUNNING,
            start_time=now - 3600 + number,
            heartbeat=now,
            heartbeat_timeout=30 * 86400.0,  # stays RUNNING for the whole benchmark
            pid=1,
            host="bench",
            parallelism=2,
        )
        for query in ("counts", "raw"):
            entry = QueryStatus(name=query, checkpoint=f"/ckpt/{status.job_id}/{query}")
            entry.active = True
            for batch in range(30):
                entry.record(
                    Progress(
                        batch_id=batch,
                        timestamp="2025-01-01T00:00:00.000Z",
                        input_rows=100,
                        input_rows_per_second=50.0,
                        processed_rows_per_second=500.0,
                        duration_ms=200,
                        state_rows=1000,
                    )
                )
            status.queries[query] = entry
        registry.write(status)


def _say(message: str) -> None:
    print(f"[bench] cli: {message}", file=sys.stderr, flush=True)


def run(
    workspace: Workspace, params: CliParams, s3: S3Server | None
) -> tuple[Section, dict[str, Any]]:
    """The section, and the fastest time of each command (for the profiling section)."""
    local_conf = workspace.conf_dir("cli-local", {})
    seed_registry(local_conf)
    commands = [
        Command("flinkish --help", ["--help"], None, 0.150),
        Command(
            f"flinkish list, {JOBS_IN_REGISTRY} jobs on local disk",
            ["list"],
            local_conf,
            0.300,
            expect_jobs=True,
        ),
    ]
    s3_conf = unindexed_conf = None
    if s3 is not None:
        s3.client().create_bucket(Bucket="bench-cli")
        s3_conf = workspace.conf_dir(
            "cli-s3", {**s3.flink_conf(), "execution.checkpointing.dir": "s3://bench-cli/ckpt"}
        )
        seed_registry(s3_conf)
        unindexed_conf = workspace.conf_dir(
            "cli-s3-unindexed",
            {**s3.flink_conf(), "execution.checkpointing.dir": "s3://bench-cli/unindexed"},
        )
        seed_registry(unindexed_conf)
        drop_status_index(unindexed_conf, s3)
        commands.append(
            Command(
                f"flinkish list, {JOBS_IN_REGISTRY} jobs on S3 (moto)",
                ["list"],
                s3_conf,
                0.300,
                expect_jobs=True,
            )
        )
    commands.append(Command("flinkish config", ["config"], local_conf, 0.300))

    reference: list[float] = []
    samples: dict[str, list[float]] = {c.label: [] for c in commands}
    for attempt in range(params.runs + 1):  # the first round warms caches and is not counted
        timed = run_timed([PYTHON, "-c", "pass"], clean_env(), workspace.root).check()
        if attempt:
            reference.append(timed.seconds)
        for command in commands:
            env = clean_env({"FLINK_CONF_DIR": str(command.conf_dir)} if command.conf_dir else {})
            timed = run_timed([FLINKISH, *command.args], env, workspace.root).check()
            if command.expect_jobs:
                found = len(set(JOB_LINE.findall(timed.stdout)))
                if found != JOBS_IN_REGISTRY:
                    raise BenchError(f"{command.label} listed {found} jobs:\n{timed.stdout}")
            if attempt:
                samples[command.label].append(timed.seconds)
    section = Section(
        key="cli",
        title="3. CLI latency",
        method=(
            f"Fastest of {params.runs} runs of each command (after one uncounted warm-up "
            "round), output to a pipe, against the same Python starting and doing nothing "
            f"(`python -c pass`, fastest of {params.runs}). The registries hold "
            f"{JOBS_IN_REGISTRY} running jobs' status files (two queries, 30 recent batches "
            "each); on S3 they are read from a local moto server (`python -m moto.server`) "
            "with `execution.checkpointing.dir: s3://bench-cli/ckpt`."
        ),
    )
    fastest_reference = min(reference)
    best: dict[str, Any] = {"python -c pass": fastest_reference}
    for command in commands:
        fastest = min(samples[command.label])
        best[command.label] = fastest
        section.rows.append(
            Row(
                measurement=command.label,
                value=fastest,
                unit="s",
                reference="python -c pass (interpreter start-up)",
                reference_value=fastest_reference,
                samples=samples[command.label],
                reference_samples=reference,
                goal=f"under {command.goal_seconds * 1000:.0f} ms",
                goal_met=fastest < command.goal_seconds,
            )
        )
        _say(f"{command.label}: {fastest * 1000:.0f} ms")
    if s3 is None:
        section.notes.append("The S3 registry was not measured: no moto server could start.")
    section.notes.append(
        "Targets: `--help` under 150 ms; `list` under 300 ms on local "
        "disk and on S3; `config` under 300 ms."
    )
    best["commands"] = {
        c.label: (c.args, str(c.conf_dir) if c.conf_dir else None) for c in commands
    }
    try:
        section.rows += through_web(
            workspace, params, s3_conf, local_conf, reference, unindexed_conf
        )
    except BenchError as error:
        section.notes.append(f"The commands through flinkish web were not measured: {error}")
    section.notes.append(
        "Targets of the commands through flinkish web: `list -a` over "
        "50 jobs on S3 through the endpoint under 150 ms, straight from storage under 450 ms; "
        "`cancel`, `savepoint -detached` and `stop -detached` through the endpoint under 150 ms."
    )
    return section, best


@contextlib.contextmanager
def web_server(workspace: Workspace, conf_dir: Path, name: str) -> Iterator[str]:
    """``flinkish web`` of ``conf_dir`` on a free port: its ``host:port``."""
    log = workspace.dir("cli-web") / f"{name}.log"
    server = Background(
        [FLINKISH, "web", "-D", "rest.bind-port=0"],
        clean_env({"FLINK_CONF_DIR": str(conf_dir)}),
        workspace.root,
        log,
    )
    try:

        def address() -> str | None:
            if not server.running():
                raise BenchError(f"flinkish web did not start:\n{log.read_text()[-2000:]}")
            found = re.search(r"flinkish web: http://(\S+)", log.read_text())
            return found.group(1) if found else None

        yield wait_for("flinkish web", address, timeout=60)
    finally:
        server.stop()


def drop_status_index(conf_dir: Path, s3: S3Server) -> None:
    """Delete the status index of the registry of ``conf_dir`` on S3: its status files are
    then as a flinkish older than the index, or a hand, left them."""
    from flinkish_cli.config import load_configuration
    from flinkish_cli.registry.store import registry_for

    index = registry_for(load_configuration(conf_dir=str(conf_dir))).status_index_dir()
    bucket, _, prefix = index.removeprefix("s3://").partition("/")
    client = s3.client()
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", [])
    if not listed:
        raise BenchError(f"No status index under {index} to drop.")
    client.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": item["Key"]} for item in listed]}
    )


def http_get_seconds(url: str) -> float:
    """Seconds of one ``GET`` of ``url`` to its last byte (a client of its own: urllib)."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    began = time.perf_counter()
    with opener.open(url, timeout=30) as answer:
        answer.read()
    return time.perf_counter() - began


def _job_ids(conf_dir: Path) -> list[str]:
    from flinkish_cli.config import load_configuration
    from flinkish_cli.registry.store import registry_for

    return sorted(registry_for(load_configuration(conf_dir=str(conf_dir))).job_ids())


def through_web(
    workspace: Workspace,
    params: CliParams,
    s3_conf: Path | None,
    local_conf: Path,
    reference: list[float],
    unindexed_conf: Path | None = None,
) -> list[Row]:
    """The rows of the job actions through ``flinkish web`` (see the module's description)."""
    from flinkish_cli.config import load_configuration
    from flinkish_cli.registry.control import LOCAL_POLL_SECONDS
    from flinkish_cli.registry.jobid import new_job_id
    from flinkish_cli.registry.store import registry_for
    from tests.fixtures.fake_driver import FakeDriver

    timings: dict[str, tuple[list[float], float]] = {}

    def timed(label: str, goal: float, argv: list[str], conf_dir: Path) -> None:
        env = clean_env({"FLINK_CONF_DIR": str(conf_dir)})
        result = run_timed([FLINKISH, *argv], env, workspace.root).check()
        timings.setdefault(label, ([], goal))[0].append(result.seconds)

    rounds = params.runs + 1  # the first round warms caches and is not counted
    if s3_conf is not None:
        jobs = _job_ids(s3_conf)
        with web_server(workspace, s3_conf, "s3") as address:
            for attempt in range(rounds):
                job = jobs[attempt % len(jobs)]
                for label, goal, argv in (
                    ("list -a, 50 jobs on S3, through flinkish web", 0.150, ["list", "-a"]),
                    ("savepoint -detached through flinkish web (S3)", 0.150,
                     ["savepoint", "-detached", job]),
                    ("stop -detached through flinkish web (S3)", 0.150,
                     ["stop", "-detached", jobs[-1 - attempt % len(jobs)]]),
                ):  # fmt: skip
                    timed(label, goal, [*argv, "-m", address], s3_conf)
                label = "list -a, 50 jobs on S3, straight from storage"
                timed(label, 0.450, ["list", "-a"], s3_conf)
    if unindexed_conf is not None:
        with web_server(workspace, unindexed_conf, "s3-unindexed") as address:
            for _ in range(rounds):
                label = "list -a, 50 jobs on S3 without a status index, through flinkish web"
                timed(label, 0.150, ["list", "-a", "-m", address], unindexed_conf)
                label = "GET /jobs/overview, 50 jobs on S3 without a status index"
                seconds = http_get_seconds(f"http://{address}/jobs/overview")
                timings.setdefault(label, ([], 0.150))[0].append(seconds)
    registry = registry_for(load_configuration(conf_dir=str(local_conf)))
    with web_server(workspace, local_conf, "local") as address:
        for _ in range(rounds):
            driver = FakeDriver(registry, new_job_id(), interval=LOCAL_POLL_SECONDS)
            try:
                timed(
                    "cancel through flinkish web (a driver polling every 0.1 s)",
                    0.150,
                    ["cancel", driver.job_id, "-m", address],
                    local_conf,
                )
            finally:
                driver.close()
            _say(f"cancel of {driver.job_id} through {address}: done")
    rows = []
    for label, (samples, goal) in timings.items():
        counted = samples[1:]
        fastest = min(counted)
        rows.append(
            Row(
                measurement=label if label.startswith("GET ") else f"flinkish {label}",
                value=fastest,
                unit="s",
                reference="python -c pass (interpreter start-up)",
                reference_value=min(reference),
                samples=counted,
                reference_samples=reference,
                goal=f"under {goal * 1000:.0f} ms",
                goal_met=fastest < goal,
            )
        )
        _say(f"{label}: {fastest * 1000:.0f} ms (median {median(counted) * 1000:.0f} ms)")
    return rows
