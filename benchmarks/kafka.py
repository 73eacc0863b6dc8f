"""Section 11 (optional): Kafka to Kafka, flinkish beside a hand-written ``spark-submit``.

This module owns everything about Kafka in the benchmark. One broker for the section,
``scripts/start-cluster.sh --kafka`` (KRaft, Maven's jars, free ports on 127.0.0.1), stopped
with ``scripts/stop-cluster.sh``. A backlog of orders (the fields ``scripts/generate_events.py
--kind orders`` writes) is produced with confluent-kafka, round-robin over the source topic's
partitions, before either run starts. Then ``jobs/orders_kafka.py``, unmodified, runs twice
on it, one run after the other, each into a sink topic of its own:

- **flinkish**: ``flinkish run -d -D flinkish.connectors=kafka`` with the repository's
  configuration;
- **plain**: ``spark-submit --jars`` with the jars flinkish's own cache holds for that
  connector and the Spark settings flinkish derives (plus a checkpoint location).

Each run gives, from Spark's progress reports in its driver's log:

1. throughput: the backlog's rows over the time from its first batch's start to its last
   batch's end (and, beside it, the time from the command to the last expected record in the
   sink topic, start-up included);
2. recovery: with orders still arriving (a trickle), ``kill -9`` of the driver's JVM, then
   the time until the first batch that started after the kill has committed. flinkish's
   supervisor restarts the job by itself; the plain run is started again by hand at once,
   from its checkpoint;
3. lag (flinkish only: Spark's source commits nothing to a consumer group): the time from the
   commit of the batch that caught up until Kafka's own ``kafka-consumer-groups --describe``
   shows the job's group with lag 0 on every partition, beside the trigger interval.

Exactly-once against at-least-once (``flinkish.kafka.sink.delivery-guarantee``) is measured
by :func:`exactly_once_row` where flinkish knows that option; elsewhere the section says it
was not run. It runs in full runs unless ``BENCH_KAFKA=0``, in quick runs only with
``BENCH_KAFKA=1``.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import random
import re
import signal
import sys
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import kafka_flink
from benchmarks.harness import (
    JOBS,
    PYTHON,
    REPO,
    Background,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    free_port,
    progress_events,
    read_text,
    run_timed,
    spark_submit_argv,
    translated_spark_conf,
    wait_for,
)
from benchmarks.kafka_clients import PARTITIONS, create_topic, sink_records
from benchmarks.kafka_clients import producer as _producer
from benchmarks.report import Row, Section

TITLE = "11. Kafka to Kafka (optional)"
SCRIPT = JOBS / "orders_kafka.py"
START = REPO / "scripts" / "start-cluster.sh"
STOP = REPO / "scripts" / "stop-cluster.sh"
KAFKA_POM = REPO / "scripts" / "maven" / "kafka" / "pom.xml"
GROUP_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONNECTOR = ("-D", "flinkish.connectors=kafka")
PIPELINE = "bench-orders-kafka"
#: the orders' filter and tax, as ``jobs/common/pricing.py`` has them (the job's defaults)
MIN_TOTAL = 100.0
STATUSES = ("created", "paid", "shipped", "delivered", "cancelled")
ORDER_START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
#: flinkish's exactly-once Kafka sink, where this version has it
DELIVERY_GUARANTEE = "flinkish.kafka.sink.delivery-guarantee"
TRANSACTIONAL_ID_PREFIX = "flinkish.kafka.sink.transactional-id-prefix"
NO_EXACTLY_ONCE = "not run: this version has no exactly-once Kafka sink"
TRIGGER_KEY = "execution.checkpointing.interval"
_BOOTSTRAP = re.compile(r"^bootstrap\.servers: (127\.0\.0\.1:\d+)$")


@dataclass(frozen=True)
class KafkaParams:
    orders: int  # the backlog, produced before either run starts
    trickle_rate: int  # orders per second while the driver is killed
    enabled: bool  # full runs unless BENCH_KAFKA=0; quick runs only with BENCH_KAFKA=1
    flink: bool = False  # Apache Flink's run (benchmarks/kafka_flink.py): as BENCH_FLINK says
    latency_rate: int = 50  # orders per second of the latency runs
    latency_seconds: float = 20.0  # how long they are sent


@dataclass(frozen=True)
class Throughput:
    """The backlog's batches of one run."""

    rows_per_second: float
    rows: int
    batches: int
    seconds: float  # first batch's start to last batch's end
    committed_at: float  # wall clock: the end of the last batch (its commit)


def _say(message: str) -> None:
    print(f"[bench] kafka: {message}", file=sys.stderr, flush=True)


def _timestamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# -- analysis (no broker, no Spark) ---------------------------------------------------------
def executed_batches(events: Sequence[Mapping[str, Any]]) -> list[tuple[float, float, int]]:
    """``(start, end, input rows)`` of each executed micro-batch (wall clock, seconds)."""
    found = []
    for event in events:
        durations = event.get("durationMs") or {}
        if "addBatch" not in durations:
            continue
        start = _timestamp(str(event["timestamp"]))
        end = start + float(durations.get("triggerExecution", 0)) / 1000
        found.append((start, end, int(event.get("numInputRows") or 0)))
    return found


def backlog_throughput(events: Sequence[Mapping[str, Any]], backlog: int) -> Throughput:
    """The throughput over the batches that read the first ``backlog`` rows: from the first
    of them to start to the end of the one that reached ``backlog``."""
    batches = [b for b in executed_batches(events) if b[2] > 0]
    rows, used = 0, []
    for batch in batches:
        used.append(batch)
        rows += batch[2]
        if rows >= backlog:
            break
    if rows < backlog:
        raise BenchError(f"the batches read {rows} of the backlog's {backlog} rows")
    seconds = used[-1][1] - used[0][0]
    if seconds <= 0:
        raise BenchError("the backlog's batches took no time")
    return Throughput(rows / seconds, rows, len(used), seconds, used[-1][1])


def first_batch_after(events: Sequence[Mapping[str, Any]], moment: float) -> float | None:
    """The end (commit) of the first executed batch that started at or after ``moment``."""
    ends = [end for start, end, _ in executed_batches(events) if start >= moment]
    return min(ends) if ends else None


def group_lags(output: str, group: str) -> dict[tuple[str, int], int | None]:
    """``kafka-consumer-groups --describe``'s rows of ``group``: (topic, partition) -> lag
    (None where the tool shows ``-``: nothing committed)."""
    found: dict[tuple[str, int], int | None] = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == group and fields[2].isdigit():
            found[(fields[1], int(fields[2]))] = int(fields[5]) if fields[5].isdigit() else None
    return found


def caught_up(lags: Mapping[tuple[str, int], int | None], topic: str, partitions: int) -> bool:
    """Every partition of ``topic`` is in the group with lag 0."""
    return all(lags.get((topic, p)) == 0 for p in range(partitions))


def order_value(index: int, rng: random.Random) -> tuple[str, float]:
    """Order ``index`` as the JSON value ``generate_events.py --kind orders`` writes, and
    its total price."""
    price = round(rng.uniform(5.0, 250.0), 2)
    moment = ORDER_START + datetime.timedelta(milliseconds=index * 10)
    value = (
        f'{{"order_id":"ord-{index:08d}","customer_id":"cust-{rng.randrange(20):04d}",'
        f'"order_status":"{rng.choice(STATUSES)}","total_price":{price},'
        f'"order_time":"{moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]}Z"}}'
    )
    return value, price


def exactly_once_known() -> bool:
    """Whether this flinkish has the exactly-once Kafka sink's option."""
    from flinkish_cli.config.options import option

    try:
        option(DELIVERY_GUARANTEE)
    except KeyError:
        return False
    return True


# -- the broker and its clients --------------------------------------------------------------
@contextlib.contextmanager
def broker(workspace: Workspace) -> Iterator[str]:
    """``scripts/start-cluster.sh --kafka`` on free loopback ports; its bootstrap address.
    ``scripts/stop-cluster.sh`` afterwards."""
    directory = workspace.dir("kafka", "broker")
    env = clean_env({"PYTHON": PYTHON, "FLINKISH_CLUSTER_DIR": str(directory)})
    argv = ["bash", str(START), "--kafka", "--dir", str(directory), "--timeout", "180"]
    argv += ["--kafka-port", str(free_port()), "--kafka-controller-port", str(free_port())]
    argv += ["--kafka-conf", "auto.create.topics.enable=false"]
    try:
        started = run_timed(argv, env, REPO, timeout=900).check()
        lines = started.stdout.strip().splitlines()
        match = _BOOTSTRAP.match(lines[-1] if lines else "")
        if not match:
            raise BenchError(f"start-cluster.sh --kafka printed no bootstrap address: {lines}")
        yield match.group(1)
    finally:
        run_timed(["bash", str(STOP), "--dir", str(directory)], env, REPO, timeout=180)


def produce_backlog(bootstrap: str, topic: str, count: int, seed: int = 51) -> int:
    """``count`` orders into ``topic``, round-robin over its partitions; how many of them the
    job keeps (``total_price > 100``)."""
    rng = random.Random(seed)
    producer = _producer(bootstrap)
    failed: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(str(error))

    kept = 0
    for index in range(count):
        value, price = order_value(index, rng)
        kept += price > MIN_TOTAL
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=f"ord-{index:08d}",
                    partition=index % PARTITIONS,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.1)
        if index % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    if left or failed:
        raise BenchError(f"{left} orders not delivered: {failed[:3]}")
    return kept


class Trickle:
    """Orders at a fixed rate into the source topic, on a thread, until :meth:`stop`."""

    def __init__(self, bootstrap: str, topic: str, rate: int, first_index: int) -> None:
        self.bootstrap, self.topic, self.rate = bootstrap, topic, rate
        self.index = first_index
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Trickle:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        rng = random.Random(self.index)
        producer = _producer(self.bootstrap)
        began, sent = time.monotonic(), 0
        while not self._stop.is_set():
            due = int((time.monotonic() - began) * self.rate)
            for _ in range(due - sent):
                value, _price = order_value(self.index, rng)
                producer.produce(self.topic, value=value, partition=self.index % PARTITIONS)
                self.index += 1
            sent = max(sent, due)
            producer.poll(0.05)
        producer.flush(60)


def kafka_classpath() -> str:
    """The Kafka jars the broker runs on (``scripts/maven/kafka/pom.xml``, flinkish's cache)."""
    argv = [PYTHON, "-m", "flinkish_cli.spark.maven", "--pom", str(KAFKA_POM)]
    return run_timed(argv, clean_env(), REPO, timeout=900).check().stdout.strip()


def describe_group(classpath: str, bootstrap: str, group: str) -> str:
    """``kafka-consumer-groups --bootstrap-server B --describe --group G`` (Kafka's tool)."""
    argv = ["java", "-cp", classpath, GROUP_TOOL, "--bootstrap-server", bootstrap]
    return run_timed([*argv, "--describe", "--group", group], clean_env(), REPO, 180).stdout


def job_zip(path: Path) -> Path:
    """The script's modules (``jobs/**/*.py``: ``orders``, ``common``) in a zip for
    ``--py-files``, as a user ships a script's imports to plain ``spark-submit``."""
    with zipfile.ZipFile(path, "w") as archive:
        for module in sorted(JOBS.rglob("*.py")):
            if "__pycache__" not in module.parts:
                archive.write(module, module.relative_to(JOBS).as_posix())
    return path


def connector_jars() -> list[Path]:
    """The jars flinkish ships for ``flinkish.connectors: kafka``, from its own cache."""
    from flinkish_cli.spark import connectors
    from flinkish_cli.spark.install import pyspark_home

    return connectors.jars(["kafka"], [], connectors.installed(pyspark_home()))


# -- the runs --------------------------------------------------------------------------------
def _job_args(bootstrap: str, source: str, sink: str) -> list[str]:
    args = ["--bootstrap-servers", bootstrap, "--source-topic", source]
    return [*args, "--sink-topic", sink]


def _wait_backlog(
    log_path: Path, bootstrap: str, sink: str, kept: int, backlog: int, alive: Any
) -> Throughput:
    """Until the sink topic has the ``kept`` records and the log the backlog's batches."""

    def done() -> Throughput | None:
        if not alive():
            raise BenchError(f"the job ended:\n{read_text(log_path)[-3000:]}")
        if sink_records(bootstrap, sink) < kept:
            return None
        with contextlib.suppress(BenchError):
            return backlog_throughput(progress_events(read_text(log_path)), backlog)
        return None

    return wait_for("the backlog to reach the sink", done, 900 + backlog / 500, interval=0.5)


def _recovery(log_path: Path, kill: Any, restart: Any, trickle: Trickle) -> float:
    """With the trickle flowing: a batch of it, ``kill()``, ``restart()``; the seconds from
    the kill to the commit of the first batch that started after it (in ``log_path()``)."""
    with trickle:
        began = time.time()
        wait_for(
            "a batch of the trickle",
            lambda: first_batch_after(progress_events(read_text(log_path)), began),
            300,
            interval=0.2,
        )
        killed = time.time()
        kill()
        new_log = restart() or log_path
        committed = wait_for(
            "the first batch after the kill",
            lambda: first_batch_after(progress_events(read_text(new_log)), killed),
            600,
            interval=0.1,
        )
    return float(committed) - killed


def _jvm_of(pid: int) -> int:
    """The driver's JVM: ``pid`` itself when it is java, else its parent (pyspark's driver
    is a child of spark-submit's JVM)."""
    if _comm(pid) == "java":
        return pid
    stat = Path(f"/proc/{pid}/stat").read_text()
    parent = int(stat[stat.rindex(")") + 2 :].split()[1])
    if _comm(parent) != "java":
        raise BenchError(f"no JVM found for process {pid}")
    return parent


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class PlainRun:
    throughput: Throughput
    to_last_record: float
    recovery: float


@dataclass
class FlinkishRun:
    throughput: Throughput
    to_last_record: float
    lag_seconds: float | None
    lag_details: dict[str, Any]
    recovery: float | None


def run_flinkish(
    cli: FlinkishCli,
    bootstrap: str,
    source: str,
    sink: str,
    kept: int,
    params: KafkaParams,
    extra: Sequence[str] = (),
    measure_rest: bool = True,
) -> FlinkishRun:
    """The backlog through ``flinkish run -d``; with ``measure_rest``, then the lag tool and
    a kill of the driver's JVM."""
    name = f"{PIPELINE}-{sink}"
    began = time.time()
    submitted = cli.submit_detached(
        "-D", f"pipeline.name={name}", *CONNECTOR, *extra, str(SCRIPT),
        *_job_args(bootstrap, source, sink),
    )  # fmt: skip
    job = submitted.job_id
    log_path = cli.log_path(job)
    try:
        figures = _wait_backlog(
            log_path, bootstrap, sink, kept, params.orders, lambda: cli.is_running(job)
        )
        to_last = time.time() - began
        _say(f"flinkish{' '.join(extra)}: {figures.rows_per_second:,.0f} rows/s")
        if not measure_rest:
            return FlinkishRun(figures, to_last, None, {}, None)
        lag, details = _lag(bootstrap, f"flinkish-{name}", source, figures.committed_at)
        _say(f"flinkish: lag 0 {lag:.2f} s after the commit")

        def kill() -> None:
            status = cli.status(job)
            if status is None or not status.pid:
                raise BenchError(f"job {job} has no driver process")
            os.kill(_jvm_of(status.pid), signal.SIGKILL)

        recovery = _recovery(
            log_path, kill, lambda: None, Trickle(bootstrap, source, params.trickle_rate, 10**8)
        )
        _say(f"flinkish: recovered in {recovery:.1f} s")
        return FlinkishRun(figures, to_last, lag, details, recovery)
    finally:
        cli.run("cancel", job, timeout=180)
        cli.wait_exited(job)


def _lag(bootstrap: str, group: str, source: str, committed_at: float) -> tuple[float, dict]:
    """Seconds from ``committed_at`` to the start of the first ``--describe`` that showed
    ``group`` at lag 0 on every partition of ``source``."""
    classpath = kafka_classpath()
    polls: list[float] = []

    def zero() -> float | None:
        started = time.time()
        output = describe_group(classpath, bootstrap, group)
        polls.append(time.time() - started)
        return started if caught_up(group_lags(output, group), source, PARTITIONS) else None

    seen = float(wait_for(f"lag 0 of group {group}", zero, 300, interval=0))
    details = {
        "group": group,
        "describe runs": len(polls),
        "seconds of one describe (median)": sorted(polls)[len(polls) // 2],
    }
    return max(seen - committed_at, 0.001), details


def run_plain(
    workspace: Workspace,
    conf_dir: Path,
    bootstrap: str,
    source: str,
    sink: str,
    kept: int,
    params: KafkaParams,
) -> PlainRun:
    """The backlog through a hand-written ``spark-submit``, then a kill of its JVM and a
    restart by hand from its checkpoint."""
    tuned, master = translated_spark_conf(conf_dir, {}, CONNECTOR[1:])
    for key in ("spark.jars", "spark.jars.packages"):
        tuned.pop(key, None)
    directory = workspace.dir("kafka", "plain")
    conf = {**tuned, "spark.sql.streaming.checkpointLocation": str(directory / "checkpoints")}
    jars = ",".join(str(jar) for jar in connector_jars())
    argv = spark_submit_argv(SCRIPT, _job_args(bootstrap, source, sink), conf, master)
    argv[1:1] = ["--jars", jars, "--py-files", str(job_zip(directory / "jobs.zip"))]
    logs = [directory / "spark.log"]
    drivers = [Background(argv, clean_env(), directory, logs[0])]
    began = time.time()
    try:
        figures = _wait_backlog(
            logs[0], bootstrap, sink, kept, params.orders, lambda: drivers[-1].running()
        )
        to_last = time.time() - began
        _say(f"plain: {figures.rows_per_second:,.0f} rows/s")

        def kill() -> None:
            os.kill(_jvm_of(drivers[-1].process.pid), signal.SIGKILL)
            drivers[-1].wait(timeout=60)

        def restart() -> Path:
            logs.append(directory / "spark-restarted.log")
            drivers.append(Background(argv, clean_env(), directory, logs[-1]))
            return logs[-1]

        recovery = _recovery(
            logs[0], kill, restart, Trickle(bootstrap, source, params.trickle_rate, 2 * 10**8)
        )
        _say(f"plain: recovered in {recovery:.1f} s")
        return PlainRun(figures, to_last, recovery)
    finally:
        for driver in drivers:
            driver.stop()


def exactly_once_row(
    cli: FlinkishCli,
    bootstrap: str,
    source: str,
    kept: int,
    params: KafkaParams,
    at_least_once: Throughput,
) -> Row | str:
    """Exactly-once against at-least-once throughput (same backlog, a sink topic of its own):
    a row, or why it was not run."""
    if not exactly_once_known():
        return NO_EXACTLY_ONCE
    sink = create_topic(bootstrap, "large-orders-eos")
    extra = ("-D", f"{DELIVERY_GUARANTEE}=exactly-once")
    extra += ("-D", f"{TRANSACTIONAL_ID_PREFIX}={PIPELINE}-eos")
    try:
        run = run_flinkish(cli, bootstrap, source, sink, kept, params, extra, measure_rest=False)
    except BenchError as error:
        if DELIVERY_GUARANTEE in str(error):  # the CLI refused the option
            return NO_EXACTLY_ONCE
        raise
    value = run.throughput.rows_per_second
    return Row(
        measurement="throughput with exactly-once delivery, rows/s",
        value=value,
        unit="rows/s",
        reference="flinkish at-least-once (the default), same backlog",
        reference_value=at_least_once.rows_per_second,
        samples=[value],
        reference_samples=[at_least_once.rows_per_second],
        goal="≥ 0.8",
        goal_met=value / at_least_once.rows_per_second >= 0.8,
        kind="throughput",
    )


def rows(params: KafkaParams, flinkish: FlinkishRun, plain: PlainRun, trigger: float) -> list[Row]:
    """The section's rows: throughput, recovery and lag against their references."""
    base = "plain spark-submit of the same script (same jars and Spark settings)"
    ft, pt = flinkish.throughput, plain.throughput
    found = [
        Row(
            measurement=f"throughput, {params.orders:,} orders Kafka → Kafka, rows/s",
            value=ft.rows_per_second,
            unit="rows/s",
            reference=base,
            reference_value=pt.rows_per_second,
            samples=[ft.rows_per_second],
            reference_samples=[pt.rows_per_second],
            goal="≥ 0.95",
            goal_met=ft.rows_per_second / pt.rows_per_second >= 0.95,
            details={
                "batches (flinkish, plain)": [ft.batches, pt.batches],
                "seconds of the batches (flinkish, plain)": [
                    round(ft.seconds, 2),
                    round(pt.seconds, 2),
                ],
                "seconds from the command to the last record in the sink (flinkish, plain)": [
                    round(flinkish.to_last_record, 1),
                    round(plain.to_last_record, 1),
                ],
            },
            kind="throughput",
        ),
    ]
    if flinkish.recovery is not None:
        found.append(
            Row(
                measurement="recovery: kill -9 of the driver's JVM → first new committed batch",
                value=flinkish.recovery,
                unit="s",
                reference="plain spark-submit started again by hand at once from its checkpoint",
                reference_value=plain.recovery,
                samples=[flinkish.recovery],
                reference_samples=[plain.recovery],
                goal="≤ 1.2",
                goal_met=flinkish.recovery / plain.recovery <= 1.2,
                note=f"orders arriving at {params.trickle_rate}/s during the kill",
            )
        )
    if flinkish.lag_seconds is not None:
        found.append(
            Row(
                measurement="lag 0 in kafka-consumer-groups --describe after catching up",
                value=flinkish.lag_seconds,
                unit="s",
                reference=f"the trigger interval ({TRIGGER_KEY})",
                reference_value=trigger,
                samples=[flinkish.lag_seconds],
                reference_samples=[trigger],
                goal="≤ 1 (within one batch interval)",
                goal_met=flinkish.lag_seconds <= trigger,
                details=flinkish.lag_details,
            )
        )
    return found


def run(workspace: Workspace, params: KafkaParams, ncores: int) -> Section:
    section = Section(key="kafka", title=TITLE, method=_method(params, ncores))
    if not params.enabled:
        section.skipped = (
            "optional: it runs in full runs (BENCH_KAFKA=0 leaves it out) and in quick runs "
            "only with BENCH_KAFKA=1, since it starts a Kafka broker."
        )
        return section
    conf_dir = workspace.conf_dir("kafka", {"parallelism.default": ncores})
    cli = FlinkishCli(conf_dir, workspace.root)
    trigger = float(cli.config().get(TRIGGER_KEY).total_seconds())
    with broker(workspace) as bootstrap:
        _say(f"broker at {bootstrap}")
        source = create_topic(bootstrap, "orders")
        began = time.perf_counter()
        kept = produce_backlog(bootstrap, source, params.orders)
        produced = time.perf_counter() - began
        section.notes.append(
            f"The backlog was produced in {produced:.1f} s; the job keeps {kept:,} of its orders."
        )
        _say(f"{params.orders:,} orders produced in {produced:.1f} s ({kept:,} kept by the job)")
        try:
            flinkish = run_flinkish(
                cli, bootstrap, source, create_topic(bootstrap, "large-orders-flinkish"),
                kept, params,
            )  # fmt: skip
            eos = exactly_once_row(cli, bootstrap, source, kept, params, flinkish.throughput)
            latency = kafka_flink.flinkish_latency(
                cli, bootstrap, CONNECTOR, params.latency_rate, params.latency_seconds
            )
        finally:
            cli.cleanup()
        interval = f"{round(trigger * 1000)} ms"
        against_flink = kafka_flink.flink_run(
            workspace, bootstrap, source, kept, params, ncores, interval
        )
        if isinstance(against_flink, str):
            section.notes.append(against_flink)
        else:
            section.rows += kafka_flink.rows(
                params, flinkish.throughput.rows_per_second, latency, against_flink
            )
        plain = run_plain(
            workspace, conf_dir, bootstrap, source,
            create_topic(bootstrap, "large-orders-plain"), kept, params,
        )  # fmt: skip
    section.rows[:0] = rows(params, flinkish, plain, trigger)
    if isinstance(eos, Row):
        section.rows.append(eos)
    else:
        section.notes.append(f"Exactly-once against at-least-once throughput: {eos}.")
    section.notes += [
        "flinkish triggers a micro-batch every checkpoint interval; the unmodified script sets "
        "no trigger, so the plain run starts each batch as soon as the previous one ends. A "
        "backlog read without maxOffsetsPerTrigger is one large batch in both runs.",
        "The lag row is flinkish's alone: Spark's Kafka source commits no offsets to a "
        "consumer group, flinkish commits each batch's end offsets to `flinkish-<job name>`. "
        "The figure is when the first `--describe` that showed lag 0 was started; the tool (a "
        "JVM of its own, its time in the details) reads the group during its run, so the "
        "commit was visible at most that much later.",
        "A driver killed during a batch leaves that batch in Spark's offset log: the "
        "restarted query runs it again first (flinkish's and plain Spark's alike).",
        "Latency (flinkish and Apache Flink alike): orders sent at a steady rate, each "
        "stamped with its send time, into a source topic of their own; the sink topic's "
        "broker stamps each record as it arrives (LogAppendTime): arrival minus send time, "
        "p50 and p99 of every large order. flinkish's latency is bounded below by its "
        "trigger (a micro-batch every checkpoint interval); Flink's sink writes each record "
        "as it goes (at-least-once, flushed at its checkpoints).",
        "Apache Flink: Maven Central serves no flink-sql-connector-kafka built for Flink 2.3 "
        "(5.0.0-2.3 is not found); the newest, 5.0.0-2.2 (Flink 2.2's), runs on Flink 2.3 "
        "here. Its throughput is measured from the moment every task of its job runs to the "
        "last large order in its sink topic (Flink reports no per-batch times).",
    ]
    return section


def _method(params: KafkaParams, ncores: int) -> str:
    return (
        f"One Kafka broker (`scripts/start-cluster.sh --kafka`, 127.0.0.1). "
        f"{params.orders:,} orders (the fields of `scripts/generate_events.py --kind orders`) "
        f"are produced with confluent-kafka into a source topic of {PARTITIONS} partitions "
        "before either run starts; `jobs/orders_kafka.py`, unmodified, reads them into a sink "
        "topic of its own per run. **flinkish**: `flinkish run -d -D flinkish.connectors=kafka` "
        f"with the repository's configuration (`parallelism.default: {ncores}`). "
        "**Reference**: `spark-submit --jars --py-files` with the connector's jars from "
        "flinkish's cache, the script's modules in a zip, "
        "the Spark settings flinkish derives and a checkpoint location. Throughput: the "
        "backlog's rows over its batches' time (first start to last end, Spark's progress "
        "reports). Recovery: with orders arriving, `kill -9` of the driver's JVM, until the "
        "first batch started after it has committed (flinkish's supervisor restarts the job; "
        "the plain run is started again by hand at once). Lag: from the commit of the batch "
        "that caught up until Kafka's own `kafka-consumer-groups --describe` shows the job's "
        "group at lag 0 on every partition."
    )
