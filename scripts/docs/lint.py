"""The documentation's lint: the README and the site's pages speak of the product only.

:func:`problems` returns, for one page, each line that breaks a rule:

- the README is at most :data:`README_LINES` lines;
- no development-log wording (:data:`DEVELOPMENT_LOG`): sessions of work, "measured by hand",
  "not landed", "Landed", "Tried", "CI ran", "on these machines", "here:", commit hashes, paths
  of test files;
- figures (:data:`FIGURES`) only on the generated pages: a measured duration ("12.3 s",
  "median 40 ms", "3× faster") on a hand-written page is a hand-copied figure that drifts.
  A setting's default ("every `10 s`", "a timeout of 30 s") is no figure: durations are
  flagged only with a decimal point, or next to a word of measuring;
- every image a page shows exists.

Code blocks and code spans are left out (a command's arguments, a JobID in an example).
``docs/internals/`` (how the code works) is not a user page; ``docs/benchmarks.md`` may carry
figures and its runs' commits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from scripts.docs.common import ROOT

README_LINES = 250

#: (rule, pattern) of the words of a development log
DEVELOPMENT_LOG: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a session of work",
        re.compile(
            r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
            r"twelfth|this|earlier|last|previous|next)\s+session\b(?![ -]clusters?\b)",
            re.I,
        ),
    ),
    (
        "'... by hand'",
        re.compile(
            r"\b(?:measured|timed|counted|copied|edited|written|tested|ran)\s+by hand\b", re.I
        ),
    ),
    ("'not landed'", re.compile(r"\bnot\s+landed\b", re.I)),
    ("'Landed'", re.compile(r"\bLanded\b")),
    ("'Tried'", re.compile(r"\bTried\b")),
    ("'CI ran'", re.compile(r"\bCI\s+ran\b", re.I)),
    ("'on these machines'", re.compile(r"\bon\s+these\s+machines\b", re.I)),
    ("'here:'", re.compile(r"\bhere:", re.I)),
    ("a commit hash", re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")),
    ("a test file as evidence", re.compile(r"(?<![\w.-])tests/[\w./-]*")),
)

#: (rule, pattern) of the figures only the generated benchmark page may carry
_UNIT = r"(?:ms|s|sec|seconds?|min|minutes?|µs|MB/s|rows/s)"
FIGURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a duration with decimals", re.compile(rf"\b\d+\.\d+\s?{_UNIT}\b")),
    (
        "a measured figure",
        re.compile(
            rf"\b(?:measured|median|mean|average|p50|p9[059]|took|fastest|slowest)\b[^.;]{{0,40}}?"
            rf"\b\d[\d,.]*\s?{_UNIT}\b",
            re.I,
        ),
    ),
    ("a speed-up", re.compile(r"\b\d+(?:\.\d+)?\s?[×x]\s+(?:faster|slower|quicker)\b", re.I)),
)

#: pages under docs/ that are generated from the code and may carry figures
GENERATED = ("configuration.md", "benchmarks.md", "reference/")
_IMAGE = re.compile(
    r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<img[^>]*\bsrc=\"([^\"]+)\""
)


def user_pages(root: Path = ROOT) -> Iterator[Path]:
    """The README and every page of the site but ``docs/internals/``."""
    yield root / "README.md"
    for page in sorted((root / "docs").rglob("*.md")):
        if "internals" not in page.relative_to(root / "docs").parts:
            yield page


def problems(page: Path, text: str, root: Path = ROOT) -> list[str]:
    """Each rule ``text`` (the page at ``page``) breaks, as ``<page>:<line>: <what>``."""
    name = page.relative_to(root).as_posix()
    under_docs = name.removeprefix("docs/") if name.startswith("docs/") else None
    generated = under_docs is not None and under_docs.startswith(GENERATED)
    found: list[str] = []
    lines = text.splitlines()
    if name == "README.md" and len(lines) > README_LINES:
        found.append(f"{name}: {len(lines)} lines, more than {README_LINES}")
    rules = list(DEVELOPMENT_LOG)
    if under_docs == "benchmarks.md":  # its runs' metadata: the commit each ran on
        rules = [r for r in rules if r[0] not in ("a commit hash", "'here:'")]
    if not generated:
        rules += list(FIGURES)
    for number, line in _prose_lines(lines):
        for rule, pattern in rules:
            match = pattern.search(line)
            if match:
                found.append(f"{name}:{number}: {rule}: {match.group(0)!r}")
    for number, line in enumerate(lines, 1):
        for match in _IMAGE.finditer(line):
            target = match.group(1) or match.group(2)
            if "://" in target:
                continue
            if not (page.parent / target.split("#")[0]).resolve().is_file():
                found.append(f"{name}:{number}: the image {target} does not exist")
    return found


def _prose_lines(lines: list[str]) -> Iterator[tuple[int, str]]:
    """The lines outside code blocks and HTML comments, their code spans left out."""
    fence: str | None = None
    comment = False
    for number, line in enumerate(lines, 1):
        if comment:
            if "-->" in line:
                comment, line = False, line.split("-->", 1)[1]
            else:
                continue
        if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
            comment, line = True, line.split("<!--", 1)[0]
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, re.sub(r"`[^`]*`|<!--.*?-->|\]\([^)]*\)", " ", line)


def check(root: Path = ROOT) -> list[str]:
    """Every problem of every user page."""
    found: list[str] = []
    for page in user_pages(root):
        if page.is_file():
            found += problems(page, page.read_text(encoding="utf-8"), root)
    return found
