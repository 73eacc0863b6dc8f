"""The documentation's lint (:mod:`scripts.docs.lint`): the user pages pass it, and it fails
on pages that carry a development log, hand-copied figures, or a missing image."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.docs.common import ROOT
from scripts.docs.lint import README_LINES, check, problems


def test_the_readme_and_the_user_pages_pass() -> None:
    found = check()
    assert not found, "\n".join(found)


def _page(tmp_path: Path, name: str, text: str) -> list[str]:
    page = tmp_path / name
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return problems(page, text, tmp_path)


@pytest.mark.parametrize(
    "line",
    [
        "As the ninth session found, the driver starts faster.",
        "The start-up was measured by hand on a quiet machine.",
        "Periodic savepoints: tried, not landed.",
        "Landed in the last release.",
        "Tried a smaller heap first.",
        "CI ran 25 minutes on that commit.",
        "It takes 4 s on these machines.",
        "Measured here: three runs.",
        "Fixed in 1c43315, the next long run measures it.",
        "See tests/client/test_upgrade_stability.py for the proof.",
    ],
)
def test_a_development_log_fails(tmp_path: Path, line: str) -> None:
    found = _page(tmp_path, "docs/guides/savepoints.md", f"# Savepoints\n\n{line}\n")
    assert found and all(f.startswith("docs/guides/savepoints.md:3: ") for f in found), found


@pytest.mark.parametrize(
    "line",
    [
        "A fresh driver starts in 3.9 s with the archive.",
        "The median start-up is 427 ms.",
        "It took about 45 s to make the archive.",
        "Class-data sharing makes the driver 2× faster.",
    ],
)
def test_a_figure_on_a_hand_written_page_fails(tmp_path: Path, line: str) -> None:
    found = _page(tmp_path, "docs/concepts/job-lifecycle.md", f"# Jobs\n\n{line}\n")
    assert found, line
    assert not _page(tmp_path, "docs/benchmarks.md", f"# Benchmarks\n\n{line}\n")


@pytest.mark.parametrize(
    "line",
    [
        "A checkpoint every 10 s (`execution.checkpointing.interval`, default 3 min).",
        "The request times out after 30 s; set `rest.timeout`.",
        "Run `flinkish run -d jobs/orders.py --rate 2.5` and wait.",
        "The JobID `a3f0c1d2e4b5a6978877665544332211` names the job.",
        "A session cluster runs many jobs; start this session cluster first.",
        "Rescale by hand with `flinkish upgrade -p 4`.",
        "Click the job; its graph is there: one node per operator.",
    ],
)
def test_product_wording_passes(tmp_path: Path, line: str) -> None:
    assert not _page(tmp_path, "docs/guides/clusters.md", f"# Clusters\n\n{line}\n")


def test_fenced_code_is_left_out(tmp_path: Path) -> None:
    text = "# Run\n\n```text\nSavepoint at 1c43315ab, took 12.5 s (tests/x.py)\n```\n"
    assert not _page(tmp_path, "docs/getting-started/quickstart.md", text)


def test_a_long_readme_fails(tmp_path: Path) -> None:
    text = "# flinkish\n" + "A line.\n" * README_LINES
    found = _page(tmp_path, "README.md", text)
    assert found == [f"README.md: {README_LINES + 1} lines, more than {README_LINES}"]
    assert not _page(tmp_path, "README.md", "# flinkish\n" + "A line.\n" * (README_LINES - 1))


def test_a_missing_image_fails(tmp_path: Path) -> None:
    (tmp_path / "docs" / "images").mkdir(parents=True)
    (tmp_path / "docs" / "images" / "dashboard-jobs.png").write_bytes(b"\x89PNG")
    good = "# Dashboard\n\n![The jobs](../images/dashboard-jobs.png)\n"
    assert not _page(tmp_path, "docs/operations/dashboard.md", good)
    bad = '# Dashboard\n\n![The graph](../images/graph.png)\n<img src="../images/x.svg">\n'
    found = _page(tmp_path, "docs/operations/dashboard.md", bad)
    assert [f.split(": ", 1)[1] for f in found] == [
        "the image ../images/graph.png does not exist",
        "the image ../images/x.svg does not exist",
    ]


def test_internals_are_not_user_pages() -> None:
    from scripts.docs.lint import user_pages

    pages = [p.relative_to(ROOT).as_posix() for p in user_pages()]
    assert "README.md" in pages
    assert not [p for p in pages if p.startswith("docs/internals/")]
