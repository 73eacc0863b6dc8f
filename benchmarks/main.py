"""The benchmark's one entry point: ``python -m benchmarks [--quick]`` (``scripts/bench``).

Runs every section in one go on this machine, in a private temporary directory, then writes
``docs/benchmarks.md`` and ``benchmarks/results.json`` (or the paths given). A section that
fails is reported as failed, the others still run, and the exit status is 1. ``--quick``
uses a small backlog and short runs (what CI runs, ``tests/benchmarks/``). ``--only`` runs
some sections and keeps every other section of the results there before (a full run's
``benchmarks/results.json``), so that one section's figures reach the page without a
rerun of the others: each section records when it was measured (``measured``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import (
    autoscale,
    backlog,
    cds,
    cli_latency,
    flink,
    kafka,
    lifecycle,
    machine,
    object_store,
    profiling,
    session,
    streaming,
    yarn,
)
from benchmarks.harness import REPO, S3Server, Workspace, s3_server
from benchmarks.report import (
    SCHEMA_VERSION,
    Results,
    Section,
    validate,
    write_json,
    write_markdown,
)

SECTIONS = (
    "cli",
    "backlog",
    "streaming",
    "lifecycle",
    "profiling",
    "session",
    "cds",
    "flink",
    "autoscale",
    "kafka",
    "object_store",
    "yarn",
)
#: The order of the report (SECTIONS is the order of the run: section 8 needs section 6's
#: figures).
REPORT_ORDER = (
    "backlog",
    "streaming",
    "cli",
    "lifecycle",
    "profiling",
    "session",
    "cds",
    "flink",
    "autoscale",
    "kafka",
    "object_store",
    "yarn",
)
QUICK_OUTPUT = Path(tempfile.gettempdir()) / "flinkish-bench-quick"


def parameters(quick: bool) -> dict[str, Any]:
    """Sizes and durations of a full or a quick run."""
    if quick:
        return {
            "backlog": backlog.BacklogParams(
                files=2, rows_per_file=500, keys=100, max_files_per_trigger=2, reps=1
            ),
            "streaming": streaming.StreamingParams(
                rate=40, events_per_file=20, duration=10, warmup=0
            ),
            "cli": cli_latency.CliParams(runs=3),
            "lifecycle": lifecycle.LifecycleParams(
                sizes=(2_000,), files=2, s3_cycle=False, savepoint_reps=1, read_state=False
            ),
            "profiling": profiling.ProfilingParams(
                small_files=200, small_size=4096, big_files=4, big_size=1 << 20
            ),
            "jvm_runs": 0,
            "session": session.SessionParams(
                run_reps=1,
                batch_reps=1,
                stream_keys=200,
                batch=backlog.BacklogParams(
                    files=2, rows_per_file=150, keys=50, max_files_per_trigger=2, reps=1
                ),
            ),
            "cds": cds.CdsParams(reps=1, enabled=optional("BENCH_CDS", quick)),
            "flink": flink.FlinkParams(reps=1, enabled=optional("BENCH_FLINK", quick)),
            "autoscale": autoscale.AutoscaleParams.quick(enabled=wanted("BENCH_AUTOSCALE")),
            "kafka": kafka.KafkaParams(
                orders=20_000,
                trickle_rate=50,
                enabled=optional("BENCH_KAFKA", quick),
                flink=optional("BENCH_FLINK", quick),
                latency_rate=50,
                latency_seconds=20,
            ),
            "object_store": object_store.ObjectStoreParams(
                backlog=backlog.BacklogParams(
                    files=4, rows_per_file=500, keys=200, max_files_per_trigger=1, reps=1
                ),
                enabled=optional("BENCH_OBJECT_STORE", quick),
            ),
            "yarn": yarn.YarnParams(reps=1, enabled=optional("BENCH_YARN", quick)),
        }
    return {
        "backlog": backlog.BacklogParams(
            files=60, rows_per_file=5_000, keys=10_000, max_files_per_trigger=10, reps=3
        ),
        "streaming": streaming.StreamingParams(
            rate=200, events_per_file=100, duration=60, warmup=10
        ),
        "cli": cli_latency.CliParams(runs=10),
        "lifecycle": lifecycle.LifecycleParams(sizes=(100_000, 1_000_000), files=20),
        "profiling": profiling.ProfilingParams(
            small_files=2_000, small_size=4096, big_files=8, big_size=32 << 20
        ),
        "jvm_runs": 3,
        "session": session.SessionParams(
            run_reps=5,
            batch_reps=3,
            stream_keys=1_000,
            batch=backlog.BacklogParams(
                files=6, rows_per_file=100, keys=100, max_files_per_trigger=2, reps=3
            ),
        ),
        "cds": cds.CdsParams(reps=3, enabled=optional("BENCH_CDS", quick)),
        "flink": flink.FlinkParams(reps=5, enabled=optional("BENCH_FLINK", quick)),
        "autoscale": autoscale.AutoscaleParams(enabled=wanted("BENCH_AUTOSCALE")),
        "kafka": kafka.KafkaParams(
            orders=5_000_000,
            trickle_rate=200,
            enabled=optional("BENCH_KAFKA", quick),
            flink=optional("BENCH_FLINK", quick),
            latency_rate=1_000,
            latency_seconds=120,
        ),
        "object_store": object_store.ObjectStoreParams(
            backlog=backlog.BacklogParams(
                files=20, rows_per_file=5_000, keys=10_000, max_files_per_trigger=1, reps=3
            ),
            enabled=optional("BENCH_OBJECT_STORE", quick),
        ),
        "yarn": yarn.YarnParams(reps=3, enabled=optional("BENCH_YARN", quick)),
    }


def sized(params: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``params`` with the sizes the command line gives (``--lifecycle-keys``,
    ``--kafka-orders``) in place of the run's own."""
    if args.lifecycle_keys:
        sizes = tuple(int(k) for k in args.lifecycle_keys.split(",") if k.strip())
        params["lifecycle"] = dataclasses.replace(params["lifecycle"], sizes=sizes)
    if args.kafka_orders:
        params["kafka"] = dataclasses.replace(params["kafka"], orders=args.kafka_orders)
    return params


def optional(variable: str, quick: bool) -> bool:
    """Whether an optional section runs: in a full run unless ``VARIABLE=0``, in a quick run
    only with ``VARIABLE=1`` (so CI's quick run never installs Apache Flink nor starts a
    Kafka broker or a YARN)."""
    value = os.environ.get(variable, "").strip()
    return value == "1" if quick else value != "0"


def wanted(variable: str) -> bool:
    """Whether a section off by default runs: only with ``VARIABLE=1``, in a full run as in
    a quick one (section 10, the autoscaler's, takes about half an hour)."""
    return os.environ.get(variable, "").strip() == "1"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench",
        description="Benchmark flinkish side by side with plain spark-submit, in one go.",
    )
    parser.add_argument("--quick", action="store_true", help="small backlog, short runs (CI)")
    parser.add_argument(
        "--markdown",
        type=Path,
        help="where the Markdown report goes (default docs/benchmarks.md; with --quick "
        f"{QUICK_OUTPUT / 'benchmarks.md'}, so that a quick run never replaces the full one)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        help="where the JSON results go (default benchmarks/results.json; with --quick "
        f"{QUICK_OUTPUT / 'results.json'})",
    )
    parser.add_argument(
        "--workdir", type=Path, help="working directory (default: a new temporary one)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument(
        "--lifecycle-keys",
        help="comma-separated key counts of section 4's jobs (default 100000,1000000; quick: 2000)",
    )
    parser.add_argument(
        "--kafka-orders",
        type=int,
        help="orders in section 11's backlog (default 5000000; quick: 20000)",
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run (default all: {','.join(SECTIONS)})",
    )
    args = parser.parse_args(argv)
    if args.markdown is None:
        args.markdown = (
            QUICK_OUTPUT / "benchmarks.md" if args.quick else REPO / "docs" / "benchmarks.md"
        )
    if args.json is None:
        args.json = (
            QUICK_OUTPUT / "results.json" if args.quick else REPO / "benchmarks" / "results.json"
        )
    return args


def _say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        print(f"Unknown sections: {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
        return 2
    for variable in [k for k in os.environ if k.startswith(("FLINK", "PYSPARK"))]:
        del os.environ[variable]  # the benchmark's own configuration reads must not see them
    started, began = _now(), time.monotonic()
    description = machine.describe()
    ncores = int(description["cores_usable"])
    params = sized(parameters(args.quick), args)
    _say(
        f"{'quick' if args.quick else 'full'} run on {description['cpu']}, {ncores} cores, "
        f"load {description['load_average_start']}"
    )
    root = args.workdir or Path(tempfile.mkdtemp(prefix="flinkish-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root.resolve())
    sections: list[Section] = []
    cli_best: dict[str, Any] | None = None
    facts: list[dict[str, Any]] | None = None
    session_figures: session.SessionFigures | None = None

    def attempt(key: str, title: str, body: Callable[[], Section]) -> None:
        if key not in wanted:
            return
        _say(f"section {key}: start")
        section_began = time.monotonic()
        try:
            section = body()
        except Exception as error:  # reported, and the other sections still run
            traceback.print_exc()
            section = Section(key=key, title=title, method="", error=_one_line(error))
        section.seconds = round(time.monotonic() - section_began, 1)
        section.measured = section.measured or _now()
        sections.append(section)
        _say(f"section {key}: done in {section.seconds:.0f} s")

    try:
        with _optional_s3(workspace) as (s3, s3_error):

            def cli() -> Section:
                nonlocal cli_best
                section, cli_best = cli_latency.run(workspace, params["cli"], s3)
                if s3_error:
                    section.notes.append(f"The moto server did not start: {s3_error}")
                return section

            def run_session() -> Section:
                nonlocal session_figures
                section, session_figures = session.run(workspace, params["session"], ncores)
                return section

            def life() -> Section:
                nonlocal facts
                if s3 is None:
                    raise RuntimeError(f"the moto S3 server did not start: {s3_error}")
                section, facts = lifecycle.run(workspace, params["lifecycle"], ncores, s3)
                return section

            attempt("cli", "3. CLI latency", cli)
            attempt(
                "backlog",
                "1. A stateful script over a backlog",
                lambda: backlog.run(workspace, params["backlog"], ncores),
            )
            attempt(
                "streaming",
                "2. Steady state",
                lambda: streaming.run(workspace, params["streaming"], ncores),
            )
            attempt("lifecycle", "4. Job life cycle", life)
            attempt(
                "profiling",
                "5. Where the time goes",
                lambda: profiling.run(
                    workspace,
                    params["profiling"],
                    ncores,
                    cli_best,
                    facts,
                    params["jvm_runs"],
                ),
            )
            attempt("session", session.TITLE, run_session)
            attempt("cds", cds.TITLE, lambda: cds.run(workspace, params["cds"], ncores))
            attempt(
                "flink",
                flink.TITLE,
                lambda: flink.run(workspace, params["flink"], session_figures),
            )

            def objects() -> Section:
                return object_store.run(workspace, params["object_store"], ncores, s3, s3_error)

            attempt("object_store", object_store.TITLE, objects)
            attempt(
                "autoscale",
                autoscale.TITLE,
                lambda: autoscale.run(workspace, params["autoscale"]),
            )
            attempt("kafka", kafka.TITLE, lambda: kafka.run(workspace, params["kafka"], ncores))
            attempt("yarn", yarn.TITLE, lambda: yarn.run(workspace, params["yarn"]))
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    description["load_average_end"] = machine.load_average()
    plain = {key: _plain(value) for key, value in params.items()}
    if set(wanted) != set(SECTIONS):
        sections, plain = _with_earlier(args.json, args.quick, sections, plain)
    order = {key: index for index, key in enumerate(REPORT_ORDER)}
    sections.sort(key=lambda s: order[s.key])
    results = Results(
        mode="quick" if args.quick else "full",
        started=started,
        finished=_now(),
        seconds=time.monotonic() - began,
        machine=description,
        parameters=plain,
        sections=sections,
    )
    write_json(results, args.json)
    write_markdown(results, args.markdown)
    problems = validate(results.to_dict())
    _say(f"wrote {args.markdown} and {args.json} in {results.seconds / 60:.1f} min")
    for problem in problems:
        _say(f"problem: {problem}")
    return 1 if problems else 0


def _with_earlier(
    path: Path, quick: bool, sections: list[Section], parameters: dict[str, Any]
) -> tuple[list[Section], dict[str, Any]]:
    """This run's sections with those of the earlier results at ``path`` that it did not
    run (a run of the same mode: a quick run never fills a full page), and their
    parameters; this run's alone where there are none or they are not a benchmark's."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return sections, parameters
    if document.get("schema") != SCHEMA_VERSION or document.get("mode") != (
        "quick" if quick else "full"
    ):
        return sections, parameters
    earlier = Results.from_dict(document)
    ran = {section.key for section in sections}
    kept = [s for s in earlier.sections if s.key not in ran and s.key in REPORT_ORDER]
    for section in kept:
        section.measured = section.measured or earlier.started
    merged = {**earlier.parameters, **{k: v for k, v in parameters.items() if k in ran}}
    return sections + kept, merged


class _optional_s3:
    """``with _optional_s3(ws) as (server or None, error or None)``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.context: Any = None

    def __enter__(self) -> tuple[S3Server | None, str | None]:
        self.context = s3_server(self.workspace)
        try:
            return self.context.__enter__(), None
        except Exception as error:
            self.context = None
            return None, _one_line(error)

    def __exit__(self, *exc: object) -> None:
        if self.context is not None:
            self.context.__exit__(*exc)


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}" + (
        f" (+{len(text) - 1} lines: {' / '.join(text[1:6])})" if len(text) > 1 else ""
    )


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    return value


if __name__ == "__main__":
    sys.exit(main())
