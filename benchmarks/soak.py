"""The soak: one job run for hours as an operator runs it, and what it writes and holds,
measured per hour of job time (``scripts/soak``).

The job is the counting job of the tests (two queries: a count per key through
``foreachBatch`` and every row through Spark's exactly-once file sink), fed one small file
every ``--input-every`` seconds, checkpointing every 2 s, with periodic savepoints
(``--savepoint-every``) and the operator's history count of 3, ``flinkish web`` polled every
second (the REST API, the dashboard's documents and ``/metrics``), Spark's JVM killed with
SIGKILL every ``--kill-every`` (the supervisor restarts it), and an upgrade through
``flinkish upgrade`` every ``--upgrade-every`` while periodic savepoints run.

Every ``--sample-every`` it records the size of each directory flinkish and Spark write (each
query's checkpoint by part: offsets, commits, sources, state, metadata; the file sink's
``_spark_metadata``; the registry; the logs; the savepoints) and the resident memory of each
process (the driver's Python, its JVM, its supervisor, ``flinkish web``). At the end it
stops feeding, waits until every row is processed, cancels the job and checks exactly once:
every input row in the file sink once, every key's count equal to the ground truth.

The report gives each figure's growth per hour after the first hour of job time (for a run
shorter than two hours, over its second half), against the goals: disk at most 1 % an hour,
memory at most 5 % an hour, logs at most (``env.log.max`` + 1) x the roll size per job.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import page
from benchmarks.harness import (
    BenchError,
    FlinkishCli,
    Workspace,
    fmt_bytes,
    fmt_seconds,
    free_port,
    tail_text,
    write_json_lines,
)

JOB = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "jobs" / "counts"
PROGRAM = JOB / "counts_job.py"
QUERIES = ("counts", "raw")
ROLL_SIZE = "1 mb"
LOG_MAX = 3
JVM = "driver's JVM"
#: How long the end waits for every fed row to be processed before it says what it found.
FINISH_WITHIN = 240.0


@dataclass
class SoakParams:
    duration: float = 7200.0
    input_every: float = 2.0
    savepoint_every: str = "30 s"
    kill_every: float = 300.0
    upgrade_every: float = 1200.0
    poll_every: float = 1.0
    sample_every: float = 60.0


@dataclass
class Sample:
    """One sample: seconds since the start, bytes per directory, RSS bytes per process."""

    at: float
    disk: dict[str, int]
    memory: dict[str, int]


@dataclass
class SoakResult:
    params: SoakParams
    samples: list[Sample] = field(default_factory=list)
    kills: int = 0
    upgrades: list[str] = field(default_factory=list)  # each upgrade's final line
    polls: int = 0
    poll_errors: int = 0
    rows: int = 0
    exactly_once: str = "not checked"
    jobs: list[str] = field(default_factory=list)


# -- measuring --------------------------------------------------------------------------------
def _bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (or of the file ``path``)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    with contextlib.suppress(OSError):
        for root, _dirs, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
    return total


def disk_usage(ws: Workspace, output: Path, jobs: list[str]) -> dict[str, int]:
    """Bytes per part: each query's checkpoint by part (over every job of the lineage, as
    an upgrade's new job starts a new directory), the file sink's log, registry, logs,
    savepoints, and their total."""
    parts: dict[str, int] = collections.defaultdict(int)
    checkpoints = ws.root / "checkpoints" / "soak"
    for job in jobs:
        parts["registry"] += _bytes(checkpoints / job / "_flinkish")
        for query in QUERIES:
            base = checkpoints / job / query
            for part in ("offsets", "commits", "sources", "state"):
                parts[f"checkpoint {part}"] += _bytes(base / part)
            parts["checkpoint metadata"] += _bytes(base / "metadata")
    parts["sink _spark_metadata"] = _bytes(output / "raw" / "_spark_metadata")
    parts["logs"] = _bytes(ws.root / "logs" / "soak")
    parts["savepoints"] = _bytes(ws.root / "savepoints" / "soak")
    parts["total"] = sum(v for k, v in parts.items() if k != "total")
    return dict(parts)


def rss(pid: int | None) -> int:
    if not pid:
        return 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


# -- the run ----------------------------------------------------------------------------------
class Soak:
    """Runs the job and everything around it until ``params.duration`` has passed."""

    def __init__(self, ws: Workspace, params: SoakParams, say: Any = print) -> None:
        self.ws, self.params, self.say = ws, params, say
        self.inputs, self.output = ws.dir("input"), ws.root / "output"
        self.port = free_port()
        conf = ws.conf_dir(
            "soak",
            {
                "execution.checkpointing.interval": "2 s",
                "flinkish.savepoint.periodic.interval": params.savepoint_every,
                "kubernetes.operator.savepoint.history.max.count": 3,
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": 1000,
                "restart-strategy.fixed-delay.delay": "1 s",
                "flinkish.log.max-file-size": ROLL_SIZE,
                "env.log.max": LOG_MAX,
                "parallelism.default": 2,
                "rest.bind-port": self.port,
                "spark.ui.enabled": "false",
            },
        )
        self.cli = FlinkishCli(conf, ws.root, spark_progress=False)  # flinkish's logging
        self.result = SoakResult(params)
        self.truth: collections.Counter[str] = collections.Counter()
        self.seq = 0
        self.job = ""
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def args(self) -> list[str]:
        return [str(PROGRAM), "--input", str(self.inputs), "--output", str(self.output)]

    def feed(self, files: int = 1, rows: int = 20) -> None:
        for _ in range(files):
            lines = []
            for _ in range(rows):
                key = f"k{(self.seq * 31) % 13}"
                lines.append({"key": key, "value": self.seq, "seq": self.seq})
                self.truth[key] += 1
                self.seq += 1
            # Under a hidden name until renamed: Spark's file source lists every other name,
            # and a half-written or vanished file fails its batch for good.
            write_json_lines(self.inputs / f"part-{self.seq:09d}.json", lines)

    def run(self) -> SoakResult:
        params = self.params
        web = self._start_web()
        try:
            self.feed(2)
            self.job = self.cli.submit_detached(*self.args()).job_id
            self.result.jobs.append(self.job)
            self.say(f"soak: job {self.job} runs; web on {self.port}")
            start = time.monotonic()
            threading.Thread(target=self._poll, daemon=True).start()
            feeder = threading.Thread(target=self._feed, daemon=True)
            feeder.start()
            # Kills and upgrades never at one moment: the upgrades fall between two kills.
            next_sample, next_kill = start, start + params.kill_every
            next_upgrade = start + params.upgrade_every + params.kill_every / 2
            while (now := time.monotonic()) - start < params.duration:
                if now >= next_sample:
                    self._sample(now - start, web)
                    next_sample += params.sample_every
                if now >= next_kill:
                    self._kill_jvm()
                    next_kill += params.kill_every
                if now >= next_upgrade:
                    self._upgrade()
                    next_upgrade += params.upgrade_every
                time.sleep(0.1)
            self._sample(time.monotonic() - start, web)
            self._stop.set()
            feeder.join()
            self._finish()
        finally:
            self._stop.set()
            self.cli.cleanup()
            web.send_signal(signal.SIGTERM)
            with contextlib.suppress(Exception):
                web.wait(timeout=15)
        return self.result

    def _feed(self) -> None:
        while not self._stop.wait(self.params.input_every):
            with self._lock:
                self.feed()

    def _running(self, timeout: float = 300.0) -> bool:
        """Wait until the job runs again (after a kill, its restart) and has committed a
        batch since: an operator does not upgrade a job that is restarting."""
        from flinkish_cli.registry.status import JobState

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self._status()
            if status is not None and status.state is JobState.RUNNING and status.queries:
                return True
            time.sleep(0.5)
        return False

    def _start_web(self) -> Any:
        import subprocess

        from benchmarks.harness import FLINKISH

        web = subprocess.Popen(
            [FLINKISH, "web"], env=self.cli.env(), stdout=subprocess.PIPE, text=True,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        line = web.stdout.readline() if web.stdout else ""
        if not line.startswith("flinkish web:"):
            raise RuntimeError(f"flinkish web did not start: {line!r}")
        return web

    def _poll(self) -> None:
        base = f"http://127.0.0.1:{self.port}"
        while not self._stop.wait(self.params.poll_every):
            job = self.job
            for path in (
                "/jobs/overview",
                f"/jobs/{job}/checkpoints",
                "/flinkish/jobs",
                "/metrics",
            ):
                try:
                    with urllib.request.urlopen(base + path, timeout=10) as reply:
                        reply.read()
                    self.result.polls += 1
                except Exception:
                    self.result.poll_errors += 1

    def _status(self) -> Any:
        return self.cli.status(self.job)

    def _sample(self, at: float, web: Any) -> None:
        status = self._status()
        driver = status.pid if status is not None else None
        memory = {
            "driver (Python)": rss(driver),
            JVM: rss(parent_of(driver)) if driver else 0,
            "supervisor": rss(getattr(status, "supervisor_pid", None)),
            "flinkish web": rss(web.pid),
        }
        disk = disk_usage(self.ws, self.output, self.result.jobs)
        self.result.samples.append(Sample(at, disk, memory))
        self.say(
            f"soak {fmt_seconds(at)}: disk {fmt_bytes(disk['total'])}, JVM {fmt_bytes(memory[JVM])}"
        )

    def _kill_jvm(self) -> None:
        if not self._running():
            return
        status = self._status()
        jvm = parent_of(status.pid) if status is not None and status.pid else None
        if jvm:
            with contextlib.suppress(OSError):
                os.kill(jvm, signal.SIGKILL)
                self.result.kills += 1
                self.say(f"soak: killed the JVM {jvm} of job {self.job}")

    def _upgrade(self) -> None:
        self._running()
        done = self.cli.run("upgrade", self.job, *self.args(), timeout=900)
        said = (done.stdout + done.stderr).strip().splitlines()
        final = next((line for line in reversed(said) if line.startswith("Upgrade of job")), "")
        self.result.upgrades.append(final or f"failed: {' '.join(said[-2:])}")
        for line in done.stdout.splitlines():
            if line.startswith("Job has been submitted with JobID "):
                self.job = line.split()[-1]
                self.result.jobs.append(self.job)
        self.say(f"soak: upgrade: {self.result.upgrades[-1]}")

    def _finish(self) -> None:
        """Every row processed, the job cancelled, exactly once checked: the file sink's
        committed rows (through its own log, as Spark reads it) and the newest counts."""
        from tests.fixtures.sink_log import committed_rows, final_counts

        deadline = time.monotonic() + FINISH_WITHIN
        while True:
            with contextlib.suppress(Exception):
                raw, counts = committed_rows(self.output / "raw"), final_counts(self.counts)
                if len(raw) >= self.seq and sum(counts.values()) >= self.seq:
                    break
            if time.monotonic() > deadline:
                raise BenchError(self._stuck())
            time.sleep(1)
        self.cli.run("cancel", self.job, timeout=180)
        raw, counts = committed_rows(self.output / "raw"), final_counts(self.counts)
        seqs = collections.Counter(int(row["seq"]) for row in raw)
        doubled = [s for s, n in seqs.items() if n > 1]
        missing = self.seq - len(seqs)
        self.result.rows = self.seq
        if not doubled and missing == 0 and counts == dict(self.truth):
            self.result.exactly_once = (
                f"yes: {self.seq} rows, each once; {len(counts)} counts right"
            )
        else:
            wrong = sum(1 for k, v in self.truth.items() if counts.get(k) != v)
            self.result.exactly_once = (
                f"NO: {len(doubled)} rows twice, {missing} missing, {wrong} counts wrong"
            )

    def _stuck(self) -> str:
        """Why the rows did not all arrive: the job's status and its log's last lines."""
        status = self._status()
        state = "unknown"
        if status is not None:
            state = f"{status.state.name} ({status.failure_cause or 'no failure'})"
        log = tail_text(self.cli.log_path(self.job), 6000)
        return (
            f"soak: {self.seq} rows fed, not all processed within {FINISH_WITHIN:.0f} s; "
            f"job {self.job} is {state}; upgrades: {self.result.upgrades}; its log ends:\n{log}"
        )

    @property
    def counts(self) -> Path:
        return self.output / "counts"


# -- the report -------------------------------------------------------------------------------
def _describe(params: SoakParams) -> str:
    return (
        f"Run of {fmt_seconds(params.duration)}: a file of 20 rows every "
        f"{params.input_every:g} s, checkpoints every 2 s, periodic savepoints every "
        f"{params.savepoint_every} (history count 3), flinkish web polled every "
        f"{params.poll_every:g} s, Spark's JVM killed every {fmt_seconds(params.kill_every)}, "
        f"an upgrade every {fmt_seconds(params.upgrade_every)}; logs roll at {ROLL_SIZE} "
        f"with env.log.max {LOG_MAX}."
    )


def per_hour(samples: list[Sample], kind: str, name: str) -> tuple[float, float, float]:
    """The figure at the baseline (one hour in, or halfway for a shorter run), at the end,
    and its growth per hour between them as a fraction of the baseline."""
    measured = [s for s in samples if getattr(s, kind).get(name)]  # a process was down: no figure
    if len(measured) < 2:
        return 0.0, 0.0, 0.0
    end = measured[-1]
    anchor = 3600.0 if end.at >= 7200.0 else end.at / 2
    base = min(measured, key=lambda s: abs(s.at - anchor))
    first = getattr(base, kind).get(name, 0)
    last = getattr(end, kind).get(name, 0)
    hours = max(end.at - base.at, 1.0) / 3600.0
    growth = (last - first) / first / hours if first else 0.0
    return first, last, growth


def report(result: SoakResult) -> str:
    """The soak's report, in Markdown."""
    samples = result.samples
    end = samples[-1]
    lines = [
        f"Job time {fmt_seconds(end.at)}; {result.kills} JVM kills, "
        f"{len(result.upgrades)} upgrades, {result.polls} REST polls "
        f"({result.poll_errors} failed); exactly once: {result.exactly_once}.",
        "",
        "| what | at the baseline | at the end | growth per hour | goal |",
        "|---|---|---|---|---|",
    ]
    for name in end.disk:
        first, last, growth = per_hour(samples, "disk", name)
        goal = "≤ 1 %/h" if name == "total" else ""
        lines.append(
            f"| disk: {name} | {fmt_bytes(first)} | {fmt_bytes(last)} | {growth:+.1%} | {goal} |"
        )
    for name in end.memory:
        first, last, growth = per_hour(samples, "memory", name)
        lines.append(
            f"| memory: {name} | {fmt_bytes(first)} | {fmt_bytes(last)} | {growth:+.1%} | ≤ 5 %/h |"
        )
    stable = sum(1 for line in result.upgrades if line.rstrip(".").endswith("is stable"))
    lines += ["", f"Upgrades: {len(result.upgrades)}, {stable} of them completed and stable."]
    lines += ["", READING]
    return "\n".join(lines) + "\n"


#: How to read the soak's table (the same for every run)
READING = (
    "Reading the table: the checkpoint's offsets and commits, the logs (rolled and capped by "
    "`env.log.max`) and the savepoints (`state.savepoints.history.count`) are bounded; what "
    "grows with the job's age is what Spark records per input and output file, the file "
    "sources' logs (`sources`) and the file sink's `_spark_metadata`, each a list of every "
    "file ever read or written. Spark offers no bound for the source's log; flinkish "
    "reports it (`flinkish info <JobID>`, the dashboard, "
    '`flinkish_query_checkpoint_bytes{grows="age"}`) with what to do. The registry grows '
    "by one entry per upgrade (the replaced job stays for `list -a` and the savepoint "
    "lineage), and state with the keys of the counting job."
)


#: The soak's section of docs/benchmarks.md, kept between these lines (``scripts/bench``
#: rewrites the rest of the page and keeps it: :func:`benchmarks.report.write_markdown`).
DOCS_BEGIN, DOCS_END = page.SOAK


def soak_section(text: str) -> str:
    """The soak's section of the benchmark page, from :func:`report`'s text."""
    title = "## 9. The soak: a job for hours (scripts/soak)"
    return f"{DOCS_BEGIN}\n{title}\n\n{text.rstrip()}\n{DOCS_END}\n"


def write_docs(text: str, path: Path = page.DOCS) -> None:
    text_before = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(page.keep_section(text_before, soak_section(text), DOCS_BEGIN, DOCS_END))


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/soak", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=7200, help="seconds (default 7200)")
    parser.add_argument("--dir", default="/tmp/flinkish-soak", help="work directory")
    parser.add_argument("--kill-every", type=float, default=300)
    parser.add_argument("--upgrade-every", type=float, default=1200)
    parser.add_argument("--savepoint-every", default="30 s")
    parser.add_argument("--input-every", type=float, default=2.0)
    parser.add_argument("--sample-every", type=float, default=60)
    parser.add_argument("--json", help="also write the samples as JSON to this file")
    parser.add_argument(
        "--docs", action="store_true", help="write the report into docs/benchmarks.md"
    )
    args = parser.parse_args(argv)
    # a SIGTERM (kill, a CI timeout) unwinds like Ctrl-C, so that the job, its supervisor
    # and flinkish web started here are stopped here, not left running
    signal.signal(signal.SIGTERM, _interrupted)
    root = Path(args.dir)
    if root.exists():
        import shutil

        shutil.rmtree(root)
    params = SoakParams(
        duration=args.duration, input_every=args.input_every,
        savepoint_every=args.savepoint_every, kill_every=args.kill_every,
        upgrade_every=args.upgrade_every, sample_every=args.sample_every,
    )  # fmt: skip
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        result = Soak(Workspace(root), params).run()
    except KeyboardInterrupt:
        print("soak: interrupted; what it started is stopped.", file=sys.stderr)
        return 130
    text = report(result)
    print(text)
    if args.docs:
        from benchmarks.machine import describe, provenance

        run = {**describe(), "started": started}
        write_docs(f"{provenance(run)} {_describe(params)}\n\n{text}")
    if args.json:
        Path(args.json).write_text(
            json.dumps([s.__dict__ for s in result.samples], indent=1, default=str)
        )
    return 0 if result.exactly_once.startswith("yes") else 1


if __name__ == "__main__":
    raise SystemExit(main())
