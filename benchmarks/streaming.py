"""Section 2: steady-state throughput and micro-batch latency of a windowed example job.

``jobs/transactions_windows.py`` (two queries: tumbling and sliding event-time windows per
account) reads transactions that ``scripts/generate_events.py`` writes at a fixed rate, with
event times following the wall clock. It runs for the same duration under flinkish (the
repository's configuration, STREAMING mode, its 2 s checkpoint interval as the trigger) and
under ``spark-submit`` hand-tuned with the Spark settings flinkish derives (and a
checkpoint location, which a file sink needs). Both are measured from the same source,
Spark's own progress reports in the driver's log ("Streaming query made progress"): the
input rows of the batches that started in the steady window (after a warm-up) per second,
and each executed batch's ``durationMs.triggerExecution``.
"""

from __future__ import annotations

import contextlib
import datetime
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    JOBS,
    PYTHON,
    REPO,
    Background,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    job_id_of,
    median,
    percentile,
    progress_events,
    read_text,
    spark_submit_argv,
    started_queries,
    translated_spark_conf,
    wait_for,
)
from benchmarks.report import Row, Section

SCRIPT = JOBS / "transactions_windows.py"
GENERATOR = REPO / "scripts" / "generate_events.py"
QUERIES = 2


@dataclass(frozen=True)
class StreamingParams:
    rate: int  # events per second
    events_per_file: int
    duration: float  # seconds of input, the same for both runs
    warmup: float  # seconds at the start of the input left out of the figures


@dataclass
class Figures:
    """What one run achieved in its steady window."""

    throughput: float  # input rows per second per query
    latencies: list[float]  # triggerExecution of every executed batch, seconds
    batches: int
    rows: int


def _say(message: str) -> None:
    print(f"[bench] streaming: {message}", file=sys.stderr, flush=True)


def _timestamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def analyse(
    events: list[dict[str, Any]], start: float, end: float, skip_first: bool = True
) -> Figures:
    """The figures of the executed batches that started between ``start`` and ``end``;
    with ``skip_first``, never a query's first batch (planning, JIT, Python workers)."""
    executed = []
    seen: set[str] = set()
    for event in events:
        if "addBatch" not in (event.get("durationMs") or {}):
            continue
        first = event.get("name") not in seen
        seen.add(str(event.get("name")))
        if (first and skip_first) or not start <= _timestamp(event["timestamp"]) <= end:
            continue
        executed.append(event)
    if not executed:
        raise BenchError("no micro-batch ran in the steady window")
    rows = sum(int(e.get("numInputRows") or 0) for e in executed)
    return Figures(
        throughput=rows / QUERIES / (end - start),
        latencies=[e["durationMs"]["triggerExecution"] / 1000 for e in executed],
        batches=len(executed),
        rows=rows // QUERIES,
    )


def _generator(directory: Path, params: StreamingParams, log: Path) -> Background:
    argv = [
        PYTHON,
        str(GENERATOR),
        "--kind",
        "transactions",
        "--out",
        str(directory),
        "--rate",
        str(params.rate),
        "--duration",
        str(params.duration),
        "--events-per-file",
        str(params.events_per_file),
        "--start-time",
        "now",
        "--time-step-ms",
        str(max(1, 1000 // params.rate)),
        "--quiet",
    ]
    return Background(argv, clean_env(), REPO, log)


def _feed(directory: Path, params: StreamingParams, log: Path) -> tuple[float, float]:
    """Write the input at the fixed rate for the duration; the steady window (wall clock)."""
    began = time.time()
    generator = _generator(directory, params, log)
    try:
        generator.wait(timeout=params.duration + 120)
    finally:
        generator.stop()
    ended = time.time()
    return began + params.warmup, min(ended, began + params.duration)


def run(workspace: Workspace, params: StreamingParams, ncores: int) -> Section:
    conf_dir = workspace.conf_dir("streaming", {"parallelism.default": ncores})
    tuned, master = translated_spark_conf(conf_dir, {})
    cli = FlinkishCli(conf_dir, workspace.root)
    section = Section(
        key="streaming",
        title="2. Steady state: throughput and micro-batch latency of a windowed job",
        method=(
            f"`jobs/transactions_windows.py` (tumbling and sliding windows per account, two "
            f"queries) over transactions written by `scripts/generate_events.py` at "
            f"{params.rate} events/s ({params.events_per_file} per file, event time = wall "
            f"clock) for {params.duration:.0f} s"
            + (
                f"; the first {params.warmup:.0f} s and each query's first micro-batch are "
                "left out. "
                if params.warmup > 0
                else " (no warm-up left out: a smoke test). "
            )
            + "**flinkish**: `flinkish run -d` with the repository's configuration "
            f"(`parallelism.default: {ncores}`; its `execution.checkpointing.interval: 2 s` "
            "becomes the queries' trigger). **Reference**: `spark-submit` hand-tuned with the "
            "same Spark settings plus `spark.sql.streaming.checkpointLocation`; the unmodified "
            "script sets no trigger, so Spark starts each micro-batch as soon as the previous "
            "one ends. Figures from Spark's progress reports in each driver's log: input rows "
            "per second per query, and `durationMs.triggerExecution` of every executed batch "
            "(median and 95th percentile)."
        ),
    )
    flinkish_dir = workspace.dir("streaming", "flinkish")
    submitted = cli.run(
        "run",
        "-d",
        str(SCRIPT),
        "--input",
        str(flinkish_dir / "input"),
        "--output",
        str(flinkish_dir / "output"),
    ).check()
    job_id = job_id_of(submitted)
    flinkish_log = cli.log_path(job_id)
    try:
        start, end = _feed(flinkish_dir / "input", params, flinkish_dir / "generator.log")
        _settle(flinkish_log, start, end)
    finally:
        cli.run("cancel", job_id, timeout=180)
        cli.wait_exited(job_id)
    skip_first = params.warmup > 0
    flinkish = analyse(progress_events(read_text(flinkish_log)), start, end, skip_first)
    _say(f"flinkish: {flinkish.throughput:.0f} rows/s, {flinkish.batches} batches")

    tuned_dir = workspace.dir("streaming", "tuned")
    log_path = tuned_dir / "spark.log"
    conf = {**tuned, "spark.sql.streaming.checkpointLocation": str(tuned_dir / "checkpoints")}
    args = ["--input", str(tuned_dir / "input"), "--output", str(tuned_dir / "output")]
    (tuned_dir / "input").mkdir(exist_ok=True)
    driver = Background(
        spark_submit_argv(SCRIPT, args, conf, master), clean_env(), tuned_dir, log_path
    )
    try:
        wait_for(
            "the hand-tuned queries to start",
            lambda: _started(driver, log_path),
            timeout=600,
            interval=0.1,
        )
        start_t, end_t = _feed(tuned_dir / "input", params, tuned_dir / "generator.log")
        _settle(log_path, start_t, end_t)
    finally:
        driver.stop()
    reference = analyse(progress_events(read_text(log_path)), start_t, end_t, skip_first)
    _say(f"hand-tuned: {reference.throughput:.0f} rows/s, {reference.batches} batches")

    base = "spark-submit hand-tuned with flinkish's Spark settings"
    details = {
        "batches (flinkish, hand-tuned)": [flinkish.batches, reference.batches],
        "rows per query (flinkish, hand-tuned)": [flinkish.rows, reference.rows],
    }
    section.rows = [
        Row(
            measurement="throughput, input rows/s per query",
            value=flinkish.throughput,
            unit="rows/s",
            reference=base,
            reference_value=reference.throughput,
            samples=[flinkish.throughput],
            reference_samples=[reference.throughput],
            details=details,
            note=f"the input rate is {params.rate} rows/s: a job that keeps up reaches it",
            kind="throughput",
        ),
        Row(
            measurement="micro-batch latency, median of triggerExecution",
            value=median(flinkish.latencies),
            unit="s",
            reference=base,
            reference_value=median(reference.latencies),
            samples=flinkish.latencies,
            reference_samples=reference.latencies,
        ),
        Row(
            measurement="micro-batch latency, p95 of triggerExecution",
            value=percentile(flinkish.latencies, 0.95),
            unit="s",
            reference=base,
            reference_value=percentile(reference.latencies, 0.95),
            samples=flinkish.latencies,
            reference_samples=reference.latencies,
        ),
    ]
    section.notes += [
        "The two runs do not batch alike: flinkish triggers a micro-batch every 2 s (its "
        "checkpoint interval), Spark without a trigger starts the next batch as soon as the "
        "previous one ends, so its batches are smaller and more frequent. The latency ratio "
        "compares batch durations under those two schedules, not the same batches.",
        "End-to-end event latency was not measured: a windowed query in append mode emits a "
        "window only when the watermark (30 s) passes its end, so output time says more about "
        "the window and the watermark than about the engine.",
    ]
    return section


def _settle(log_path: Path, start: float, end: float) -> None:
    """Wait until the batches that started in the window have reported: a batch started
    after it, or nothing new for twice the longest batch (a few minutes at most)."""

    def reported() -> bool:
        executed = [
            (_timestamp(e["timestamp"]), e["durationMs"]["triggerExecution"] / 1000)
            for e in progress_events(read_text(log_path))
            if "addBatch" in (e.get("durationMs") or {})
        ]
        if not any(start <= t <= end for t, _ in executed):
            return False
        quiet = 2 * max(d for _, d in executed) + 2
        last_end = max(t + d for t, d in executed)
        return any(t > end for t, _ in executed) or time.time() > max(end, last_end) + quiet

    with contextlib.suppress(BenchError):  # analyse() says what is missing
        wait_for("the steady window's batches to report", reported, timeout=180, interval=1)


def _started(driver: Background, log_path: Path) -> bool:
    if not driver.running():
        raise BenchError(f"spark-submit exited:\n{read_text(log_path)[-3000:]}")
    return len(started_queries(read_text(log_path))) >= QUERIES
