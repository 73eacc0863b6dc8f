"""Section 7 (full runs): the fresh driver with its class-data sharing (CDS) archive.

This module owns the measurement of what flinkish's built-in archive
(:mod:`flinkish_cli.spark.cds`) does for a fresh driver, side by side in one run:

1. The archive is made as ``scripts/setup.sh`` makes it (``python -m
   flinkish_cli.spark.cds``), into a private ``XDG_CACHE_HOME``; the time it takes and
   its size are reported.
2. Interleaved, ``reps`` times each: ``flinkish run -d jobs/counts_per_key.py`` as a user
   runs it (the archive in use), the same with ``-D env.java.class-data-sharing=false``, and
   plain ``spark-submit`` of the same script with flinkish's Spark settings until Spark has
   started both queries (what a user of Spark would run instead). flinkish's runs are timed
   to the "Job has been submitted with JobID" line (printed once the job is RUNNING).
3. One more ``run -d`` logs the driver JVM's class loading (``-Xlog:class+load`` through
   ``env.java.opts.all``) to count the classes it took from the archive.

The goal (from the issue): flinkish's ``run -d`` at most 0.7 of plain spark-submit's time.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import (
    JOBS,
    PYTHON,
    Background,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    fmt_bytes,
    median,
    read_text,
    run_timed,
    spark_submit_argv,
    started_queries,
    translated_spark_conf,
    wait_for,
)
from benchmarks.lifecycle import write_backlog as write_transactions
from benchmarks.report import Row, Section

TITLE = "7. Class-data sharing (CDS) for the fresh driver"
SCRIPT = JOBS / "counts_per_key.py"
QUERIES = ("counts", "raw")
GOAL = 0.7  # run -d at most 0.7 of plain spark-submit until its queries started
#: flinkish's supervisor logs this once the driver's processes (the JVM) have ended.
DRIVER_ENDED = re.compile(r"flinkish\.supervisor: Driver attempt \d+ ended")
#: What the JVM says about CDS when it cannot dump or use an archive.
JVM_SAYS = re.compile(
    r"^(?:\[[^]]*\]\[(?:error|warning) *\]\[cds[^]]*\] (?:Error|Unable).*"
    r"|Cannot have non-empty directory in paths.*)$",
    re.MULTILINE,
)
VARIANTS = ("archive", "no archive", "spark-submit")


@dataclass(frozen=True)
class CdsParams:
    reps: int  # runs per variant
    enabled: bool  # full runs unless BENCH_CDS=0; quick runs only with BENCH_CDS=1


def _say(message: str) -> None:
    print(f"[bench] cds: {message}", file=sys.stderr, flush=True)


def method(params: CdsParams) -> str:
    return (
        "flinkish's archive is made as `scripts/setup.sh` makes it (`python -m "
        "flinkish_cli.spark.cds`, into a private `XDG_CACHE_HOME`). Then, interleaved "
        f"(the order rotates), {params.reps} runs of each: `flinkish run -d "
        "jobs/counts_per_key.py` as a user runs it (its archive in use) and with `-D "
        "env.java.class-data-sharing=false`, timed from the command's start to its \"Job has "
        'been submitted with JobID" line (printed once the job is RUNNING), each job '
        "cancelled and its processes gone before the next run; and plain `spark-submit` of "
        "the same script with the Spark settings flinkish derives from the same "
        "configuration, until Spark has started both queries, then stopped. One more `run -d` "
        "logs the driver JVM's class loading (`-Xlog:class+load`) to count the classes taken "
        "from the archive."
    )


class Runs:
    """The three ways of starting the job, with one configuration and private directories."""

    def __init__(self, workspace: Workspace, ncores: int) -> None:
        self.workspace = workspace
        self.cache = workspace.dir("cds", "cache")
        self.conf_dir = workspace.conf_dir("cds", {"parallelism.default": ncores})
        self.cli = FlinkishCli(self.conf_dir, workspace.root)
        self.spark_conf, self.master = translated_spark_conf(self.conf_dir, {})
        self.data = workspace.dir("cds", "transactions")
        write_transactions(self.data, 200, 2)
        self.count = 0

    def _dir(self, name: str) -> Path:
        self.count += 1
        return self.workspace.dir("cds", f"{self.count:02d}-{name}")

    def make_archive(self) -> tuple[float, Path]:
        """``python -m flinkish_cli.spark.cds``: its seconds, and the archive made."""
        made = run_timed(
            [PYTHON, "-m", "flinkish_cli.spark.cds"],
            clean_env({"XDG_CACHE_HOME": str(self.cache)}),
            self.workspace.root,
            timeout=900,
        ).check()
        archives = sorted(self.cache.glob("flinkish/cds/*.jsa"))
        if not archives:
            raise BenchError(f"no archive was made: {made.stdout.strip()} {made.stderr[-2000:]}")
        return made.seconds, archives[0]

    def flinkish(self, name: str, *options: str) -> tuple[float, str]:
        """``run -d [options]``, cancelled: seconds to the JobID line, and the job's log."""
        run_dir = self._dir(name)
        env = {"XDG_CACHE_HOME": str(self.cache)}
        submission = self.cli.submit_detached(
            *options,
            str(SCRIPT),
            *("--input", str(self.data), "--output", str(run_dir / "output")),
            cwd=run_dir,
            extra_env=env,
        )
        self.cli.cancel_and_wait(submission.job_id)
        log_path = self.cli.log_path(submission.job_id)
        with contextlib.suppress(BenchError):  # the JVM's last words reach the log last
            wait_for(
                "the driver's end in its log", lambda: DRIVER_ENDED.search(read_text(log_path)), 60
            )
        return submission.to_job_id, read_text(log_path)

    def spark_submit(self, name: str) -> float:
        """``spark-submit`` until both queries started, then SIGTERM: its seconds."""
        run_dir = self._dir(name)
        log_path = run_dir / "spark.log"
        conf = {**self.spark_conf, "spark.sql.streaming.checkpointLocation": str(run_dir / "ck")}
        args = ["--input", str(self.data), "--output", str(run_dir / "output")]
        began = time.perf_counter()
        driver = Background(
            spark_submit_argv(SCRIPT, args, conf, self.master), clean_env(), run_dir, log_path
        )
        try:
            wait_for(f"spark-submit {name}", lambda: self._started(driver, log_path), 600)
            return time.perf_counter() - began
        finally:
            driver.stop(grace=120)

    @staticmethod
    def _started(driver: Background, log_path: Path) -> bool:
        if not driver.running():
            raise BenchError(f"spark-submit exited:\n{read_text(log_path)[-3000:]}")
        return set(QUERIES) <= set(started_queries(read_text(log_path)))

    def one(self, variant: str) -> tuple[float, list[str]]:
        """One run of ``variant``: its seconds, and the JVM's CDS messages (flinkish's)."""
        if variant == "spark-submit":
            return self.spark_submit("spark-submit"), []
        options = ("-D", "env.java.class-data-sharing=false") if variant == "no archive" else ()
        seconds, log = self.flinkish(variant.replace(" ", "-"), *options)
        return seconds, jvm_says(log)

    def interleaved(self, reps: int) -> tuple[dict[str, list[float]], list[str]]:
        """``reps`` runs of each variant, the order rotating; the JVM's CDS messages."""
        found: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
        said: list[str] = []
        for rep in range(reps):
            shift = rep % len(VARIANTS)
            for variant in VARIANTS[shift:] + VARIANTS[:shift]:
                seconds, messages = self.one(variant)
                found[variant].append(seconds)
                said += messages
                _say(f"{rep + 1}/{reps} {variant}: {seconds:.2f} s")
        return found, list(dict.fromkeys(said))

    def classes_from_archive(self) -> tuple[int, int]:
        """One ``run -d`` with class loading logged: classes taken from the archive's top
        layer, and all classes loaded."""
        log = self.workspace.dir("cds") / "class-load.log"
        # The driver's JVM options (env.java.opts.all) come after flinkish's own, which turn
        # the JVM's default logging off (-Xlog:disable), so this output stays on.
        self.flinkish("class-load", "-D", f"env.java.opts.all=-Xlog:class+load=info:file={log}")
        lines = [line for line in read_text(log).splitlines() if "source:" in line]
        return sum(1 for line in lines if "shared objects file (top)" in line), len(lines)


def jvm_says(log_text: str) -> list[str]:
    """The JVM's CDS errors and refusals in a log, once each."""
    return list(dict.fromkeys(match.group(0).strip() for match in JVM_SAYS.finditer(log_text)))


def run(workspace: Workspace, params: CdsParams, ncores: int) -> Section:
    section = Section(key="cds", title=TITLE, method=method(params))
    if not params.enabled:
        section.skipped = (
            "this section runs in full runs only (a quick run runs it with BENCH_CDS=1; "
            "BENCH_CDS=0 leaves it out of a full run)."
        )
        return section
    runs = Runs(workspace, ncores)
    try:
        making, archive = runs.make_archive()
        _say(f"archive {fmt_bytes(archive.stat().st_size)} made in {making:.1f} s")
        found, said = runs.interleaved(params.reps)
        shared, total = runs.classes_from_archive()
    finally:
        runs.cli.cleanup()
    section.rows = rows(found, params.reps, making, archive.stat().st_size, shared, total, said)
    section.notes += notes(found, shared, total)
    return section


def rows(
    found: dict[str, list[float]],
    reps: int,
    making: float,
    size: int,
    shared: int,
    total: int,
    said: list[str],
) -> list[Row]:
    ours, off, plain = found["archive"], found["no archive"], found["spark-submit"]
    details: dict[str, object] = {
        "flinkish run -d, seconds": ours,
        "spark-submit, seconds": plain,
        "making the archive (python -m flinkish_cli.spark.cds), seconds": making,
        "archive size": fmt_bytes(size),
        "classes the driver JVM took from it": f"{shared} of {total} loaded",
    }
    if said:
        details["the JVM said"] = " ".join(said)
    return [
        Row(
            measurement=f"flinkish run -d until the JobID line (median of {reps})",
            value=median(ours),
            unit="s",
            reference="plain spark-submit of the same script until both queries started",
            reference_value=median(plain),
            samples=ours,
            reference_samples=plain,
            goal=f"ratio ≤ {GOAL:.2f}",
            goal_met=median(ours) <= GOAL * median(plain),
            details=details,
        ),
        Row(
            measurement=f"flinkish run -d until the JobID line, archive in use (median of {reps})",
            value=median(ours),
            unit="s",
            reference="the same with env.java.class-data-sharing=false",
            reference_value=median(off),
            samples=ours,
            reference_samples=off,
            details={"with, seconds": ours, "without, seconds": off},
            note="what the archive saves flinkish's own driver",
        ),
    ]


def notes(found: dict[str, list[float]], shared: int, total: int) -> list[str]:
    ours, off = median(found["archive"]), median(found["no archive"])
    plain = median(found["spark-submit"])
    refused = " The JVM took no class from the archive: it refused it." if not shared else ""
    if not total:
        refused = " (The class-loading log stayed empty: the classes taken were not counted.)"
    return [
        f"flinkish's run -d returned with its JobID after {ours:.2f} s with the archive, "
        f"{off:.2f} s without, against {plain:.2f} s for plain spark-submit to start the "
        f"same queries (ratio {ours / plain:.2f}).{refused}",
        "Plain spark-submit pays for its own JVM's class loading and JIT on every run; "
        "flinkish's driver maps the classes of Spark, Hadoop and Python's gateway from the "
        "archive and keeps its per-job files (properties, log configuration) off the class "
        "path, so one archive serves every job of the same Spark, Java and flinkish.",
    ]
