"""Section 12: a stateful job's micro-batches with Spark's checkpoint on S3 (S3A) and on disk.

``benchmarks/jobs/bench_counts.py`` (a running count per key in RocksDB state, one file per
micro-batch, ``trigger(availableNow=True)``) runs over the same backlog four ways, in
STREAMING mode, each output checked against the true counts:

* ``local``: flinkish, the query's checkpoint on local disk (Spark's default checkpoint
  writer: a temporary file renamed into place);
* ``s3a``: flinkish, the query's checkpoint at ``s3://...`` on the moto server, with Flink's
  ``s3.*`` keys (flinkish ships S3A and maps them to ``fs.s3a.*``);
* ``s3a-changelog``: the same with RocksDB's changelog checkpointing
  (``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``): each batch
  uploads a changelog per state partition instead of a snapshot of its files, the
  "fewer files per batch" candidate;
* ``plain``: ``spark-submit`` of the same script with the Spark settings flinkish derives,
  the S3A jars passed with ``--jars`` and the ``fs.s3a.*`` settings written by hand, its
  checkpoint at ``s3a://...``.

Figures from Spark's progress reports in each driver's log: ``durationMs.triggerExecution``
of every micro-batch but the first (planning, JIT and Python workers), and of its
checkpoint-writing parts (``walCommit``: the offset log; ``commitOffsets``: the commit log).
The state store's commit happens inside ``addBatch``.
"""

from __future__ import annotations

import collections
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.backlog import BacklogParams, final_counts, flinkish_log, write_backlog
from benchmarks.harness import (
    BENCH_JOBS,
    BenchError,
    FlinkishCli,
    S3Server,
    Workspace,
    clean_env,
    median,
    progress_events,
    read_text,
    run_timed,
    spark_submit_argv,
    translated_spark_conf,
)
from benchmarks.report import Row, Section

TITLE = "12. Checkpoints on S3 (S3A) and on local disk"
SCRIPT = BENCH_JOBS / "bench_counts.py"
BUCKET = "bench-object-store"
#: the steady micro-batch on S3A at most this many times the same batch on local disk
S3A_GOAL = 1.5
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
VARIANTS = ("local", "s3a", "s3a-changelog", "plain")


@dataclass(frozen=True)
class ObjectStoreParams:
    backlog: BacklogParams
    enabled: bool = True


@dataclass
class Batches:
    """One run's micro-batches but the first: seconds of each, and of its log writes."""

    trigger: list[float]
    wal: list[float]
    commit: list[float]


def batches_of(events: list[dict[str, Any]]) -> Batches:
    """The executed micro-batches of ``events`` (progress reports), the first left out."""
    executed = [e for e in events if "addBatch" in (e.get("durationMs") or {})]
    if len(executed) < 2:
        raise BenchError(f"{len(executed)} micro-batch(es) ran: too few to leave the first out")
    steady = executed[1:]
    return Batches(
        trigger=[e["durationMs"]["triggerExecution"] / 1000 for e in steady],
        wal=[e["durationMs"].get("walCommit", 0) / 1000 for e in steady],
        commit=[e["durationMs"].get("commitOffsets", 0) / 1000 for e in steady],
    )


def _say(message: str) -> None:
    print(f"[bench] object store: {message}", file=sys.stderr, flush=True)


#: what moto's server needs of S3A (the storage guide says why): S3A's settings, as Flink keys
MOTO_S3A = {
    "fs.s3a.connection.expect.continue": "false",
    "fs.s3a.optimized.copy.from.local.enabled": "false",
}


def s3a_by_hand(s3: S3Server) -> dict[str, str]:
    """The S3A settings a user of plain spark-submit writes for the moto server."""
    return {
        "spark.hadoop.fs.s3a.endpoint": s3.endpoint,
        "spark.hadoop.fs.s3a.access.key": s3.access_key,
        "spark.hadoop.fs.s3a.secret.key": s3.secret_key,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": s3.region,
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        **{f"spark.hadoop.{key}": value for key, value in MOTO_S3A.items()},
    }


def s3a_jars() -> list[str]:
    """hadoop-aws of Spark's Hadoop and its AWS SDK, from flinkish's jar cache (resolved
    with Maven on first use), as a user of plain spark-submit passes them with --jars."""
    from flinkish_cli.spark import connectors
    from flinkish_cli.spark.install import pyspark_home

    found = connectors.jars(["s3a"], [], connectors.installed(pyspark_home()))
    return [str(jar) for jar in found]


def run(
    workspace: Workspace,
    params: ObjectStoreParams,
    ncores: int,
    s3: S3Server | None,
    s3_error: str | None = None,
) -> Section:
    section = Section(key="object_store", title=TITLE, method="")
    if not params.enabled:
        section.skipped = (
            "BENCH_OBJECT_STORE=0 (a quick run runs it only with BENCH_OBJECT_STORE=1)"
        )
        return section
    if s3 is None:
        raise BenchError(f"the moto S3 server did not start: {s3_error}")
    backlog = params.backlog
    s3.client().create_bucket(Bucket=BUCKET)
    data = workspace.dir("object_store", "input")
    truth = write_backlog(data, backlog)
    conf_dir = workspace.conf_dir(
        "object_store", {"parallelism.default": ncores, **s3.flink_conf(), **MOTO_S3A}
    )
    cli = FlinkishCli(conf_dir, workspace.root)
    tuned, master = translated_spark_conf(conf_dir, {})
    jars = s3a_jars()
    section.method = (
        f"`benchmarks/jobs/bench_counts.py`, unmodified: a running count per key (RocksDB "
        f"state) over {backlog.files} JSON-lines files ({backlog.files * backlog.rows_per_file:,}"
        f" rows, {backlog.keys:,} keys), {backlog.max_files_per_trigger} file(s) per "
        "micro-batch, STREAMING mode, the output checked against the true counts. "
        "The script names its checkpoint (`--checkpoint`). `local`: flinkish, the checkpoint "
        "on local disk. `s3a`: flinkish, the checkpoint at `s3://...` on a moto S3 server on "
        "loopback, with Flink's `s3.*` keys and the two S3A settings moto's server needs "
        "(`fs.s3a.connection.expect.continue` and `fs.s3a.optimized.copy.from.local.enabled` "
        "off; the storage guide says why). `s3a-changelog`: the same with "
        f"`{CHANGELOG}: true`. `plain`: `spark-submit` with flinkish's Spark settings, the "
        "S3A jars in `--jars` and `fs.s3a.*` written by hand, its checkpoint on `s3a://`. "
        f"Median of {backlog.reps} interleaved repetitions of the median "
        "`durationMs.triggerExecution` of each run's micro-batches but the first."
    )
    per_run: dict[str, list[Batches]] = collections.defaultdict(list)
    try:
        for rep in range(backlog.reps):
            for variant in VARIANTS[rep % 4 :] + VARIANTS[: rep % 4]:
                run_dir = workspace.dir("object_store", f"{variant}-{rep}")
                args = [
                    "--input", str(data),
                    "--output", str(run_dir / "output"),
                    "--checkpoint", checkpoint_of(variant, rep, run_dir),
                    "--max-files-per-trigger", str(backlog.max_files_per_trigger),
                ]  # fmt: skip
                log_text = _run(variant, rep, run_dir, args, cli, (tuned, master), jars, s3)
                counts = final_counts(run_dir / "output")
                if counts != dict(truth):
                    wrong = sum(1 for k, v in truth.items() if counts.get(k) != v)
                    raise BenchError(f"{variant} run {rep}: {wrong} of {len(truth)} counts wrong")
                per_run[variant].append(batches_of(progress_events(log_text)))
                _say(
                    f"rep {rep + 1}/{backlog.reps} {variant}: {_steady(per_run[variant][-1]):.2f} s"
                )
    finally:
        cli.cleanup()
    section.rows = rows(per_run)
    section.notes += [
        "Spark's abortable-stream checkpoint writer (`spark-hadoop-cloud`, which writes each "
        "checkpoint file in place instead of renaming it) is not served by the registry for "
        "the Spark version in use, and a Spark module of another version is refused: it is "
        "not a candidate here.",
        "Every run keeps its output on local disk: only the checkpoint moves to S3.",
    ]
    return section


def _run(
    variant: str,
    rep: int,
    run_dir: Path,
    args: list[str],
    cli: FlinkishCli,
    tuned: tuple[dict[str, str], str],
    jars: list[str],
    s3: S3Server,
) -> str:
    """Run one variant to its end; its driver's log."""
    if variant == "plain":
        conf = {**tuned[0], "spark.jars": ",".join(jars)}
        log_path = run_dir / "spark.log"
        # the S3A keys in a properties file, as a user keeps them off the command line
        secrets = run_dir / "s3a.properties"
        secrets.write_text("".join(f"{k} {v}\n" for k, v in s3a_by_hand(s3).items()))
        secrets.chmod(0o600)
        argv = spark_submit_argv(SCRIPT, args, conf, tuned[1])
        argv[1:1] = ["--properties-file", str(secrets)]
        run_timed(argv, clean_env(), run_dir, timeout=1800, log_path=log_path).check()
        return read_text(log_path)
    flags: list[str] = []
    if variant == "s3a-changelog":
        flags += ["-D", f"{CHANGELOG}=true"]
    timed = cli.run("run", *flags, str(SCRIPT), *args, timeout=1800).check()
    return flinkish_log(cli.conf_dir, timed.stdout)


def checkpoint_of(variant: str, rep: int, run_dir: Path) -> str:
    """The script's own ``checkpointLocation`` (Spark's and flinkish's rule alike: a query
    whose script names its checkpoint keeps it there): on disk for ``local``, on S3 for the
    others (``s3://`` under flinkish, as a Flink user writes it; ``s3a://`` by hand)."""
    if variant == "local":
        return str(run_dir / "checkpoint")
    scheme = "s3a" if variant == "plain" else "s3"
    return f"{scheme}://{BUCKET}/{variant}-{rep}"


def _steady(batches: Batches) -> float:
    return median(batches.trigger)


def rows(per_run: dict[str, list[Batches]]) -> list[Row]:
    """The section's rows from each variant's runs."""

    def steady(variant: str) -> list[float]:
        return [_steady(b) for b in per_run[variant]]

    def logs(variant: str) -> dict[str, float]:
        return {
            "offset log (walCommit), median s": median([median(b.wal) for b in per_run[variant]]),
            "commit log (commitOffsets), median s": median(
                [median(b.commit) for b in per_run[variant]]
            ),
        }

    local, s3a, changelog, plain = (steady(v) for v in VARIANTS)
    return [
        Row(
            measurement="steady micro-batch, checkpoint on S3A (flinkish)",
            value=median(s3a),
            unit="s",
            reference="the same batches, checkpoint on local disk (flinkish)",
            reference_value=median(local),
            samples=s3a,
            reference_samples=local,
            goal=f"ratio ≤ {S3A_GOAL}",
            goal_met=median(s3a) <= S3A_GOAL * median(local),
            details={"S3A": logs("s3a"), "local disk": logs("local")},
        ),
        Row(
            measurement="steady micro-batch, S3A with RocksDB changelog checkpointing",
            value=median(changelog),
            unit="s",
            reference="S3A with flinkish's defaults",
            reference_value=median(s3a),
            samples=changelog,
            reference_samples=s3a,
            details={"changelog": logs("s3a-changelog")},
            note="the candidate of fewer files per batch",
        ),
        Row(
            measurement="steady micro-batch, checkpoint on S3A (flinkish)",
            value=median(s3a),
            unit="s",
            reference="spark-submit, the same Spark and S3A settings written by hand",
            reference_value=median(plain),
            samples=s3a,
            reference_samples=plain,
            details={"spark-submit": logs("plain")},
        ),
    ]
