"""Section 6 (optional): the same life cycle against a local Apache Flink cluster.

Only when ``apache-flink`` (``pyflink``) is importable; it is never installed by the
benchmark (it is large). When it is missing, the report says so instead of a figure.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata

from benchmarks.report import Section

METHOD = (
    "The life-cycle commands of section 4 (`flink run -d`, `flink savepoint`, `flink stop "
    "--savepointPath`, `flink run -s`) against a local Flink cluster started from "
    "`apache-flink`'s own distribution, when that package is importable."
)


def run() -> Section:
    section = Section(key="flink", title="6. Apache Flink itself (optional)", method=METHOD)
    if importlib.util.find_spec("pyflink") is None:
        section.skipped = (
            "`apache-flink` (pyflink) is not importable in this environment, and the benchmark "
            "does not install it (it is large), so Flink's own life cycle was not measured."
        )
        return section
    try:
        version = metadata.version("apache-flink")
    except metadata.PackageNotFoundError:
        version = "unknown version"
    section.skipped = (
        f"`apache-flink` {version} is importable, but this benchmark does not drive a Flink "
        "cluster yet: it could not be developed or checked on a machine without Flink, and a "
        "figure that was never checked is not reported."
    )
    return section
