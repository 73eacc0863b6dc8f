"""Section 11's Apache Flink run and its end-to-end latency, beside flinkish's, on the
section's broker.

**Apache Flink** runs the same orders pipeline (``benchmarks/jobs/flink_orders_kafka.py``:
PyFlink's Table API, Flink SQL, no Python function in the data path) on a local session
cluster of the PyFlink from PyPI that section 8 installs (:mod:`benchmarks.flink`), with
Flink's Kafka SQL connector from Maven Central, resolved with the machine's ``mvn`` from
``scripts/maven/flink-kafka/pom.xml``. Maven Central serves no release of the connector built
for Flink 2.3 (``flink-sql-connector-kafka`` 5.0.0-2.3 is "not found in central"); 5.0.0-2.2,
Flink 2.2's, is the newest, and the run shows whether it works on 2.3: a job that does not
start or never writes is the section's note, with Flink's reason.

- **throughput**: the section's backlog (the same source topic flinkish read), from the
  moment every task of Flink's job runs until the sink topic holds every large order;
- **latency**, for Flink and for flinkish (``jobs/orders_kafka.py``, at-least-once, its
  trigger the repository's checkpoint interval): orders produced at a steady rate into a
  source topic of their own, each stamped when it is sent (its Kafka timestamp and its
  ``order_time``, the same millisecond), into a sink topic whose records the broker stamps as
  they arrive (``message.timestamp.type=LogAppendTime``): each large order's latency is its
  arrival minus its send time, p50 and p99 of all of them (the job made ready first by probe
  orders, which are left out).
"""

from __future__ import annotations

import calendar
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import flink
from benchmarks.harness import (
    JOBS,
    PYTHON,
    REPO,
    BenchError,
    FlinkishCli,
    Workspace,
    clean_env,
    run_timed,
    submit_detached,
    wait_for,
)
from benchmarks.kafka_clients import PARTITIONS, create_topic, producer, sink_records
from benchmarks.report import Row

FLINK_JOB = REPO / "benchmarks" / "jobs" / "flink_orders_kafka.py"
FLINK_KAFKA_POM = REPO / "scripts" / "maven" / "flink-kafka" / "pom.xml"
CONNECTOR = "flink-sql-connector-kafka"
SCRIPT = JOBS / "orders_kafka.py"
PROBE_PRICE = 200.0


@dataclass(frozen=True)
class Latency:
    """End-to-end latencies of one engine's large orders, ms."""

    p50: float
    p99: float
    records: int
    rate: int  # orders per second sent


@dataclass(frozen=True)
class FlinkKafkaRun:
    version: str
    connector: str  # the connector jar's file name
    rows_per_second: float
    seconds: float  # tasks running to the last large order in the sink
    latency: Latency


def _say(message: str) -> None:
    print(f"[bench] kafka/flink: {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (``fraction`` 0.5 is the median)."""
    ordered = sorted(values)
    if not ordered:
        raise BenchError("no latencies measured")
    rank = max(1, int(-(-fraction * len(ordered) // 1)))  # ceil
    return float(ordered[min(rank, len(ordered)) - 1])


def connector_jar() -> str:
    """Flink's Kafka SQL connector's jar, resolved with mvn (flinkish's jar cache)."""
    argv = [PYTHON, "-m", "flinkish_cli.spark.maven", "--pom", str(FLINK_KAFKA_POM)]
    classpath = run_timed(argv, clean_env(), REPO, timeout=900).check().stdout.strip()
    jars = [jar for jar in classpath.split(":") if CONNECTOR in jar.rsplit("/", 1)[-1]]
    if not jars:
        raise BenchError(f"mvn resolved no {CONNECTOR} jar: {classpath}")
    return jars[0]


def arrival_topic(bootstrap: str, name: str) -> str:
    """A sink topic whose records the broker stamps as they arrive."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    topic = NewTopic(name, PARTITIONS, 1, config={"message.timestamp.type": "LogAppendTime"})
    futures = admin.create_topics([topic], operation_timeout=60)
    futures[name].result(timeout=90)
    return name


def _order(order_id: str, price: float, sent_ms: int) -> str:
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sent_ms / 1000))
    return (
        f'{{"order_id":"{order_id}","customer_id":"cust-0001","order_status":"paid",'
        f'"total_price":{price},"order_time":"{moment}.{sent_ms % 1000:03d}Z"}}'
    )


def _sent_ms(value: bytes) -> int:
    """The send time an order's output carries (its ``order_time``, ms)."""
    stamp = json.loads(value)["order_time"]
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int((fraction or "0")[:3].ljust(3, "0"))


def _arrived(bootstrap: str, topic: str, prefix: str, count: int, timeout: float) -> list:
    """The sink records of orders whose id starts with ``prefix``, read until ``count`` of
    them are there: (send ms, arrival ms) each."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-latency",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    found: dict[str, tuple[int, int]] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            key = (message.key() or b"").decode()
            if key.startswith(prefix):
                found.setdefault(key, (_sent_ms(message.value()), message.timestamp()[1]))
    finally:
        consumer.close()
    return list(found.values())


def _wait_ready(bootstrap: str, source: str, sink: str, timeout: float = 600) -> None:
    """Probe orders, one every few seconds, until one has reached the sink topic."""
    sender = producer(bootstrap)
    deadline = time.monotonic() + timeout
    for attempt in range(10**6):
        now = int(time.time() * 1000)
        sender.produce(source, value=_order(f"probe-{attempt}", PROBE_PRICE, now))
        sender.flush(30)
        if _arrived(bootstrap, sink, "probe-", 1, timeout=5):
            return
        if time.monotonic() > deadline:
            raise BenchError(f"no probe order reached {sink} in {timeout:.0f} s")
    raise AssertionError("unreachable")


def measure_latency(bootstrap: str, source: str, sink: str, rate: int, seconds: float) -> Latency:
    """Orders at ``rate`` per second for ``seconds`` into ``source`` (a running job reads
    it), every other one large; their large orders' latencies from ``sink``."""
    _wait_ready(bootstrap, source, sink)
    sender = producer(bootstrap)
    began, sent, large = time.monotonic(), 0, 0
    while (elapsed := time.monotonic() - began) < seconds:
        for _ in range(int(elapsed * rate) - sent):
            price = 150.0 if sent % 2 == 0 else 50.0
            large += price > 100
            now = int(time.time() * 1000)
            value = _order(f"lat-{sent:08d}", price, now)
            sender.produce(source, value=value, key=f"lat-{sent:08d}", timestamp=now)
            sent += 1
        sender.poll(0.01)
    sender.flush(60)
    found = _arrived(bootstrap, sink, "lat-", large, timeout=300)
    if len(found) < large:
        raise BenchError(f"{large - len(found)} of {large} large orders did not reach {sink}")
    latencies = [max(arrival - sent_at, 0) for sent_at, arrival in found]
    return Latency(percentile(latencies, 0.5), percentile(latencies, 0.99), len(found), rate)


def flinkish_latency(
    cli: FlinkishCli, bootstrap: str, extra: Sequence[str], rate: int, seconds: float
) -> Latency:
    """flinkish's latency: ``jobs/orders_kafka.py`` under ``flinkish run -d``."""
    source = create_topic(bootstrap, "latency-orders-flinkish")
    sink = arrival_topic(bootstrap, "latency-large-flinkish")
    args = ["--bootstrap-servers", bootstrap, "--source-topic", source, "--sink-topic", sink]
    job = cli.submit_detached(
        "-D", "pipeline.name=bench-kafka-latency", *extra, str(SCRIPT), *args
    ).job_id
    try:
        found = measure_latency(bootstrap, source, sink, rate, seconds)
    finally:
        cli.run("cancel", job, timeout=180)
        cli.wait_exited(job)
    _say(f"flinkish latency p50 {found.p50:.0f} ms, p99 {found.p99:.0f} ms")
    return found


def run_flink(
    workspace: Workspace,
    bootstrap: str,
    source: str,
    kept: int,
    orders: int,
    parallelism: int,
    interval: str,
    rate: int,
    seconds: float,
) -> FlinkKafkaRun:
    """Apache Flink's throughput on the section's backlog and its latency; raises
    :class:`~benchmarks.flink.FlinkUnavailable` or :class:`BenchError` with the reason."""
    installed = flink.install(flink.venv_dir())
    jar = connector_jar()
    with flink.flink_cluster(installed, workspace) as cluster:

        def submit(source_topic: str, sink_topic: str, stop_at: str = "") -> tuple[str, float]:
            argv = [installed.home / "bin" / "flink", "run", "-d", "-py", FLINK_JOB]
            argv += ["--stop-at", stop_at] if stop_at else []
            argv += ["--bootstrap-servers", bootstrap, "--source-topic", source_topic]
            argv += ["--sink-topic", sink_topic, "--connector-jar", jar]
            argv += ["--parallelism", str(parallelism), "--checkpoint-interval", interval]
            submission = submit_detached(
                argv,
                cluster.env,
                cluster.directory,
                lambda job_id: flink.job_state(cluster.rest, job_id)[0] == "RUNNING",
            )
            job = submission.job_id
            wait_for(
                f"every task of Flink job {job} to run",
                lambda: flink.job_state(cluster.rest, job)[1],
                timeout=300,
            )
            return job, time.perf_counter()

        sink = arrival_topic(bootstrap, "large-orders-flink")
        # the backlog only (round-robin: orders / PARTITIONS a partition), not the orders
        # flinkish's recovery measurement added after it
        ends = [orders // PARTITIONS + (p < orders % PARTITIONS) for p in range(PARTITIONS)]
        stop_at = ";".join(f"partition:{p},offset:{end}" for p, end in enumerate(ends))
        job, running = submit(source, sink, stop_at)
        try:
            wait_for(
                f"{kept:,} large orders in {sink}",
                lambda: sink_records(bootstrap, sink) >= kept,
                timeout=3600,
                interval=0.2,
            )
            took = time.perf_counter() - running
        finally:
            _end(installed, cluster, job)
        _say(f"Flink {installed.version}: {orders / took:,.0f} rows/s")
        latency_source = create_topic(bootstrap, "latency-orders-flink")
        latency_sink = arrival_topic(bootstrap, "latency-large-flink")
        job, _ = submit(latency_source, latency_sink)
        try:
            latency = measure_latency(bootstrap, latency_source, latency_sink, rate, seconds)
        finally:
            flink.cancel(installed, cluster, job)
        _say(f"Flink latency p50 {latency.p50:.0f} ms, p99 {latency.p99:.0f} ms")
    name = jar.rsplit("/", 1)[-1]
    return FlinkKafkaRun(installed.version, name, orders / took, took, latency)


def _end(installed: Any, cluster: Any, job: str) -> None:
    """Cancel a Flink job unless it has finished (a bounded backlog's run ends by itself)."""
    if flink.job_state(cluster.rest, job)[0] in ("FINISHED", "CANCELED"):
        return
    with contextlib.suppress(BenchError):  # it finished while being cancelled
        flink.cancel(installed, cluster, job)


def describe(run: Any) -> str:
    """A line naming what ran as Apache Flink."""
    return f"Apache Flink {run.version} (PyFlink from PyPI, Flink SQL) with {run.connector}"


def flink_run(
    workspace: Workspace,
    bootstrap: str,
    source: str,
    kept: int,
    params: Any,
    ncores: int,
    interval: str,
) -> FlinkKafkaRun | str:
    """Apache Flink's run of the pipeline on the section's backlog (``params``: the section's
    :class:`~benchmarks.kafka.KafkaParams`; ``interval``: Flink's checkpoint interval, the
    trigger flinkish runs with), or why it did not run."""
    if not params.flink:
        return (
            "Apache Flink's run of the pipeline: not run (quick runs only with BENCH_FLINK=1, "
            "full runs unless BENCH_FLINK=0)."
        )
    try:
        return run_flink(
            workspace, bootstrap, source, kept, params.orders, min(ncores, 2), interval,
            params.latency_rate, params.latency_seconds,
        )  # fmt: skip
    except (flink.FlinkUnavailable, BenchError) as error:
        return f"Apache Flink's run of the pipeline did not complete: {error}"


def rows(params: Any, throughput: float, latency: Latency, other: FlinkKafkaRun) -> list[Row]:
    """flinkish's throughput (rows/s) and latency beside Apache Flink's (reported, no goal
    yet)."""
    name = describe(other)
    sent = f"{latency.rate} orders/s for {params.latency_seconds:.0f} s, every other one large"
    found = [
        Row(
            measurement=f"throughput, {params.orders:,} orders Kafka → Kafka, against Flink",
            value=throughput,
            unit="rows/s",
            reference=f"{name}, the same backlog",
            reference_value=other.rows_per_second,
            samples=[throughput],
            reference_samples=[other.rows_per_second],
            details={"seconds of Flink's run (tasks running to last record)": other.seconds},
            kind="throughput",
        )
    ]
    for label, ours, theirs in (
        ("p50", latency.p50, other.latency.p50),
        ("p99", latency.p99, other.latency.p99),
    ):
        found.append(
            Row(
                measurement=f"end-to-end latency {label}, record sent → arrival in the sink",
                value=ours / 1000,
                unit="s",
                reference=name,
                reference_value=theirs / 1000,
                samples=[ours / 1000],
                reference_samples=[theirs / 1000],
                details={
                    "large orders (flinkish, Flink)": [latency.records, other.latency.records]
                },
                note=sent,
            )
        )
    return found
