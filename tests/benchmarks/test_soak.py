"""The soak in its short form (the suite's; ``scripts/soak`` runs it for hours): a job with
input, periodic savepoints, ``flinkish web`` polled, two JVM kills and an upgrade, on real
Spark, ends exactly once, with the log bounded by its roll and the report well formed.
Growth figures are reported, never asserted: two minutes say nothing of an hour. It runs in
the suite's long form only (:mod:`tests.fixtures.long_form`): each of its parts has its own
test in the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness import Workspace
from benchmarks.soak import LOG_MAX, Soak, SoakParams, report
from tests.fixtures.long_form import GATE_SKIPS, LONG_FORM

pytestmark = [
    pytest.mark.spark,
    pytest.mark.soak,
    pytest.mark.skipif(not LONG_FORM, reason=GATE_SKIPS),
]


def test_a_short_soak_ends_exactly_once(tmp_path: Path) -> None:
    # JVM kills at 14 and 28 s, the upgrade at 31 s once the second kill's restart runs (the
    # loop ends at 42 s, so a third kill, due then, never comes)
    params = SoakParams(
        duration=42, input_every=2, savepoint_every="10 s", kill_every=14, upgrade_every=24,
        sample_every=10,
    )  # fmt: skip
    result = Soak(Workspace(tmp_path), params, say=lambda line: None).run()
    assert result.exactly_once.startswith("yes"), result.exactly_once
    assert result.kills == 2
    [upgrade] = result.upgrades
    assert " completed: " in upgrade or " rolled back: " in upgrade, upgrade
    assert result.polls > 100 and result.poll_errors == 0
    end = result.samples[-1]
    assert end.disk["logs"] <= (LOG_MAX + 1) * 1024 * 1024 * len(result.jobs)
    assert end.disk["savepoints"] > 0 and end.disk["checkpoint state"] > 0
    text = report(result)
    assert "| disk: total |" in text and "| memory: driver's JVM |" in text
