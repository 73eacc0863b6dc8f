"""Section 7 (full runs): class-data sharing (CDS) for the fresh driver's JVM, an experiment.

This module owns the experiment: would a Java 17 dynamic CDS archive of the classes a job's
driver loads make ``flinkish run -d`` reach RUNNING sooner? flinkish is not changed: the
options reach the driver's JVM through ``SPARK_SUBMIT_OPTS`` in the environment of
``flinkish run`` (flinkish's supervisor passes its environment to spark-submit, whose
launcher adds that variable to the driver JVM's options in client mode; the Flink keys
``env.java.opts.*`` become ``spark.driver.extraJavaOptions``, which a client-mode driver
JVM, already started, never applies to itself). The job is ``jobs/counts_per_key.py``.

1. flinkish's own archive: one ``run -d`` with ``-XX:ArchiveClassesAtExit=FILE``, cancelled;
   the JVM writes the archive as it exits, or says in the job's log why it cannot.
2. What an archive is worth where the JVM accepts one: plain ``spark-submit`` of the same
   script with flinkish's Spark settings, until Spark has started both queries, without and
   with an archive made by one such run (stopped with SIGTERM, which writes it), interleaved.
3. ``flinkish run -d`` until RUNNING without and with an archive (flinkish's own if step 1
   made one, else spark-submit's), interleaved; one more run with ``-Xlog:class+load`` to a
   file counts the classes the JVM took from the archive (0 when it refused it).
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.harness import (
    JOBS,
    Background,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    fmt_bytes,
    median,
    read_text,
    spark_submit_argv,
    started_queries,
    translated_spark_conf,
    wait_for,
)
from benchmarks.lifecycle import write_backlog as write_transactions
from benchmarks.report import Row, Section

TITLE = "7. Class-data sharing (CDS) for the fresh driver (experiment)"
SCRIPT = JOBS / "counts_per_key.py"
QUERIES = ("counts", "raw")
#: flinkish's supervisor logs this once the driver's processes (the JVM) have ended.
DRIVER_ENDED = re.compile(r"flinkish\.supervisor: Driver attempt \d+ ended")
WORTH_IT = 0.10  # a gain above 10% of run -d to RUNNING would justify building it in
#: What the JVM says about CDS when it cannot dump or use an archive.
JVM_SAYS = re.compile(
    r"^(?:\[[^]]*\]\[(?:error|warning) *\]\[cds[^]]*\] (?:Error|Unable).*"
    r"|Cannot have non-empty directory in paths.*)$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class CdsParams:
    reps: int  # runs per variant
    enabled: bool  # full runs unless BENCH_CDS=0; quick runs only with BENCH_CDS=1


@dataclass
class Archive:
    """A dynamic archive, who made it, and what making it cost."""

    path: Path
    maker: str  # "flinkish" or "spark-submit"
    size: int = 0
    exit_seconds: float = 0.0  # the making JVM's exit after it was told to stop
    said: list[str] = field(default_factory=list)  # the JVM's CDS messages, if any


def _say(message: str) -> None:
    print(f"[bench] cds: {message}", file=sys.stderr, flush=True)


def method(params: CdsParams) -> str:
    return (
        "A dynamic CDS archive (Java 17: `-XX:ArchiveClassesAtExit=FILE` on one run to make "
        "it, `-XX:SharedArchiveFile=FILE` to use it) for the driver JVM of "
        "`jobs/counts_per_key.py`, given through `SPARK_SUBMIT_OPTS` (flinkish unchanged: "
        "`env.java.opts.*` become `spark.driver.extraJavaOptions`, which the already running "
        "client-mode driver JVM does not apply to itself). (1) flinkish makes its own archive "
        "with one `run -d`, cancelled (the JVM writes it as it exits, or logs why not). (2) "
        "Plain `spark-submit` of the same script with flinkish's Spark settings, until both "
        "queries have started, without and with an archive made by one such run (stopped by "
        "SIGTERM). (3) `flinkish run -d` until RUNNING without and with an archive "
        "(flinkish's own, else spark-submit's), plus one run logging class loading "
        f"(`-Xlog:class+load`) to count the classes taken from it. Medians of {params.reps} "
        "interleaved runs per variant. spark-submit's launcher JVM (which only builds the "
        "driver's command line) runs without an archive throughout."
    )


class Experiment:
    """The runs of the experiment, with one configuration and private directories."""

    def __init__(self, workspace: Workspace, ncores: int) -> None:
        self.workspace = workspace
        self.conf_dir = workspace.conf_dir("cds", {"parallelism.default": ncores})
        self.cli = FlinkishCli(self.conf_dir, workspace.root)
        self.spark_conf, self.master = translated_spark_conf(self.conf_dir, {})
        self.data = workspace.dir("cds", "transactions")
        write_transactions(self.data, 200, 2)
        self.count = 0

    def _dir(self, name: str) -> Path:
        self.count += 1
        return self.workspace.dir("cds", f"{self.count:02d}-{name}")

    def flinkish(self, name: str, options: str = "") -> tuple[float, float, str]:
        """``run -d`` with ``SPARK_SUBMIT_OPTS=options``, cancelled: seconds to RUNNING, the
        seconds its processes took to exit after the cancel returned, and the job's log."""
        run_dir = self._dir(name)
        submission = self.cli.submit_detached(
            str(SCRIPT),
            *("--input", str(self.data), "--output", str(run_dir / "output")),
            cwd=run_dir,
            extra_env={"SPARK_SUBMIT_OPTS": options} if options else None,
        )
        exited = self.cli.cancel_and_wait(submission.job_id)[1]
        log_path = self.cli.log_path(submission.job_id)
        with contextlib.suppress(BenchError):  # the JVM's last words reach the log last
            wait_for(
                "the driver's end in its log", lambda: DRIVER_ENDED.search(read_text(log_path)), 60
            )
        return submission.to_running, exited, read_text(log_path)

    def spark_submit(self, name: str, options: str = "") -> tuple[float, float, str]:
        """``spark-submit`` with ``SPARK_SUBMIT_OPTS=options`` until both queries started,
        then SIGTERM: the seconds to started, the seconds to exit, and its log."""
        run_dir = self._dir(name)
        log_path = run_dir / "spark.log"
        conf = {**self.spark_conf, "spark.sql.streaming.checkpointLocation": str(run_dir / "ck")}
        args = ["--input", str(self.data), "--output", str(run_dir / "output")]
        env = clean_env({"SPARK_SUBMIT_OPTS": options} if options else None)
        began = time.perf_counter()
        driver = Background(
            spark_submit_argv(SCRIPT, args, conf, self.master), env, run_dir, log_path
        )
        try:
            wait_for(f"spark-submit {name}", lambda: self._started(driver, log_path), 600)
            started = time.perf_counter() - began
        finally:
            stopping = time.perf_counter()
            driver.stop(grace=120)
        return started, time.perf_counter() - stopping, read_text(log_path)

    @staticmethod
    def _started(driver: Background, log_path: Path) -> bool:
        if not driver.running():
            raise BenchError(f"spark-submit exited:\n{read_text(log_path)[-3000:]}")
        return set(QUERIES) <= set(started_queries(read_text(log_path)))

    def make_archive(self, maker: str) -> Archive:
        """One run of ``maker`` with ``-XX:ArchiveClassesAtExit``; the archive (size 0 when
        the JVM wrote none, with what it said)."""
        archive = Archive(path=self.workspace.dir("cds") / f"{maker}.jsa", maker=maker)
        run = self.flinkish if maker == "flinkish" else self.spark_submit
        _, archive.exit_seconds, log = run(
            f"make-{maker}", f"-XX:ArchiveClassesAtExit={archive.path}"
        )
        archive.said = jvm_says(log)
        archive.size = archive.path.stat().st_size if archive.path.is_file() else 0
        _say(f"{maker}'s archive: {fmt_bytes(archive.size)} {' '.join(archive.said)[:200]}")
        return archive

    def interleaved(self, kind: str, archive: Path, reps: int) -> dict[str, list[float]]:
        """``reps`` runs of ``kind`` without and with ``archive``, alternating the order;
        the seconds to started (spark-submit) or RUNNING (flinkish), and each exit."""
        run = self.flinkish if kind == "flinkish" else self.spark_submit
        found: dict[str, list[float]] = {"without": [], "with": [], "exit": []}
        for rep in range(reps):
            for variant in ("without", "with") if rep % 2 == 0 else ("with", "without"):
                options = f"-XX:SharedArchiveFile={archive}" if variant == "with" else ""
                seconds, exited, _ = run(f"{kind}-{variant}", options)
                found[variant].append(seconds)
                if variant == "without":
                    found["exit"].append(exited)
                _say(f"{kind} {rep + 1}/{reps} {variant}: {seconds:.1f} s")
        return found

    def classes_from(self, archive: Path) -> tuple[int, int, list[str]]:
        """One ``run -d`` with ``archive`` and class loading logged: the classes taken from
        the archive's top layer, all classes loaded, and the JVM's CDS messages."""
        log = self.workspace.dir("cds") / "class-load.log"
        options = f"-XX:SharedArchiveFile={archive} -Xlog:class+load=info:file={log}"
        _, _, job_log = self.flinkish("class-load", options)
        lines = [line for line in read_text(log).splitlines() if "source:" in line]
        shared = sum(1 for line in lines if "shared objects file (top)" in line)
        return shared, len(lines), jvm_says(job_log)


def jvm_says(log_text: str) -> list[str]:
    """The JVM's CDS errors and refusals in a log, once each."""
    return list(dict.fromkeys(match.group(0).strip() for match in JVM_SAYS.finditer(log_text)))


def run(workspace: Workspace, params: CdsParams, ncores: int) -> Section:
    section = Section(key="cds", title=TITLE, method=method(params))
    if not params.enabled:
        section.skipped = (
            "this experiment runs in full runs only (a quick run runs it with BENCH_CDS=1; "
            "BENCH_CDS=0 leaves it out of a full run)."
        )
        return section
    experiment = Experiment(workspace, ncores)
    try:
        own = experiment.make_archive("flinkish")
        plain = experiment.make_archive("spark-submit")
        if not plain.size:
            raise BenchError(f"spark-submit's JVM wrote no CDS archive: {plain.said}")
        potential = experiment.interleaved("spark-submit", plain.path, params.reps)
        used = own if own.size else plain
        ours = experiment.interleaved("flinkish", used.path, params.reps)
        shared, total, said = experiment.classes_from(used.path)
    finally:
        experiment.cli.cleanup()
    section.rows = [
        flinkish_row(ours, used, shared, total, said, params.reps),
        potential_row(potential, plain, params.reps),
    ]
    section.notes += verdict(own, plain, used, shared, ours, potential)
    return section


def flinkish_row(
    ours: dict[str, list[float]],
    used: Archive,
    shared: int,
    total: int,
    said: list[str],
    reps: int,
) -> Row:
    details: dict[str, object] = {
        "with, seconds": ours["with"],
        "without, seconds": ours["without"],
        "archive used": f"{used.maker}'s ({fmt_bytes(used.size)})",
        "classes the driver JVM took from it": f"{shared} of {total} loaded",
    }
    if said:
        details["the JVM said"] = " ".join(said)
    return Row(
        measurement=f"flinkish run -d until RUNNING, with a CDS archive (median of {reps})",
        value=median(ours["with"]),
        unit="s",
        reference="flinkish run -d until RUNNING, without",
        reference_value=median(ours["without"]),
        samples=ours["with"],
        reference_samples=ours["without"],
        details=details,
    )


def potential_row(potential: dict[str, list[float]], plain: Archive, reps: int) -> Row:
    return Row(
        measurement=f"spark-submit until both queries started, with its CDS archive "
        f"(median of {reps})",
        value=median(potential["with"]),
        unit="s",
        reference="spark-submit until both queries started, without",
        reference_value=median(potential["without"]),
        samples=potential["with"],
        reference_samples=potential["without"],
        details={
            "with, seconds": potential["with"],
            "without, seconds": potential["without"],
            "archive bytes": plain.size,
            "the making run's exit after SIGTERM (archive written), seconds": plain.exit_seconds,
            "a plain run's exit after SIGTERM, seconds": potential["exit"],
        },
        note="what an archive the JVM accepts is worth for this driver",
    )


def verdict(
    own: Archive,
    plain: Archive,
    used: Archive,
    shared: int,
    ours: dict[str, list[float]],
    potential: dict[str, list[float]],
) -> list[str]:
    """What the figures say, and whether building it into flinkish is justified."""
    without = median(ours["without"])
    gain = median(ours["with"]) / without - 1
    saved = median(potential["without"]) - median(potential["with"])
    share = saved / without
    dump = plain.exit_seconds - median(potential["exit"])
    refused = ": the JVM refused it, so the difference is noise" if shared == 0 else ""
    found = [
        f"flinkish as it is: run -d until RUNNING took {median(ours['with']):.1f} s with the "
        f"archive ({used.maker}'s; {shared} classes taken from it{refused}) against "
        f"{without:.1f} s without ({gain:+.0%})."
    ]
    if not own.size:
        directory = any("non-empty directory" in line for line in own.said)
        found.append(
            "flinkish's driver JVM wrote no archive: "
            + (" ".join(own.said) or "the job's log gives no reason")
            + (". Its" if directory else "; a likely cause: its")
            + " class path starts with the job's own run directory (flinkish's "
            "SPARK_CONF_DIR, which holds spark.properties and log4j2.properties), which Java "
            "refuses to archive and which differs for every job, so an archive made by "
            "another run does not match either."
        )
    found.append(
        f"Where the JVM accepts one (plain spark-submit, the same class path every run), the "
        f"archive ({fmt_bytes(plain.size)}) saves {saved:.1f} s until both "
        f"queries start, {share:.0%} of flinkish's run -d to RUNNING ({without:.1f} s); "
        f"making it costs one run whose JVM takes {max(0.0, dump):.1f} s longer to exit."
    )
    if share > WORTH_IT:
        found.append(
            f"That is above {WORTH_IT:.0%}: building it in is justified, and needs flinkish to "
            "keep per-job files off the driver's class path (its log4j configuration by "
            "-Dlog4j.configurationFile instead of SPARK_CONF_DIR), make the archive once per "
            "Spark and Java version (under the user's cache) and pass -XX:SharedArchiveFile "
            "through SPARK_SUBMIT_OPTS."
        )
    else:
        found.append(f"That is not above {WORTH_IT:.0%}: it does not justify building it in.")
    return found
