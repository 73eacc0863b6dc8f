"""Section 1: one unmodified stateful script over a backlog, run three ways.

``benchmarks/jobs/bench_counts.py`` counts rows per key over a backlog of JSON-lines files and
finishes (``trigger(availableNow=True)``). It runs, with identical arguments:

* under flinkish: the repository's ``conf/flink-conf.yaml`` with ``parallelism.default`` set
  to the machine's cores, ``-D execution.runtime-mode=BATCH``;
* under plain ``spark-submit`` with PySpark's defaults (``local[*]``, 200 shuffle partitions,
  the HDFS-backed state store);
* under ``spark-submit`` hand-tuned with exactly the Spark settings flinkish derives from that
  configuration (``to_spark(config).conf`` without ``spark.flinkish.*``), given as ``--conf``.

Each run is timed from process start to exit (JVM start-up included, as a user waits for it),
the repetitions are interleaved so that a change of machine load hits every variant alike,
and every run's output is checked against the counts computed when the backlog was written.
"""

from __future__ import annotations

import collections
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import (
    BENCH_JOBS,
    FLINKISH,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    median,
    progress_events,
    read_text,
    run_timed,
    spark_submit_argv,
    translated_spark_conf,
    write_json_lines,
)
from benchmarks.report import Row, Section

SCRIPT = BENCH_JOBS / "bench_counts.py"
SPEED_UP_GOAL = 5.0  # flinkish at least 5x faster than plain defaults
TUNED_TOLERANCE = 1.05  # and no more than 5% slower than hand-tuned


@dataclass(frozen=True)
class BacklogParams:
    files: int
    rows_per_file: int
    keys: int
    max_files_per_trigger: int
    reps: int


def write_backlog(directory: Path, params: BacklogParams) -> collections.Counter[str]:
    """The input files; the count of every key (the ground truth)."""
    truth: collections.Counter[str] = collections.Counter()
    for number in range(params.files):
        rows = []
        for offset in range(params.rows_per_file):
            index = number * params.rows_per_file + offset
            key = f"k{(index * 7919) % params.keys:07d}"
            truth[key] += 1
            rows.append(f'{{"key":"{key}","value":{index}}}')
        write_json_lines(directory / f"part-{number:05d}.json", rows)
    return truth


def final_counts(output: Path) -> dict[str, int]:
    """Each key's count in its highest batch (update mode, one directory per batch)."""
    latest: dict[str, tuple[int, int]] = {}
    for batch_dir in output.glob("batch=*"):
        batch = int(batch_dir.name.split("=", 1)[1])
        for part in batch_dir.glob("part-*"):
            for line in part.read_text().splitlines():
                if not line:
                    continue
                row = json.loads(line)
                if row["key"] not in latest or latest[row["key"]][0] < batch:
                    latest[row["key"]] = (batch, int(row["count"]))
    return {key: count for key, (_, count) in latest.items()}


def _say(message: str) -> None:
    print(f"[bench] backlog: {message}", file=sys.stderr, flush=True)


def run(workspace: Workspace, params: BacklogParams, ncores: int) -> Section:
    """Measure the three ways; the section with its rows."""
    section = Section(
        key="backlog",
        title="1. A stateful script over a backlog: flinkish, plain spark-submit, hand-tuned",
        method="",
    )
    data = workspace.dir("backlog", "input")
    truth = write_backlog(data, params)
    conf_dir = workspace.conf_dir("backlog", {"parallelism.default": ncores})
    batch_mode = ("execution.runtime-mode=BATCH",)
    tuned, master = translated_spark_conf(conf_dir, {}, batch_mode)
    flags = " ".join(f"--conf {k}={v}" for k, v in tuned.items())
    section.method = (
        f"`benchmarks/jobs/bench_counts.py`, unmodified, counts rows per key over "
        f"{params.files} JSON-lines files ({params.files * params.rows_per_file:,} rows, "
        f"{params.keys:,} distinct keys), {params.max_files_per_trigger} files per micro-batch "
        f"(`--max-files-per-trigger`), then finishes (`trigger(availableNow=True)`). The same "
        "script and arguments run three ways, each timed from process start to exit (JVM "
        f"start-up included), median of {params.reps} interleaved repetitions; every run's "
        "output is checked against the true counts.\n\n"
        f"* **flinkish**: `flinkish run -D execution.runtime-mode=BATCH bench_counts.py ...` "
        f"with the repository's `conf/flink-conf.yaml` plus `parallelism.default: {ncores}` "
        "(the cores) and private directories;\n"
        "* **plain spark-submit**: `spark-submit bench_counts.py ...` (PySpark's defaults: "
        "`local[*]`, 200 shuffle partitions, HDFS-backed state store);\n"
        f"* **hand-tuned spark-submit**: `spark-submit --master {master} {flags} "
        "bench_counts.py ...`: the Spark settings flinkish derives (`to_spark(config).conf` "
        "minus `spark.flinkish.*`)."
    )
    env = clean_env()
    samples: dict[str, list[float]] = {"flinkish": [], "plain": [], "tuned": []}
    batches: dict[str, list[int]] = {"flinkish": [], "plain": [], "tuned": []}
    shutdown: dict[str, list[float]] = {"flinkish": []}
    order = ["flinkish", "plain", "tuned"]
    try:
        for rep in range(params.reps):
            for variant in order[rep % 3 :] + order[: rep % 3]:
                run_dir = workspace.dir("backlog", f"{variant}-{rep}")
                log_path = run_dir / "spark.log"
                args = [
                    "--input",
                    str(data),
                    "--output",
                    str(run_dir / "output"),
                    "--checkpoint",
                    str(run_dir / "checkpoint"),
                    "--max-files-per-trigger",
                    str(params.max_files_per_trigger),
                ]
                if variant == "flinkish":
                    argv = [FLINKISH, "run", *("-D", batch_mode[0]), str(SCRIPT), *args]
                    run_env = clean_env({"FLINK_CONF_DIR": str(conf_dir)})
                elif variant == "plain":
                    argv, run_env = spark_submit_argv(SCRIPT, args, None, None), env
                else:
                    argv, run_env = spark_submit_argv(SCRIPT, args, tuned, master), env
                timed = run_timed(argv, run_env, run_dir, timeout=1800, log_path=log_path).check()
                if variant == "flinkish":  # the CLI returns when the job has ended; its JVM may
                    shutdown[variant].append(_driver_exit(conf_dir, timed.stdout))  # still stop
                counts = final_counts(run_dir / "output")
                if counts != dict(truth):
                    wrong = sum(1 for k, v in truth.items() if counts.get(k) != v)
                    raise BenchError(
                        f"{variant} run {rep}: {wrong} of {len(truth)} counts are wrong"
                    )
                log_text = read_text(log_path)
                if variant == "flinkish":
                    log_text = flinkish_log(conf_dir, timed.stdout)
                batches[variant].append(
                    sum(
                        1
                        for e in progress_events(log_text)
                        if "addBatch" in e.get("durationMs", {})
                    )
                )
                samples[variant].append(timed.seconds)
                _say(f"rep {rep + 1}/{params.reps} {variant}: {timed.seconds:.1f} s")
    finally:  # a run that failed or timed out may leave its job running
        FlinkishCli(conf_dir, workspace.root).cleanup()
    flinkish, plain, tuned_s = (median(samples[v]) for v in ("flinkish", "plain", "tuned"))
    section.rows = [
        Row(
            measurement=f"flinkish, BATCH mode (median of {params.reps})",
            value=flinkish,
            unit="s",
            reference="plain spark-submit, PySpark's defaults",
            reference_value=plain,
            samples=samples["flinkish"],
            reference_samples=samples["plain"],
            goal=f"ratio ≤ {1 / SPEED_UP_GOAL:.2f} (at least {SPEED_UP_GOAL:.0f}× faster)",
            goal_met=flinkish * SPEED_UP_GOAL <= plain,
            details={
                "flinkish runs, seconds": samples["flinkish"],
                "plain spark-submit runs, seconds": samples["plain"],
                "micro-batches (flinkish, plain)": [batches["flinkish"][0], batches["plain"][0]],
                "flinkish's driver still exiting after the CLI returned, seconds": shutdown[
                    "flinkish"
                ],
            },
        ),
        Row(
            measurement=f"flinkish, BATCH mode (median of {params.reps})",
            value=flinkish,
            unit="s",
            reference="spark-submit hand-tuned with flinkish's Spark settings",
            reference_value=tuned_s,
            samples=samples["flinkish"],
            reference_samples=samples["tuned"],
            goal=f"ratio ≤ {TUNED_TOLERANCE:.2f} (at most 5% slower)",
            goal_met=flinkish <= tuned_s * TUNED_TOLERANCE,
            details={"hand-tuned runs, seconds": samples["tuned"]},
        ),
        Row(
            measurement=f"hand-tuned spark-submit (median of {params.reps})",
            value=tuned_s,
            unit="s",
            reference="plain spark-submit, PySpark's defaults",
            reference_value=plain,
            samples=samples["tuned"],
            reference_samples=samples["plain"],
            note="what the settings alone are worth, for context",
        ),
    ]
    section.notes.append(
        "flinkish's figure includes what flinkish adds to a run: the CLI (configuration, "
        "packaging the job's directory), the driver's hooks and status file, and the CLI "
        "following the job until it ends (it polls the status every 0.5 s). It ends when "
        "the CLI returns, which is when the job's status says FINISHED; spark-submit's end "
        "when its JVM has exited. The next run starts only once every process of the job "
        "has exited."
    )
    return section


def _driver_exit(conf_dir: Path, stdout: str) -> float:
    from benchmarks.harness import SUBMITTED

    match = SUBMITTED.search(stdout)
    return FlinkishCli(conf_dir, conf_dir).wait_exited(match.group(1)) if match else 0.0


def flinkish_log(conf_dir: Path, stdout: str) -> str:
    """The driver log of the flinkish job whose submission line is in ``stdout``."""
    from benchmarks.harness import SUBMITTED

    match = SUBMITTED.search(stdout)
    if not match:
        raise BenchError(f"flinkish run printed no JobID:\n{stdout}")
    return read_text(FlinkishCli(conf_dir, conf_dir).log_path(match.group(1)))
