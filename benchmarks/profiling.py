"""Section 5: where the time goes, measured in the same run as the figures it explains.

Each row is one part of a command's time against the whole command (its ratio is the share):

* imports of each CLI command (``python -X importtime``): the biggest packages by cumulative
  import time;
* the phases of ``flinkish list`` on each registry, timed inside a fresh interpreter:
  imports, configuration, S3 client, listing the jobs, reading their status files;
* the JVM and SparkContext start-up (``spark-submit`` of a script that only starts and stops
  a session) against ``run -d`` until RUNNING;
* a local savepoint: hard links, SHA-256 of every file, and the rest of the command;
  ``run -s``'s checksum verification before it starts anything;
* the local copy primitives on synthetic files (many small files, a few big ones): hard links
  (``LocalStorage.copy_tree``) and ``checksum_files`` against a plain copy of the same files.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    BENCH_JOBS,
    FLINKISH,
    PYTHON,
    BenchError,
    Workspace,
    clean_env,
    fmt_bytes,
    run_timed,
    spark_submit_argv,
    translated_spark_conf,
)
from benchmarks.report import Row, Section

EMPTY_SESSION = BENCH_JOBS / "empty_session.py"

PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
from flinkish_cli.config import load_configuration
from flinkish_cli.registry.store import registry_for
t1 = time.perf_counter()
config = load_configuration(conf_dir=sys.argv[1])
t2 = time.perf_counter()
registry = registry_for(config)
getattr(registry.storage, "client", None)  # S3: imports boto3 and builds the client
t3 = time.perf_counter()
ids = list(registry.job_ids())
t4 = time.perf_counter()
jobs = registry.list()
t5 = time.perf_counter()
print(json.dumps({
    "imports": t1 - t0, "configuration": t2 - t1, "storage client": t3 - t2,
    "listing the jobs": t4 - t3, "reading the status files": max(0.0, (t5 - t4) - (t4 - t3)),
    "jobs": len(jobs), "total": t5 - t0,
}))
"""


@dataclass(frozen=True)
class ProfilingParams:
    small_files: int  # synthetic set of many small files
    small_size: int
    big_files: int  # and of a few big ones
    big_size: int


def _say(message: str) -> None:
    print(f"[bench] profiling: {message}", file=sys.stderr, flush=True)


BOTO = {"boto3", "botocore", "s3transfer", "urllib3", "jmespath", "dateutil", "six"}
STDLIB = "interpreter & stdlib"


def _package_group(module: str) -> str:
    package = module.split(".")[0]
    if package in BOTO:
        return "boto3 & deps"
    if package in sys.stdlib_module_names or package.startswith("_"):
        return STDLIB
    return package


def import_profile(args: list[str], conf_dir: str | None, cwd: Path) -> tuple[float, list]:
    """Total import time of ``flinkish ARGS`` and the packages it went to, largest first, in
    seconds. Each module's own time (``-X importtime``'s "self") is charged to the nearest
    non-standard-library package that imported it (itself, or an importer): the ``ssl`` that
    botocore imports counts for boto3, the ``json`` the CLI imports for flinkish_cli."""
    env = clean_env({"FLINK_CONF_DIR": conf_dir} if conf_dir else {})
    timed = run_timed([PYTHON, "-X", "importtime", FLINKISH, *args], env, cwd).check()
    entries = []
    for line in timed.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(fields) != 3 or "cumulative" in line:
            continue
        name = fields[2]
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        entries.append((depth, name.strip(), int(fields[0].strip()) / 1e6))
    spent: dict[str, float] = {}
    ancestors: list[str] = []  # importtime prints children first: walk it backwards
    for depth, module, seconds in reversed(entries):
        del ancestors[depth:]
        owner = next(
            (m for m in [module, *reversed(ancestors)] if _package_group(m) != STDLIB), module
        )
        group = _package_group(owner)
        spent[group] = spent.get(group, 0.0) + seconds
        ancestors.append(module)
    ranked = sorted(spent.items(), key=lambda item: item[1], reverse=True)
    return sum(spent.values()), ranked


def registry_phases(conf_dir: str, cwd: Path) -> dict[str, float]:
    timed = run_timed([PYTHON, "-c", PHASES, conf_dir], clean_env(), cwd).check()
    return json.loads(timed.stdout.strip().splitlines()[-1])


def jvm_start(workspace: Workspace, conf_dir: Path, runs: int) -> list[float]:
    conf, master = translated_spark_conf(conf_dir, {})
    directory = workspace.dir("profiling", "jvm")
    samples = []
    for _ in range(runs):
        timed = run_timed(
            spark_submit_argv(EMPTY_SESSION, [], conf, master),
            clean_env(),
            directory,
            log_path=directory / "spark.log",
        ).check()
        samples.append(timed.seconds)
    return samples


def copy_primitives(directory: Path, files: int, size: int) -> dict[str, float]:
    """Hard links, checksums and a plain copy of ``files`` synthetic files of ``size`` bytes."""
    from flinkish_cli.savepoints.create import checksum_files
    from flinkish_cli.storage import StorageSettings, open_storage

    source = directory / "source"
    names = [f"state/0/{i % 8}/{i}.zip" for i in range(files)]
    block = os.urandom(min(size, 1 << 20))
    for name in names:
        path = source / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            written = 0
            while written < size:
                handle.write(block[: size - written])
                written += len(block[: size - written])
    storage = open_storage(str(source), StorageSettings())
    began = time.perf_counter()
    storage.copy_tree(str(source), storage, str(directory / "linked"), files=names)
    linked = time.perf_counter() - began
    began = time.perf_counter()
    checksum_files(storage, str(directory / "linked"), names)
    checksums = time.perf_counter() - began
    began = time.perf_counter()
    for name in names:
        target = directory / "copied" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target)
    copied = time.perf_counter() - began
    shutil.rmtree(directory, ignore_errors=True)
    return {"links": linked, "checksums": checksums, "copy": copied}


def run(
    workspace: Workspace,
    params: ProfilingParams,
    ncores: int,
    cli_best: dict[str, Any] | None,
    lifecycle_facts: list[dict[str, Any]] | None,
    jvm_runs: int,
) -> Section:
    section = Section(
        key="profiling",
        title="5. Where the time goes (profiling)",
        method=(
            "Each row is one part of a command against the whole command, so its ratio is "
            "that part's share. Import times come from `python -X importtime` (which adds a "
            "little overhead of its own), the phases of `list` from timers in a fresh "
            "interpreter running the same calls as the command, the JVM start-up from "
            "`spark-submit` of a script that starts and stops a SparkSession (same Spark "
            "settings), the savepoint parts from section 4's largest job."
        ),
    )
    rows = section.rows
    if cli_best:
        for label, (args, conf_dir) in cli_best["commands"].items():
            whole = cli_best[label]
            total, ranked = import_profile(args, conf_dir, workspace.root)
            top = {name: round(seconds * 1000) for name, seconds in ranked[:5]}
            rows.append(
                Row(
                    f"imports of `{label}`",
                    total,
                    "s",
                    f"`{label}`, whole command (section 3)",
                    whole,
                    [total],
                    [whole],
                    details={"import time by package (ms)": json.dumps(top)},
                    kind="share",
                )
            )
            _say(f"imports of {label}: {total * 1000:.0f} ms {top}")
        for label, (args, conf_dir) in cli_best["commands"].items():
            if args != ["list"] or not conf_dir:
                continue
            phases = registry_phases(conf_dir, workspace.root)
            if int(phases["jobs"]) <= 0:
                raise BenchError(f"the registry of {label} looked empty: {phases}")
            whole = cli_best[label]
            for phase in ("storage client", "listing the jobs", "reading the status files"):
                rows.append(
                    Row(
                        f"`{label}`: {phase}",
                        max(phases[phase], 1e-4),
                        "s",
                        f"`{label}`, whole command (section 3)",
                        whole,
                        [phases[phase]],
                        [whole],
                        kind="share",
                    )
                )
            _say(f"phases of {label}: {phases}")
    if lifecycle_facts:
        first, last = lifecycle_facts[0], lifecycle_facts[-1]
        if jvm_runs:
            conf_dir = workspace.conf_dir("profiling", {"parallelism.default": ncores})
            samples = jvm_start(workspace, conf_dir, jvm_runs)
            rows.append(
                Row(
                    "JVM + SparkContext start and stop (spark-submit of an empty session)",
                    min(samples),
                    "s",
                    f"`run -d` until RUNNING ({first['keys']:,} keys, section 4)",
                    first["run_seconds"],
                    samples,
                    [first["run_seconds"]],
                    note=f"fastest of {jvm_runs}",
                    kind="share",
                )
            )
        local = last["local"]
        whole = f"`savepoint` to local disk, {last['keys']:,} keys (section 4)"
        checksum = local.checksum_seconds or 0.0
        driver = local.driver_seconds or (local.copy_seconds + checksum)
        for part, seconds in (
            ("hard links (copy_tree, from the driver's log)", local.copy_seconds),
            ("SHA-256 of every file (checksum_files)", checksum),
            (
                "rest of the driver's side (request pick-up, listing, manifest)",
                max(0.0, driver - local.copy_seconds - checksum),
            ),
            (
                "CLI's side (start-up, configuration, request, response polling)",
                max(0.0, local.seconds - driver),
            ),
        ):
            rows.append(
                Row(
                    f"savepoint, {part}",
                    max(seconds, 1e-4),
                    "s",
                    whole,
                    local.seconds,
                    [seconds],
                    [local.seconds],
                    kind="share",
                )
            )
        rows.append(
            Row(
                "`run -s`: checksum verification of the savepoint before start (local)",
                max(last["verify_local_seconds"], 1e-4),
                "s",
                f"`run -s` (local savepoint) until RUNNING, {last['keys']:,} keys (section 4)",
                last["restore_seconds"],
                [last["verify_local_seconds"]],
                [last["restore_seconds"]],
                kind="share",
            )
        )
    for files, size in (
        (params.small_files, params.small_size),
        (params.big_files, params.big_size),
    ):
        times = copy_primitives(workspace.root / "profiling" / "copy", files, size)
        total_bytes = files * size
        what = f"{files:,} files × {fmt_bytes(size)} ({fmt_bytes(total_bytes)})"
        rows.append(
            Row(
                f"hard links (LocalStorage.copy_tree), {what}",
                times["links"],
                "s",
                "copying the same files (shutil.copyfile)",
                times["copy"],
                [times["links"]],
                [times["copy"]],
                details={"per file (µs)": round(times["links"] / files * 1e6, 1)},
            )
        )
        rows.append(
            Row(
                f"SHA-256 of every file (checksum_files), {what}",
                times["checksums"],
                "s",
                "copying the same files (shutil.copyfile)",
                times["copy"],
                [times["checksums"]],
                [times["copy"]],
                details={"MiB/s": round(total_bytes / 2**20 / times["checksums"], 1)},
            )
        )
        _say(f"copy primitives, {what}: {times}")
    return section
