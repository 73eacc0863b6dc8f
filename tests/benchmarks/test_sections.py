"""The session, CDS, Flink and Kafka sections' own logic, without Spark, Java, Flink or a
broker."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from benchmarks import cds, flink, kafka, kafka_flink, main, session, yarn
from benchmarks.harness import BenchError, Workspace
from benchmarks.report import Results, Section, markdown, validate
from tests.benchmarks.test_report import MACHINE

SESSION_LOG = """\
2026-11-23 09:44:22,588 INFO flinkish.supervisor: Driver attempt 0: process 14212.
2026-11-23 09:44:24,147 INFO flinkish.runtime: Settings of the session cluster, not of this job
2026-11-23 09:44:24,215 INFO flinkish.runtime: Session c98 opened on the session cluster sc://x.
2026-11-23 09:44:29,277 INFO flinkish.runtime: query 'counts' started (id 72a, checkpoint /c).
2026-11-23 09:44:30,256 INFO flinkish.runtime: query 'raw' started (id 213, checkpoint /r).
"""

FIGURES = session.SessionFigures(
    fresh_job_id=[12.0, 14.0, 13.0],
    fresh_running=[12.1, 14.1, 13.1],
    session_job_id=[3.0, 4.0, 3.5],
    session_running=[3.1, 4.1, 3.6],
)
RUNS = flink.FlinkRuns(
    job_id=[6.0, 7.0, 6.5],
    running=[6.05, 7.5, 6.55],
    tasks_running=[9.0, 9.5, 9.2],
    cancel=[2.0, 2.1, 1.9],
    warm_up=8.0,
)


def test_a_session_jobs_log_gives_its_start_up_steps() -> None:
    steps = session.session_steps(SESSION_LOG)
    assert steps == {"client": pytest.approx(1.627), "query": pytest.approx(5.062)}
    assert session.session_steps("2026-11-23 09:44:22,588 INFO flinkish.supervisor: x") is None


def test_the_jvms_cds_messages_are_picked_out_of_a_log() -> None:
    log = (
        "26/11/23 10:04:53 INFO Executor: something\n"
        "[18.320s][error  ][cds] Error: non-empty directory '/tmp/run/'\n"
        "Hint: enable -Xlog:class+path=info to diagnose the failure\n"
        "Cannot have non-empty directory in paths\n"
        "[0.123s][warning][cds,dynamic] Unable to use shared archive. The top archive failed\n"
        "[15.5s][warning][cds] Preload Warning: Verification failed for x.Y\n"
    )
    assert cds.jvm_says(log) == [
        "[18.320s][error  ][cds] Error: non-empty directory '/tmp/run/'",
        "Cannot have non-empty directory in paths",
        "[0.123s][warning][cds,dynamic] Unable to use shared archive. The top archive failed",
    ]


def test_optional_sections_run_in_full_runs_and_in_quick_runs_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BENCH_FLINK", raising=False)
    assert main.optional("BENCH_FLINK", quick=False)
    assert not main.optional("BENCH_FLINK", quick=True)
    monkeypatch.setenv("BENCH_FLINK", "1")
    assert main.optional("BENCH_FLINK", quick=True)
    monkeypatch.setenv("BENCH_FLINK", "0")
    assert not main.optional("BENCH_FLINK", quick=False)


def test_flinks_configuration_is_the_distributions_own_made_private(tmp_path: Path) -> None:
    home = tmp_path / "pyflink"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "config.yaml").write_text(
        "rest:\n  port: 8081\njobmanager:\n  memory:\n    process:\n      size: 1600m\n"
    )
    (home / "conf" / "log4j.properties").write_text("rootLogger.level = INFO\n")
    install = flink.FlinkInstall(tmp_path / "venv/bin/python", home, "2.3.0", None, 1)
    conf = flink.write_conf(install, tmp_path / "cluster", 18081)
    settings = yaml.safe_load((conf / "config.yaml").read_text())
    assert settings["rest.port"] == 18081 and settings["rest.bind-address"] == "127.0.0.1"
    assert settings["jobmanager.memory.process.size"] == "1600m"
    assert settings["taskmanager.numberOfTaskSlots"] == flink.SLOTS
    assert settings["python.executable"] == str(tmp_path / "venv/bin/python")
    assert (conf / "log4j.properties").is_file()
    assert (conf / "masters").read_text() == "localhost:18081\n"


def test_the_flink_section_is_skipped_with_the_reason_when_flink_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(venv: Path) -> flink.FlinkInstall:
        raise flink.FlinkUnavailable("pip install apache-flink failed: no network")

    monkeypatch.setattr(flink, "install", unavailable)
    workspace = Workspace(tmp_path)
    off = flink.run(workspace, flink.FlinkParams(reps=1, enabled=False), None)
    assert off.skipped and "BENCH_FLINK=1" in off.skipped
    failed = flink.run(workspace, flink.FlinkParams(reps=1, enabled=True), FIGURES)
    assert failed.skipped == (
        "Apache Flink could not be used here: pip install apache-flink failed: no network"
    )
    document = Results("full", "a", "b", 1.0, dict(MACHINE), {}, [off, failed]).to_dict()
    assert validate(document) == []


def test_flinks_figures_stand_next_to_the_session_clusters() -> None:
    rows = flink.rows(RUNS, FIGURES, 3)
    assert [row.value for row in rows] == [3.5, 3.6, 13.1]
    assert [row.reference_value for row in rows] == [6.5, 6.55, 6.55]
    assert [row.goal_met for row in rows] == [True, True, None]
    section = Section(key="flink", title=flink.TITLE, method="m", rows=rows)
    section.notes += flink.notes(FIGURES, RUNS)
    assert "in 2 of 3 runs it was RUNNING" in section.notes[0]
    results = Results("full", "a", "b", 1.0, dict(MACHINE), {}, [section])
    assert validate(results.to_dict()) == []
    assert "below Flink's own session cluster" in markdown(results)
    [alone] = flink.rows(RUNS, None, 3)
    assert alone.value == 6.55 and alone.reference_value == 6.5 and alone.goal is None


def test_the_cds_section_is_skipped_unless_enabled(tmp_path: Path) -> None:
    section = cds.run(Workspace(tmp_path), cds.CdsParams(reps=1, enabled=False), 2)
    assert section.skipped and "BENCH_CDS=1" in section.skipped and not section.rows


def _progress(at: str, rows: int, millis: int, executed: bool = True) -> dict:
    durations = {"triggerExecution": millis, **({"addBatch": millis - 10} if executed else {})}
    return {"timestamp": at, "numInputRows": rows, "durationMs": durations}


KAFKA_PROGRESS = [
    _progress("2026-12-07T11:00:00.000Z", 0, 5, executed=False),  # no data: not executed
    _progress("2026-12-07T11:00:01.000Z", 600, 2000),
    _progress("2026-12-07T11:00:03.000Z", 400, 1000),
    _progress("2026-12-07T11:00:05.000Z", 50, 500),  # the trickle after the backlog
]
DESCRIBED = """\

GROUP           TOPIC    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID HOST CLIENT-ID
flinkish-bench  orders   0          500             500             0    -           -    -
flinkish-bench  orders   1          480             500             20   -           -    -
flinkish-bench  orders   2          -               500             -    -           -    -
"""


def test_the_kafka_backlogs_throughput_spans_its_batches_from_first_start_to_last_end() -> None:
    figures = kafka.backlog_throughput(KAFKA_PROGRESS, 1_000)
    assert figures.rows == 1_000 and figures.batches == 2
    assert figures.seconds == pytest.approx(3.0)  # 11:00:01 to 11:00:03 + 1 s
    assert figures.rows_per_second == pytest.approx(1_000 / 3.0)
    with pytest.raises(BenchError, match="1050 of the backlog's 2000"):
        kafka.backlog_throughput(KAFKA_PROGRESS, 2_000)


def test_latency_reads_the_send_time_each_order_carries_and_takes_nearest_rank_percentiles() -> (
    None
):
    sent = 1_796_650_000_123  # ms
    value = kafka_flink._order("lat-00000001", 150.0, sent)
    assert kafka_flink._sent_ms(value.encode()) == sent
    assert kafka_flink.percentile(list(range(1, 101)), 0.5) == 50
    assert kafka_flink.percentile(list(range(1, 101)), 0.99) == 99
    assert kafka_flink.percentile([7.0], 0.99) == 7.0
    with pytest.raises(BenchError, match="no latencies"):
        kafka_flink.percentile([], 0.5)


def test_recovery_ends_at_the_commit_of_the_first_batch_started_after_the_kill() -> None:
    killed = kafka._timestamp("2026-12-07T11:00:02.500Z")
    assert kafka.first_batch_after(KAFKA_PROGRESS, killed) == pytest.approx(killed + 1.5)
    assert kafka.first_batch_after(KAFKA_PROGRESS, killed + 10) is None


def test_the_consumer_groups_tools_rows_give_each_partitions_lag() -> None:
    lags = kafka.group_lags(DESCRIBED, "flinkish-bench")
    assert lags == {("orders", 0): 0, ("orders", 1): 20, ("orders", 2): None}
    assert not kafka.caught_up(lags, "orders", 3)
    assert kafka.caught_up({("orders", 0): 0, ("orders", 1): 0}, "orders", 2)
    assert kafka.caught_up(lags, "orders", 1)  # partition 0 alone is at lag 0
    assert kafka.group_lags(DESCRIBED, "another-group") == {}


def test_orders_are_the_json_the_orders_jobs_read() -> None:
    value, price = kafka.order_value(7, random.Random(1))
    order = json.loads(value)
    assert set(order) == {"order_id", "customer_id", "order_status", "total_price", "order_time"}
    assert order["order_id"] == "ord-00000007" and order["total_price"] == price
    assert order["order_time"] == "2026-01-01T00:00:00.070Z"


def test_kafka_rows_compare_flinkish_with_plain_spark_submit_and_the_trigger() -> None:
    params = kafka.KafkaParams(orders=1_000, trickle_rate=50, enabled=True)
    fast = kafka.Throughput(1_000.0, 1_000, 2, 1.0, 0.0)
    slow = kafka.Throughput(900.0, 1_000, 1, 1.1, 0.0)
    flinkish = kafka.FlinkishRun(fast, 30.0, 0.5, {"group": "g"}, 24.0)
    rows = kafka.rows(params, flinkish, kafka.PlainRun(slow, 31.0, 22.0), trigger=2.0)
    assert [round(row.ratio, 3) for row in rows] == [1.111, 1.091, 0.25]
    assert [row.goal_met for row in rows] == [True, True, True]
    section = Section(key="kafka", title=kafka.TITLE, method="m", rows=rows)
    assert validate(Results("full", "a", "b", 1.0, dict(MACHINE), {}, [section]).to_dict()) == []
    late = kafka.FlinkishRun(slow, 30.0, 2.5, {}, 40.0)
    rows = kafka.rows(params, late, kafka.PlainRun(fast, 31.0, 22.0), trigger=2.0)
    assert [row.goal_met for row in rows] == [False, False, False]


def test_exactly_once_is_reported_not_run_where_flinkish_has_no_such_sink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flinkish_cli.config import options

    assert kafka.exactly_once_known() == (kafka.DELIVERY_GUARANTEE in options._BY_NAME)
    monkeypatch.setattr(kafka, "exactly_once_known", lambda: False)
    params = kafka.KafkaParams(orders=1, trickle_rate=1, enabled=True)
    throughput = kafka.Throughput(1.0, 1, 1, 1.0, 0.0)
    found = kafka.exactly_once_row(None, "127.0.0.1:9", "orders", 1, params, throughput)
    assert found == "not run: this version has no exactly-once Kafka sink"


def test_the_kafka_section_is_skipped_unless_enabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCH_KAFKA", raising=False)
    assert not main.parameters(quick=True)["kafka"].enabled
    assert main.parameters(quick=False)["kafka"].orders == 5_000_000
    params = kafka.KafkaParams(orders=1, trickle_rate=1, enabled=False)
    section = kafka.run(Workspace(tmp_path), params, 2)
    assert section.skipped and "BENCH_KAFKA=1" in section.skipped and not section.rows


def test_the_command_line_sizes_the_kafka_backlog_and_the_lifecycle_jobs() -> None:
    args = main.parse_args(["--kafka-orders", "2000000", "--lifecycle-keys", "10,20"])
    params = main.sized(main.parameters(quick=False), args)
    assert params["kafka"].orders == 2_000_000 and params["kafka"].latency_seconds == 120
    assert params["lifecycle"].sizes == (10, 20)
    assert main.sized(main.parameters(quick=True), main.parse_args([]))["kafka"].orders == 20_000


def test_the_yarn_section_is_skipped_unless_enabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCH_YARN", raising=False)
    assert not main.parameters(quick=True)["yarn"].enabled
    assert main.parameters(quick=False)["yarn"].enabled
    section = yarn.run(Workspace(tmp_path), yarn.YarnParams(enabled=False))
    assert section.skipped and "BENCH_YARN=1" in section.skipped and not section.rows


def test_the_yarn_rows_set_flinkish_beside_plain_spark_submit() -> None:
    phases = {"the ResourceManager ends attempt 1": 1.0, "YARN starts attempt 2": 2.0}
    flinkish = [{"to JobID line": 2.0, "to first batch": 30.0, "killed AM to first batch": 40.0,
                 "phases": phases}]  # fmt: skip
    plain = [{"to submitted": 4.0, "to first batch": 32.0}]
    submission, first, killed = yarn.rows(flinkish, plain)
    assert (submission.ratio, submission.goal_met) == (0.5, True)
    assert first.reference_value == 32.0 and first.goal_met
    assert killed.value == 40.0 and killed.reference_value == 30.0
    assert killed.details["where the time goes, median s"] == phases
