"""The benchmark's results: the model, its validation, and the Markdown and JSON writers.

Every :class:`Row` is one measurement with its reference taken in the same run; its ratio
is always ``value / reference_value`` (below 1: less time than the reference, or for
throughputs, less throughput). A goal is stated on that ratio (or on the value, for the
CLI's latencies) and reported as met or not; nothing here judges a figure otherwise.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_bytes, fmt_seconds
from benchmarks.page import KEPT, keep_section

SCHEMA_VERSION = 1


@dataclass
class Row:
    """One measurement against its reference."""

    measurement: str
    value: float
    unit: str  # "s" or "rows/s" (or "share" for profiling rows)
    reference: str
    reference_value: float
    samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    goal: str | None = None
    goal_met: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    kind: str = "time"  # "time", "throughput", or "share" (a part against its whole)

    @property
    def ratio(self) -> float:
        return self.value / self.reference_value if self.reference_value else math.inf

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = round(self.ratio, 4) if math.isfinite(self.ratio) else None
        return data


@dataclass
class Section:
    """One part of the benchmark: how it was measured, its rows, and what it found."""

    key: str
    title: str
    method: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None
    seconds: float = 0.0
    #: when it was measured (ISO 8601, UTC): a run with ``--only`` keeps earlier sections
    measured: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = [row.to_dict() for row in self.rows]
        return data


@dataclass
class Results:
    """A whole run."""

    mode: str
    started: str
    finished: str
    seconds: float
    machine: dict[str, Any]
    parameters: dict[str, Any]
    sections: list[Section]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """The results :meth:`to_dict` wrote (``benchmarks/results.json``)."""
        sections = []
        for section in data["sections"]:
            rows = [Row(**{k: v for k, v in r.items() if k != "ratio"}) for r in section["rows"]]
            sections.append(Section(**{**section, "rows": rows}))
        keys = ("mode", "started", "finished", "seconds", "machine", "parameters")
        return cls(**{k: data[k] for k in keys}, sections=sections)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "mode": self.mode,
            "started": self.started,
            "finished": self.finished,
            "seconds": round(self.seconds, 1),
            "machine": self.machine,
            "parameters": self.parameters,
            "sections": [section.to_dict() for section in self.sections],
        }


MACHINE_KEYS = (
    "cpu",
    "cores",
    "memory",
    "os",
    "python",
    "java",
    "spark",
    "load_average_start",
)


def validate(document: dict[str, Any]) -> list[str]:
    """What is wrong with a results document (empty when it is well formed): every section
    ran or says why not, every row has its figures, its reference and a consistent ratio."""
    problems: list[str] = []
    if document.get("schema") != SCHEMA_VERSION:
        problems.append(f"schema is {document.get('schema')!r}, expected {SCHEMA_VERSION}")
    machine = document.get("machine") or {}
    problems += [f"machine.{key} is missing" for key in MACHINE_KEYS if not machine.get(key)]
    sections = document.get("sections") or []
    if not sections:
        problems.append("no sections")
    for section in sections:
        name = section.get("key", "?")
        if section.get("error"):
            problems.append(f"section {name} failed: {section['error']}")
            continue
        if section.get("skipped"):
            continue
        if not section.get("rows"):
            problems.append(f"section {name} has no rows")
        for index, row in enumerate(section.get("rows") or []):
            where = f"{name} row {index} ({row.get('measurement')})"
            for key in ("measurement", "unit", "reference"):
                if not row.get(key):
                    problems.append(f"{where}: {key} is missing")
            value, reference, ratio = row.get("value"), row.get("reference_value"), row.get("ratio")
            if not _positive(value):
                problems.append(f"{where}: value {value!r} is not a positive number")
            if not _positive(reference):
                problems.append(f"{where}: reference_value {reference!r} is not a positive number")
            if not _positive(ratio):
                problems.append(f"{where}: ratio {ratio!r} is not a positive number")
            elif (
                _positive(value)
                and _positive(reference)
                and not math.isclose(ratio, value / reference, rel_tol=1e-3, abs_tol=1e-4)
            ):
                problems.append(f"{where}: ratio {ratio} is not value / reference_value")
            if not row.get("samples"):
                problems.append(f"{where}: no samples")
            if row.get("goal") and row.get("goal_met") is None:
                problems.append(f"{where}: goal without a verdict")
    return problems


def _positive(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


# -- writers ------------------------------------------------------------------------------
def write_json(results: Results, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results.to_dict(), indent=1, sort_keys=False) + "\n")


def fmt_value(value: float, unit: str) -> str:
    if unit == "s":
        return fmt_seconds(value)
    if unit == "rows/s":
        return f"{value:,.0f} rows/s"
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "share":
        return f"{value:.0%}"
    return f"{value:g} {unit}"


def fmt_ratio(row: Row) -> str:
    ratio = row.ratio
    if not math.isfinite(ratio):
        return "—"
    if row.kind == "share":
        return f"{ratio:.2f} ({ratio:.0%} of it)" if ratio >= 0.005 else f"{ratio:.3f} (<1% of it)"
    text = f"{ratio:.2f}"
    if row.kind != "time":
        return text
    if row.unit == "s" and ratio < 0.95:
        text += f" ({1 / ratio:.1f}× faster)"
    elif row.unit == "s" and ratio > 1.05:
        text += f" ({ratio:.1f}× slower)"
    return text


def _met(row: Row) -> str:
    if row.goal_met is None:
        return "—"
    return "**yes**" if row.goal_met else "**no**"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(results: Results) -> str:
    """``docs/benchmarks.md``."""
    machine = results.machine
    out = [
        "# Benchmarks: flinkish side by side with plain spark-submit",
        "",
        "<!-- Generated by scripts/bench from one run; do not edit by hand. "
        "Run scripts/bench again to refresh it. -->",
        "",
        f"Generated by `scripts/bench{' --quick' if results.mode == 'quick' else ''}` "
        f"({results.mode} run) from {results.started} to {results.finished} "
        f"({results.seconds / 60:.1f} min) on the machine below. Every figure of the numbered "
        "sections comes from that one run, except those of a section its own script writes "
        "(the soak's, `scripts/soak`; the autoscaler's, `scripts/autoscale`), which names its "
        "own run. Each measurement is given as a ratio against a reference measured in the "
        "same run (**ratio = measured / reference**: below 1 is less time than the reference). "
        "The targets are what the measurement is compared with, never asserted by tests. The "
        "same figures are in `benchmarks/results.json`.",
        "",
        "To run it again: `scripts/bench` (everything: 25 to 40 minutes on two cores without "
        "section 11, whose 5 million orders take hours there; `BENCH_KAFKA=0` leaves it out; plus "
        "a one-time install of Apache Flink for section 8; it rewrites this file and "
        "`benchmarks/results.json`), `scripts/bench --quick` (a small backlog and short runs; "
        "sections 7, 8, 11, 12 and 13 only with `BENCH_CDS=1` / `BENCH_FLINK=1` / "
        "`BENCH_KAFKA=1` / `BENCH_OBJECT_STORE=1` / `BENCH_YARN=1`), "
        "`scripts/bench --help` "
        "(options, e.g. `--only` to run some sections and `--markdown`/`--json` to write "
        "elsewhere).",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    labels = {
        "cpu": "CPU",
        "cores": "Cores",
        "memory": "Memory",
        "os": "OS",
        "python": "Python",
        "java": "Java",
        "spark": "Spark (pyspark)",
        "flinkish": "flinkish",
        "boto3": "boto3 / moto",
        "commit": "Commit",
        "load_average_start": "Load average at start (1, 5, 15 min)",
        "load_average_end": "Load average at end (1, 5, 15 min)",
    }
    for key, label in labels.items():
        if key in machine:
            out.append(f"| {label} | {_cell(str(machine[key]))} |")
    out += ["", "## Targets", "", "| Target | Measured | Met |", "|---|---|---|"]
    for section in results.sections:
        for row in section.rows:
            if row.goal:
                measured = f"{fmt_value(row.value, row.unit)}; ratio {fmt_ratio(row)}"
                out.append(
                    f"| {_cell(row.measurement)}: {_cell(row.goal)} | {measured} | {_met(row)} |"
                )
    for section in results.sections:
        out += ["", f"## {section.title}", "", section.method.strip(), ""]
        if section.skipped:
            out += [f"**Not measured:** {section.skipped}", ""]
            continue
        if section.error:
            out += [f"**This section failed:** `{_cell(section.error)}`", ""]
        if section.rows:
            out += [
                "| Measurement | Value | Reference | Reference value | Ratio | Target | Met |",
                "|---|---:|---|---:|---:|---|---|",
            ]
            for row in section.rows:
                out.append(
                    f"| {_cell(row.measurement)} | {fmt_value(row.value, row.unit)} "
                    f"| {_cell(row.reference)} | {fmt_value(row.reference_value, row.unit)} "
                    f"| {fmt_ratio(row)} | {_cell(row.goal or '—')} | {_met(row)} |"
                )
            out.append("")
            detailed = [row for row in section.rows if row.details or row.note]
            if detailed:
                out += ["Details:", ""]
                for row in detailed:
                    parts = [_detail(k, v) for k, v in row.details.items()]
                    if row.note:
                        parts.append(row.note)
                    out.append(f"- *{row.measurement}*: " + "; ".join(parts) + ".")
                out.append("")
        for note in section.notes:
            out.append(f"- {note}")
        if section.notes:
            out.append("")
    out += [
        "## Parameters of this run",
        "",
        "```json",
        json.dumps(results.parameters, indent=1),
        "```",
        "",
    ]
    return "\n".join(out)


def _detail(key: str, value: Any) -> str:
    """A detail for display: keys ending in "seconds" hold times, in "bytes" sizes."""
    if key.endswith("seconds"):
        label = key.removesuffix("seconds").rstrip(" ,")
        if isinstance(value, (int, float)):
            return f"{label}: {fmt_seconds(float(value))}"
        if isinstance(value, list):
            return f"{label}: " + ", ".join(fmt_seconds(float(v)) for v in value)
        return f"{label}: {value}"
    if key.endswith("bytes") and isinstance(value, int):
        return f"{key.removesuffix('bytes').rstrip(' ,') or 'bytes'}: {fmt_bytes(value)}"
    if isinstance(value, float):
        return f"{key}: {value:.3g}"
    if isinstance(value, list):
        return f"{key}: " + ", ".join(str(v) for v in value)
    return f"{key}: {value}"


def write_markdown(results: Results, path: Path) -> None:
    """Write the page; the sections of the page there before that scripts of their own
    write (the soak's, ``scripts/soak``; the autoscaler's, ``scripts/autoscale``) are kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_text() if path.exists() else ""
    kept = [
        (key, begin, end) for key, (begin, end) in KEPT.items() if begin in before and end in before
    ]
    # a section this run skipped gives way to the one its own script wrote (no second heading)
    replaced = {key for key, _, _ in kept}
    shown = [s for s in results.sections if not (s.skipped and s.key in replaced)]
    page = markdown(replace(results, sections=shown))
    for _, begin, end in kept:
        section = begin + before.split(begin, 1)[1].split(end, 1)[0] + end
        page = keep_section(page, section + "\n", begin, end)
    path.write_text(page)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.report``: no run; rewrite the page from stored results."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report",
        description="Rewrite docs/benchmarks.md from stored results, without running anything "
        "(the sections the soak and the autoscaler wrote are kept).",
    )
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--json", default=str(root / "benchmarks" / "results.json"))
    parser.add_argument("--markdown", default=str(root / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    document = json.loads(Path(args.json).read_text())
    problems = validate(document)
    if problems:
        print(f"{args.json} is not a benchmark's results: {problems[0]}", file=sys.stderr)
        return 1
    write_markdown(Results.from_dict(document), Path(args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
