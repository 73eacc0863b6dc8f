"""The autoscaler under a step in load: an enrichment job fed at a low rate, then six times
that rate, then low again, run with the autoscaler and left at its starting parallelism
(``scripts/autoscale``).

The job (``benchmarks/jobs/enrich_job.py``) looks each row's key up in a local HTTP service
with a fixed latency (:class:`Service`, started here: a threaded server on 127.0.0.1 that
answers every request after ``--latency`` ms), one request per row from a Python UDF after a
repartition by key, so its throughput grows with its parallelism even on two cores: a task
waits on the service, and N tasks wait N at once. It counts rows per key (state that an
in-place rescale repartitions, written idempotently through ``foreachBatch``) and writes
every enriched row to Spark's exactly-once file sink. A file of JSON rows is written every
second: ``--rate`` rows/s for ``--low`` seconds, ``--factor`` times that for ``--high``
seconds, ``--rate`` again for ``--low-after`` seconds.

The same schedule is run twice, both jobs at once (their work waits on the service, not on
the cores; ``--sequential`` runs one after the other): **autoscaled** (``job.autoscaler.enabled``
with RocksDB, from ``--start-parallelism``) and **fixed** at the starting parallelism. The
fixed-at-the-largest-parallelism run is not run: its slot-seconds are the largest
parallelism the autoscaler chose times the schedule's duration (a fixed job holds its slots
whatever its load).

Every ``--sample-every`` seconds each run records the job's parallelism (its status), the
rows written and the rows its file sink has committed. A file source reports no lag, so the
**backlog** is the benchmark's own: rows written minus rows in the sink. At the end it stops
feeding, waits until every row is processed, cancels the job and checks exactly once: every
input row in the sink once and enriched, every key's count equal to the ground truth. Each
decision of the autoscaler is read from the job's ``_flinkish/rescales.json``.

The report gives the goals of the issue, each held or not, never asserted: the step's
backlog worked off within ``catch-up.duration`` of the step's first rescale and not growing
again during the step (a backlog is *worked off* at or below two trigger intervals of input
at the step's rate: what a job that keeps up holds between its batches); at most 2 rescales
up and 1 down for the step and none before it; exactly once; slot-seconds at most 0.6 of
the job fixed at the largest parallelism the autoscaler chose.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.server
import itertools
import json
import signal
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import page
from benchmarks.harness import (
    BENCH_JOBS,
    FlinkishCli,
    Workspace,
    fmt_seconds,
    free_port,
    write_json_lines,
)

PROGRAM = BENCH_JOBS / "enrich_job.py"
KEYS = [f"k{i:03d}" for i in range(200)]
REGIONS = 7
AUTOSCALED, FIXED = "autoscaled", "fixed"
#: Goal figures of the issue.
MAX_UP, MAX_DOWN, SLOT_SHARE = 2, 1, 0.6


def region_of(key: str) -> str:
    """The service's answer for ``key`` (the sink's rows are checked against it)."""
    return f"r{zlib.crc32(key.encode()) % REGIONS}"


# -- the service ------------------------------------------------------------------------------
class Service:
    """A threaded HTTP server on 127.0.0.1: ``GET /<key>`` answers ``{"key", "region"}``
    after ``latency`` seconds. At most ``bound`` requests are served at once (the others
    wait their turn, as a rate-limited service makes them); :meth:`stop` ends it."""

    def __init__(self, latency: float, bound: int = 64) -> None:
        self.latency = latency
        self.requests = 0
        self.most = 0  # the most requests served at once
        slots = threading.BoundedSemaphore(bound)
        lock = threading.Lock()
        active = [0]
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with slots:
                    with lock:
                        active[0] += 1
                        service.requests += 1
                        service.most = max(service.most, active[0])
                    time.sleep(service.latency)
                    with lock:
                        active[0] -= 1
                key = self.path.rstrip("/").rsplit("/", 1)[-1]
                body = json.dumps({"key": key, "region": region_of(key)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 128
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/lookup"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Service:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


# -- parameters and results -------------------------------------------------------------------
@dataclass
class AutoscaleParams:
    rate: float = 2.0  # rows/s of the low phases (a slot looks up 10 rows/s at most)
    factor: float = 6.0  # the step: factor × rate
    low: float = 600.0  # seconds of each phase
    high: float = 600.0
    low_after: float = 600.0
    latency: float = 0.100  # the service's, per request
    trigger: float = 5.0  # the job's processing-time trigger, seconds
    #: maxFilesPerTrigger (a file a second): a batch may take 30 s of input, so a job that
    #: scaled up works a backlog off faster than its batches' fixed cost (10 files capped the
    #: catch-up of parallelism 6 at about 1.3 times that of 1)
    max_files: int = 30
    start_parallelism: int = 1
    max_parallelism: int = 6
    sample_every: float = 5.0
    concurrent: bool = True  # both runs at once (their work waits on the service)
    #: the autoscaler's keys (job.autoscaler.<key>)
    autoscaler: dict[str, str] = field(
        default_factory=lambda: {
            "interval": "10 s",
            "metrics.window": "2 min",
            "stabilization.interval": "1 min",
            "scale-down.interval": "5 min",
            "catch-up.duration": "3 min",
            # one scale-down straight to what the low rate needs (Flink's 0.6 goes 6, 3, 2
            # with scale-down.interval between them; each step is a restart)
            "scale-down.max-factor": "0.9",
            "utilization.target": "0.4",
            "utilization.min": "0.3",
            "utilization.max": "0.8",
        }
    )
    enabled: bool = True  # as a section of scripts/bench: only with BENCH_AUTOSCALE=1

    @classmethod
    def quick(cls, **changes: Any) -> AutoscaleParams:
        """A smoke test of a few minutes a run: short phases and autoscaler windows."""
        params = cls(low=90, high=150, low_after=105, **changes)
        params.autoscaler.update(
            {
                "interval": "5 s",
                "metrics.window": "60 s",
                "stabilization.interval": "15 s",
                "scale-down.interval": "60 s",
                "catch-up.duration": "60 s",
            }
        )
        return params

    @property
    def step(self) -> tuple[float, float]:
        """When the high phase starts and ends, in seconds of the schedule."""
        return self.low, self.low + self.high

    @property
    def duration(self) -> float:
        return self.low + self.high + self.low_after

    def rate_at(self, at: float) -> float:
        start, end = self.step
        if at < 0 or at >= self.duration:
            return 0.0
        return self.rate * self.factor if start <= at < end else self.rate

    def catch_up(self) -> float:
        """``catch-up.duration`` in seconds."""
        from flinkish_cli.config.units import parse_duration

        return parse_duration(self.autoscaler["catch-up.duration"]).total_seconds()


@dataclass
class Sample:
    """One sample of a run: seconds into the schedule, the job's parallelism, the rows
    written so far and the rows its sink has committed."""

    at: float
    parallelism: int
    written: int
    processed: int

    @property
    def backlog(self) -> int:
        return max(0, self.written - self.processed)


@dataclass
class RunResult:
    """One run of the schedule."""

    name: str
    job: str = ""
    samples: list[Sample] = field(default_factory=list)
    #: the job's rescale records, ``time``/``end-time`` turned into seconds of the schedule
    rescales: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0
    drained_at: float | None = None  # when every row was processed (seconds of the schedule)
    exactly_once: str = "not checked"
    error: str = ""


@dataclass
class AutoscaleResult:
    params: AutoscaleParams
    runs: dict[str, RunResult] = field(default_factory=dict)
    requests: int = 0  # the service's
    most_at_once: int = 0
    #: when the run started (UTC), for the report's provenance line
    started: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "params": asdict(self.params),
            "runs": {
                name: {**asdict(run), "samples": [asdict(s) for s in run.samples]}
                for name, run in self.runs.items()
            },
            "requests": self.requests,
            "most_at_once": self.most_at_once,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AutoscaleResult:
        """A result :meth:`to_json` wrote (``--json``), to report again (``--report``)."""
        runs = {}
        for name, run in data["runs"].items():
            samples = [Sample(**s) for s in run.pop("samples")]
            runs[name] = RunResult(**{**run, "samples": samples})
        return cls(
            AutoscaleParams(**data["params"]),
            runs,
            data["requests"],
            data["most_at_once"],
            data.get("started", ""),
        )


# -- one run ----------------------------------------------------------------------------------
class Run:
    """One job over the whole schedule: fed, sampled, drained, cancelled and checked."""

    def __init__(
        self, ws: Workspace, params: AutoscaleParams, name: str, service: str, say: Any = print
    ) -> None:
        self.ws, self.params, self.name, self.say = ws, params, name, say
        self.inputs, self.output = ws.dir("input", name), ws.root / "output" / name
        settings: dict[str, Any] = {
            "state.backend.type": "rocksdb",
            "parallelism.default": params.start_parallelism,
            "rest.bind-port": free_port(),
            "spark.ui.enabled": "false",
        }
        if name == AUTOSCALED:
            settings["job.autoscaler.enabled"] = "true"
            settings["job.autoscaler.vertex.min-parallelism"] = params.start_parallelism
            settings["job.autoscaler.vertex.max-parallelism"] = params.max_parallelism
            settings.update({f"job.autoscaler.{k}": v for k, v in params.autoscaler.items()})
        self.cli = FlinkishCli(ws.conf_dir(name, settings), ws.root, spark_progress=False)
        self.service = service
        self.result = RunResult(name)
        self.truth: collections.Counter[str] = collections.Counter()
        self.seq = 0
        self._owed = 0.0  # the fraction of a row the schedule owes the next file
        self._counted: dict[str, int] = {}  # committed sink file -> its rows

    def args(self) -> list[str]:
        p = self.params
        return [
            str(PROGRAM), "--input", str(self.inputs), "--output", str(self.output),
            "--service", self.service, "--max-files", str(p.max_files),
            "--trigger", f"{p.trigger:g}",
        ]  # fmt: skip

    def feed(self, rows: int) -> None:
        """One file of ``rows`` rows (none when the schedule owes less than one)."""
        if rows <= 0:
            return
        batch = []
        for _ in range(rows):
            key = KEYS[(self.seq * 7919) % len(KEYS)]
            batch.append({"key": key, "seq": self.seq})
            self.truth[key] += 1
            self.seq += 1
        write_json_lines(self.inputs / f"part-{self.seq:09d}.json", batch)

    def processed(self) -> int:
        """Rows the file sink has committed (each committed file counted once)."""
        from tests.fixtures.sink_log import committed_files

        with contextlib.suppress(Exception):  # a log file caught half-written: next time
            for path in committed_files(self.output / "enriched"):
                if str(path) not in self._counted:
                    self._counted[str(path)] = sum(1 for line in path.open() if line.strip())
        return sum(self._counted.values())

    def parallelism(self) -> int:
        status = None
        with contextlib.suppress(Exception):
            status = self.cli.status(self.result.job)
        if status is None or status.parallelism is None:
            return self.result.samples[-1].parallelism if self.result.samples else 0
        return int(status.parallelism)

    def run(self) -> RunResult:
        params = self.params
        try:
            self.feed(int(params.rate))
            self.result.job = self.cli.submit_detached(*self.args()).job_id
            self.say(f"autoscale {self.name}: job {self.result.job} runs")
            start, epoch = time.monotonic(), time.time()
            next_file, next_sample = start + 1.0, start
            while (at := time.monotonic() - start) < params.duration:
                if time.monotonic() >= next_file:
                    self._owed += params.rate_at(at)
                    self.feed(int(self._owed))
                    self._owed -= int(self._owed)
                    next_file += 1.0
                if time.monotonic() >= next_sample:
                    self._sample(at)
                    next_sample += params.sample_every
                time.sleep(0.05)
            self._drain(start)
            self.cli.run("cancel", self.result.job, timeout=180)
            self._rescales(epoch)
            self._check()
        except Exception as error:
            self.result.error = f"{type(error).__name__}: {error}"
            self.say(f"autoscale {self.name}: {self.result.error}")
        finally:
            self.cli.cleanup()
        return self.result

    def _sample(self, at: float) -> Sample:
        sample = Sample(round(at, 1), self.parallelism(), self.seq, self.processed())
        self.result.samples.append(sample)
        if len(self.result.samples) % 6 == 1:
            self.say(
                f"autoscale {self.name} {fmt_seconds(at)}: parallelism {sample.parallelism}, "
                f"backlog {sample.backlog} rows"
            )
        return sample

    def _drain(self, start: float, timeout: float = 900.0) -> None:
        """Sample on until every row written is processed (or ``timeout`` passed)."""
        deadline = time.monotonic() + timeout
        next_sample = time.monotonic()
        while time.monotonic() < deadline:
            if time.monotonic() >= next_sample:
                sample = self._sample(time.monotonic() - start)
                if sample.backlog == 0:
                    self.result.drained_at = sample.at
                    return
                next_sample += self.params.sample_every
            time.sleep(0.2)

    def _rescales(self, epoch: float) -> None:
        path = self.ws.root / "checkpoints" / self.name / self.result.job / "_flinkish"
        with contextlib.suppress(OSError, ValueError):
            records = json.loads((path / "rescales.json").read_text()).get("rescales", [])
            for record in records:
                end = record.get("end-time")
                self.result.rescales.append(
                    {
                        "at": round(record["time"] / 1000 - epoch, 1),
                        "ended": round(end / 1000 - epoch, 1) if end else None,
                        "from": record["from"],
                        "to": record["to"],
                        "direction": record.get("direction", ""),
                        "outcome": record.get("outcome", ""),
                        "reason": record.get("reason", ""),
                    }
                )

    def _check(self) -> None:
        from tests.fixtures.sink_log import committed_rows, final_counts

        rows = committed_rows(self.output / "enriched")
        counts = final_counts(self.output / "counts")
        seqs = collections.Counter(int(row["seq"]) for row in rows)
        doubled = sum(1 for n in seqs.values() if n > 1)
        missing = self.seq - len(seqs)
        wrong = sum(1 for row in rows if row.get("region") != region_of(row["key"]))
        bad_counts = sum(1 for k, v in self.truth.items() if counts.get(k) != v)
        self.result.rows = self.seq
        if not (doubled or missing or wrong or bad_counts) and len(counts) == len(self.truth):
            self.result.exactly_once = (
                f"yes: {self.seq} rows, each once and enriched; {len(counts)} counts right"
            )
        else:
            self.result.exactly_once = (
                f"NO: {doubled} rows twice, {missing} missing, {wrong} not enriched, "
                f"{bad_counts} counts wrong"
            )


class Autoscale:
    """Both runs of the schedule against one service."""

    def __init__(self, ws: Workspace, params: AutoscaleParams, say: Any = print) -> None:
        self.ws, self.params, self.say = ws, params, say

    def run(self) -> AutoscaleResult:
        result = AutoscaleResult(
            self.params, started=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        )
        with Service(self.params.latency) as service:
            runs = [
                Run(self.ws, self.params, n, service.url, self.say) for n in (AUTOSCALED, FIXED)
            ]
            if self.params.concurrent:
                threads = [threading.Thread(target=r.run, daemon=True) for r in runs]
                for thread in threads:
                    thread.start()
                try:
                    for thread in threads:
                        thread.join()
                except BaseException:  # interrupted: the runs' threads die with the process
                    for run in runs:
                        run.cli.cleanup()
                    raise
            else:
                for run in runs:
                    run.run()
            result.runs = {run.name: run.result for run in runs}
            result.requests, result.most_at_once = service.requests, service.most
        return result


# -- the figures ------------------------------------------------------------------------------
def settled(params: AutoscaleParams) -> float:
    """The backlog of a job that keeps up with the step: two trigger intervals of its input."""
    return params.rate * params.factor * params.trigger * 2


def applied(run: RunResult, direction: str, begin: float, end: float) -> list[dict[str, Any]]:
    """The run's completed rescales in ``direction`` decided within [begin, end)."""
    return [
        r
        for r in run.rescales
        if r["direction"] == direction and r["outcome"] == "COMPLETED" and begin <= r["at"] < end
    ]


def grows_throughout(samples: list[Sample], begin: float, end: float, parts: int = 4) -> bool:
    """Whether the backlog grows for the whole of [begin, end]: the mean of its samples in each
    of ``parts`` equal stretches is above the one before. A job's backlog moves in steps (it
    drops by a batch's files each time one commits), so no single sample is the measure."""
    width = (end - begin) / parts
    means = []
    for part in range(parts):
        lo, hi = begin + part * width, begin + (part + 1) * width
        last = part == parts - 1
        inside = [s.backlog for s in samples if lo <= s.at < hi or (last and s.at == hi)]
        if not inside:
            return False
        means.append(sum(inside) / len(inside))
    return all(later > earlier for earlier, later in itertools.pairwise(means))


def slot_seconds(samples: list[Sample], end: float) -> float:
    """Parallelism × time from the schedule's start to ``end`` (each sample's parallelism
    held until the next sample)."""
    total = 0.0
    for sample, following in zip(samples, [*samples[1:], None], strict=True):
        if sample.at >= end:
            break
        until = min(end, following.at if following is not None else end)
        total += sample.parallelism * max(0.0, until - max(sample.at, 0.0))
    return total


@dataclass
class Figures:
    """What the report says of a result."""

    first_rescale: float | None  # when the step's first scale-up was decided
    worked_off: float | None  # when the step's backlog was worked off (and stayed so)
    catch_up_seconds: float | None  # worked_off - first_rescale
    regrew: bool  # the backlog grew above the settled level again after it was worked off
    peak: int  # the autoscaled run's largest backlog during the step
    fixed_peak: int  # the fixed run's backlog at the step's end
    fixed_grew: bool  # the fixed run's backlog grew for the whole step
    ups: int
    downs: int
    before: int  # rescales decided in the first low phase
    largest: int  # the largest parallelism the autoscaler chose
    slot_seconds: float
    fixed_max_slot_seconds: float

    @property
    def slot_share(self) -> float:
        return (
            self.slot_seconds / self.fixed_max_slot_seconds if self.fixed_max_slot_seconds else 0.0
        )


def figures(result: AutoscaleResult) -> Figures:
    params = result.params
    start, end = params.step
    auto = result.runs.get(AUTOSCALED, RunResult(AUTOSCALED))
    fixed = result.runs.get(FIXED, RunResult(FIXED))
    level = settled(params)
    ups = applied(auto, "up", start, params.duration)
    downs = applied(auto, "down", start, params.duration + 3600)
    first = ups[0]["at"] if ups else None
    worked_off, regrew = None, False
    if first is not None:
        after = [s for s in auto.samples if first <= s.at <= end]
        for index, sample in enumerate(after):
            if sample.backlog <= level:
                worked_off = sample.at
                regrew = any(s.backlog > level for s in after[index:])
                break
    during = [s for s in auto.samples if start <= s.at <= end]
    fixed_during = [s for s in fixed.samples if start <= s.at <= end]
    fixed_peak = fixed_during[-1].backlog if fixed_during else 0
    fixed_grew = fixed_peak > level and grows_throughout(fixed_during, start, end)
    chosen = [r["to"] for r in auto.rescales if r["outcome"] == "COMPLETED"]
    largest = max([params.start_parallelism, *chosen, *(s.parallelism for s in auto.samples)])
    return Figures(
        first_rescale=first,
        worked_off=worked_off,
        catch_up_seconds=worked_off - first
        if worked_off is not None and first is not None
        else None,
        regrew=regrew,
        peak=max((s.backlog for s in during), default=0),
        fixed_peak=fixed_peak,
        fixed_grew=fixed_grew,
        ups=len(ups),
        downs=len(downs),
        before=sum(1 for r in auto.rescales if r["at"] < start),
        largest=largest,
        slot_seconds=slot_seconds(auto.samples, params.duration),
        fixed_max_slot_seconds=largest * params.duration,
    )


def goals(result: AutoscaleResult, f: Figures) -> list[tuple[str, str, bool]]:
    """Each goal of the issue: what it says, what was measured, whether it held."""
    params = result.params
    catch_up = params.catch_up()
    auto = result.runs.get(AUTOSCALED, RunResult(AUTOSCALED))
    fixed = result.runs.get(FIXED, RunResult(FIXED))
    if f.first_rescale is None:
        measured = "no scale-up during the step"
    elif f.catch_up_seconds is None:
        measured = f"not worked off by the step's end (first rescale at {f.first_rescale:.0f} s)"
    else:
        measured = f"worked off {f.catch_up_seconds:.0f} s after the step's first rescale" + (
            "; grew again" if f.regrew else "; did not grow again"
        )
    return [
        (
            f"the step's backlog worked off within catch-up.duration ({fmt_seconds(catch_up)}) "
            "of the rescale, not growing again during the step",
            measured,
            f.catch_up_seconds is not None and f.catch_up_seconds <= catch_up and not f.regrew,
        ),
        (
            f"left at parallelism {params.start_parallelism}, the backlog grows for the whole step",
            f"{f.fixed_peak} rows at the step's end"
            + (
                "; each quarter of the step above the one before"
                if f.fixed_grew
                else "; not growing in every quarter of the step"
            ),
            f.fixed_grew,
        ),
        (
            f"at most {MAX_UP} rescales up and {MAX_DOWN} down for the step, none before it",
            f"{f.ups} up, {f.downs} down; {f.before} in the first low phase",
            f.ups <= MAX_UP and f.downs <= MAX_DOWN and f.before == 0,
        ),
        (
            "exactly once: the sink's output equals the input's ground truth",
            f"autoscaled: {auto.exactly_once}; fixed: {fixed.exactly_once}",
            auto.exactly_once.startswith("yes") and fixed.exactly_once.startswith("yes"),
        ),
        (
            f"slot-seconds at most {SLOT_SHARE:g} of the job fixed at the largest parallelism "
            "the autoscaler chose",
            f"{f.slot_seconds:.0f} of {f.fixed_max_slot_seconds:.0f} slot-s "
            f"({f.slot_share:.2f}; fixed at {f.largest})",
            0 < f.slot_share <= SLOT_SHARE,
        ),
    ]


# -- the report -------------------------------------------------------------------------------
def describe(params: AutoscaleParams) -> str:
    keys = ", ".join(f"{k} {v}" for k, v in params.autoscaler.items())
    how = "at once" if params.concurrent else "one after the other"
    quick = (
        "A quick run (`scripts/autoscale --quick`): a smoke test with phases and windows "
        "shorter than the issue's 10 minutes each; `scripts/autoscale` runs those. "
        if params.high < 600
        else ""
    )
    return quick + (
        f"Schedule: {params.rate:g} rows/s for {fmt_seconds(params.low)}, "
        f"{params.rate * params.factor:g} rows/s for {fmt_seconds(params.high)}, "
        f"{params.rate:g} rows/s for {fmt_seconds(params.low_after)} (a file a second). Each "
        f"row is looked up in a local HTTP service answering after "
        f"{params.latency * 1000:g} ms, after a repartition by key (a task per slot); "
        f"trigger {params.trigger:g} s, maxFilesPerTrigger {params.max_files}, RocksDB. "
        f"Two runs, {how}: autoscaled from parallelism {params.start_parallelism} "
        f"(at most {params.max_parallelism}; {keys}) and fixed at "
        f"{params.start_parallelism}. The fixed-at-the-largest run is computed, not run: "
        "its slot-seconds are that parallelism × the schedule's duration."
    )


def _at(samples: list[Sample], at: float) -> Sample | None:
    """The last sample at or before ``at``."""
    before = [s for s in samples if s.at <= at]
    return before[-1] if before else None


def _bar(value: float, most: float, width: int = 24) -> str:
    return "█" * round(width * value / most) if most > 0 else ""


def timeline(result: AutoscaleResult, every: float = 30.0) -> list[str]:
    """The chart: a row every ``every`` seconds of input rate, parallelism and backlog."""
    params = result.params
    auto = result.runs.get(AUTOSCALED, RunResult(AUTOSCALED)).samples
    fixed = result.runs.get(FIXED, RunResult(FIXED)).samples
    end = max([params.duration, *(s.at for s in auto), *(s.at for s in fixed)])
    most = max([1, *(s.backlog for s in auto), *(s.backlog for s in fixed)])
    lines = [
        "| t | input rows/s | autoscaled: parallelism | autoscaled: backlog | | "
        f"fixed at {params.start_parallelism}: backlog | |",
        "|---:|---:|---:|---:|---|---:|---|",
    ]
    at = 0.0
    while at <= end + 1e-6:
        a, b = _at(auto, at), _at(fixed, at)
        cells = [
            f"{at:.0f} s",
            f"{params.rate_at(at):g}",
            str(a.parallelism) if a else "",
            str(a.backlog) if a else "",
            _bar(a.backlog, most) if a else "",
            str(b.backlog) if b else "",
            _bar(b.backlog, most) if b else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
        at += every
    return lines


def report(result: AutoscaleResult) -> str:
    """The benchmark's report, in Markdown."""
    params = result.params
    f = figures(result)
    start, end = params.step
    lines = [
        f"The step runs from {start:.0f} s to {end:.0f} s; the schedule ends at "
        f"{params.duration:.0f} s. Backlog: rows written minus rows in the sink (a backlog "
        f"is worked off at or below {settled(params):.0f} rows, two trigger intervals of "
        f"the step's input). The service answered {result.requests} requests, at most "
        f"{result.most_at_once} at once.",
        "",
        *timeline(result),
        "",
        "Rescales of the autoscaled job (seconds of the schedule):",
        "",
        "| decided | ended | from → to | outcome | reason |",
        "|---:|---:|---|---|---|",
    ]
    auto = result.runs.get(AUTOSCALED, RunResult(AUTOSCALED))
    for r in auto.rescales:
        ended = f"{r['ended']:.0f} s" if r["ended"] is not None else ""
        reason = r["reason"].replace("|", "\\|")
        lines.append(
            f"| {r['at']:.0f} s | {ended} | {r['from']} → {r['to']} | {r['outcome']} | {reason} |"
        )
    if not auto.rescales:
        lines.append("| | | none | | |")
    catch = f"{f.catch_up_seconds:.0f} s" if f.catch_up_seconds is not None else "not worked off"
    lines += [
        "",
        f"- Backlog during the step: autoscaled at most {f.peak} rows; fixed at "
        f"{params.start_parallelism}: {f.fixed_peak} rows at the step's end.",
        f"- From the step's first rescale to its backlog worked off: {catch}.",
        f"- Rescales applied: {f.ups} up and {f.downs} down from the step on; {f.before} "
        "decided in the first low phase.",
        f"- Slot-seconds over the schedule: autoscaled {f.slot_seconds:.0f}; fixed at the "
        f"largest parallelism it chose ({f.largest}): {f.fixed_max_slot_seconds:.0f} "
        f"(computed); ratio {f.slot_share:.2f}.",
    ]
    for run in result.runs.values():
        drained = f"{run.drained_at:.0f} s" if run.drained_at is not None else "never"
        lines.append(
            f"- Run {run.name} (job {run.job or '—'}): every row processed at {drained}; "
            f"exactly once: {run.exactly_once}"
            + (f"; error: {run.error}" if run.error else "")
            + "."
        )
    lines += ["", "| goal | measured | held |", "|---|---|---|"]
    for goal, measured, held in goals(result, f):
        lines.append(f"| {goal} | {measured} | {'**held**' if held else '**not held**'} |")
    return "\n".join(lines) + "\n"


#: The benchmark's section of docs/benchmarks.md (``scripts/bench`` keeps it: :mod:`.page`).
DOCS_BEGIN, DOCS_END = page.AUTOSCALE
TITLE = "10. The autoscaler under a step in load (scripts/autoscale)"


def autoscale_section(text: str) -> str:
    """The benchmark's section of the page, from :func:`report`'s text."""
    return f"{DOCS_BEGIN}\n## {TITLE}\n\n{text.rstrip()}\n{DOCS_END}\n"


def write_docs(text: str, path: Path = page.DOCS) -> None:
    before = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(page.keep_section(before, autoscale_section(text), DOCS_BEGIN, DOCS_END))


# -- as a section of scripts/bench ------------------------------------------------------------
def run(workspace: Workspace, params: AutoscaleParams) -> Any:
    """The benchmark as section 10 of ``python -m benchmarks`` (only with BENCH_AUTOSCALE=1)."""
    from benchmarks.report import Section

    section = Section(key="autoscale", title=TITLE.split(" (")[0], method=describe(params))
    if not params.enabled:
        section.skipped = (
            "it takes about half an hour (a quick run about a quarter of an hour): it runs "
            "with BENCH_AUTOSCALE=1, or on its own with scripts/autoscale."
        )
        return section
    result = Autoscale(workspace, params, say=_progress).run()
    return section_of(result, section)


def section_of(result: AutoscaleResult, section: Any) -> Any:
    """``section`` with the result's rows (the slot-seconds and the backlog) and notes."""
    from benchmarks.report import Row

    f = figures(result)
    held = {goal: ok for goal, _measured, ok in goals(result, f)}
    if f.slot_seconds > 0 and f.fixed_max_slot_seconds > 0:
        section.rows.append(
            Row(
                "slot-seconds, autoscaled", f.slot_seconds, "slot-s",
                f"fixed at the largest parallelism it chose ({f.largest}; computed)",
                f.fixed_max_slot_seconds, [f.slot_seconds], [f.fixed_max_slot_seconds],
                goal=f"ratio ≤ {SLOT_SHARE:g}", goal_met=f.slot_share <= SLOT_SHARE,
                kind="share",
            )
        )  # fmt: skip
    if f.peak > 0 and f.fixed_peak > 0:
        section.rows.append(
            Row(
                "largest backlog during the step, autoscaled", f.peak, "rows",
                f"fixed at {result.params.start_parallelism}, at the step's end",
                f.fixed_peak, [f.peak], [f.fixed_peak], kind="size",
            )
        )  # fmt: skip
    if f.catch_up_seconds is not None and f.catch_up_seconds > 0:
        section.rows.append(
            Row(
                "step's first rescale to its backlog worked off", f.catch_up_seconds, "s",
                "catch-up.duration", result.params.catch_up(), [f.catch_up_seconds],
                [result.params.catch_up()], goal="within catch-up.duration, not growing again",
                goal_met=next(iter(held.values())),
            )
        )  # fmt: skip
    section.notes += [f"{goal}: {'held' if ok else 'not held'}" for goal, ok in held.items()]
    section.notes.append("The whole report: " + report(result).split("\n", 1)[0])
    if not section.rows:
        section.error = "no figures: " + "; ".join(
            run.error or run.exactly_once for run in result.runs.values()
        )
    return section


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # stdout is the report's


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/autoscale", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true",
        help="short phases and autoscaler windows (90 s / 150 s / 105 s): a smoke test",
    )  # fmt: skip
    parser.add_argument("--dir", default="/tmp/flinkish-autoscale", help="work directory")
    parser.add_argument("--rate", type=float, help="rows/s of the low phases (default 2)")
    parser.add_argument("--factor", type=float, help="the step's multiple of --rate (default 6)")
    parser.add_argument("--low", type=float, help="seconds of the first low phase (600)")
    parser.add_argument("--high", type=float, help="seconds of the high phase (600)")
    parser.add_argument("--low-after", type=float, help="seconds of the last low phase (600)")
    parser.add_argument("--latency", type=float, help="the service's latency, seconds (0.1)")
    parser.add_argument("--max-parallelism", type=int, help="the autoscaler's highest (6)")
    parser.add_argument(
        "--sequential", action="store_true",
        help="run the two jobs one after the other (twice as long; by default both at once)",
    )  # fmt: skip
    parser.add_argument("--json", help="also write the result as JSON to this file")
    parser.add_argument(
        "--report", metavar="JSON", help="no run: report the result a --json run wrote"
    )
    parser.add_argument(
        "--docs", action="store_true", help="write the report into docs/benchmarks.md"
    )
    args = parser.parse_args(argv)
    if args.report:
        result = AutoscaleResult.from_json(json.loads(Path(args.report).read_text()))
        return _reported(result, args.docs)
    signal.signal(signal.SIGTERM, _interrupted)  # stop what was started, as on Ctrl-C
    root = Path(args.dir)
    if root.exists():
        import shutil

        shutil.rmtree(root)
    params = AutoscaleParams.quick() if args.quick else AutoscaleParams()
    for name in ("rate", "factor", "low", "high", "low_after", "latency", "max_parallelism"):
        if getattr(args, name) is not None:
            setattr(params, name, getattr(args, name))
    params.concurrent = not args.sequential
    try:
        result = Autoscale(Workspace(root), params, say=_progress).run()
    except KeyboardInterrupt:
        print("autoscale: interrupted; what it started is stopped.", file=sys.stderr)
        return 130
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_json(), indent=1))
    return _reported(result, args.docs)


def _reported(result: AutoscaleResult, docs: bool) -> int:
    text = report(result)
    print(text)
    if docs:
        from benchmarks.machine import describe as machine
        from benchmarks.machine import provenance

        run = {**machine(), "started": result.started} if result.started else machine()
        write_docs(f"{provenance(run)} {describe(result.params)}\n\n{text}")
    return 0 if all(r.exactly_once.startswith("yes") for r in result.runs.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
