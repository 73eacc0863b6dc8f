"""The suite's own schedule (tests/conftest.py): the order in which the workers take the
groups of tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import conftest


@pytest.fixture
def durations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "durations.json"
    monkeypatch.setattr(conftest, "DURATIONS", path)
    return path


def test_spark_groups_longest_first_light_ones_among_them_short_ones_last(
    durations: Path,
) -> None:
    durations.write_text(
        json.dumps(
            {"h1": 300, "h2": 200, "h3": 100, "h4": 100, "l1": 20, "l2": 10, "f1": 1, "f2": 2}
        )
    )
    order = conftest.schedule(
        {"h1", "h2", "h3", "h4", "l1", "l2", "f1", "f2"}, {"h1", "h2", "h3", "h4"}
    )
    assert [g for g in order if g.startswith("h")] == ["h1", "h2", "h3", "h4"]
    assert order[-2:] == ["f2", "f1"]  # the short ones fill the workers' ends
    # each light group beside the heavy ones: after a third, then two thirds, of their time
    assert order[:6] == ["h1", "l1", "h2", "l2", "h3", "h4"]


def test_a_group_never_measured_counts_by_its_kind(durations: Path) -> None:
    durations.write_text(json.dumps({"h1": 10, "l1": 20}))
    order = conftest.schedule({"h1", "new-spark", "l1", "new-light"}, {"h1", "new-spark"})
    assert order == ["new-spark", "l1", "h1", "new-light"]  # 30 s, and a second: a filler


def test_without_figures_the_kinds_alone_order(durations: Path) -> None:
    assert conftest.schedule({"b", "a", "x"}, {"a", "b"}) == ["a", "b", "x"]
