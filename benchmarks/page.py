"""The benchmark page, docs/benchmarks.md: where it is, and the sections that scripts of their
own write into it (the soak's, ``scripts/soak``; the autoscaler's, ``scripts/autoscale``)
between marker lines, which ``scripts/bench`` keeps when it rewrites the rest of the page
(:func:`benchmarks.report.write_markdown`). It imports no benchmark: they all import it.
"""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"

#: The soak's section (``scripts/soak --docs``), between these two lines.
SOAK = ("<!-- soak: written by scripts/soak -->", "<!-- /soak -->")
#: The autoscaler's section (``scripts/autoscale --docs``), between these two lines.
AUTOSCALE = ("<!-- autoscale: written by scripts/autoscale -->", "<!-- /autoscale -->")
#: Every kept section by its key in the results (``Section.key``), with its marker lines.
KEPT = {"soak": SOAK, "autoscale": AUTOSCALE}


def keep_section(page: str, section: str, begin: str, end: str) -> str:
    """``page`` with its section between ``begin`` and ``end`` replaced by ``section`` (added
    before the run's parameters, or at the end, when it has none)."""
    if begin in page and end in page:
        before, rest = page.split(begin, 1)
        return before + section.rstrip("\n") + rest.split(end, 1)[1]
    marker = "## Parameters of this run"
    if marker in page:
        before, after = page.split(marker, 1)
        return before + section + "\n" + marker + after
    return page.rstrip("\n") + "\n\n" + section
