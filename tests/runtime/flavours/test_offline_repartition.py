"""The offline repartition a session-cluster job's client runs with a local Spark of its own
(:mod:`flinkish_cli.runtime.flavours.offline_repartition`): a checkpoint it cannot
repartition is one error naming the checkpoint, Spark's reason and what to do, and no file is
written. The repartition that works is shown by the session-cluster tests
(test_session_cluster.py and test_rescale_in_place.py), where a real Connect server runs the
query at the new partitions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flinkish_cli.errors import SavepointError
from flinkish_cli.runtime.flavours.offline_repartition import repartition_offline

pytestmark = pytest.mark.spark


def test_a_directory_that_is_no_checkpoint_is_refused_with_its_path(tmp_path: Path) -> None:
    checkpoint = tmp_path / "not-a-checkpoint"
    checkpoint.mkdir()
    (checkpoint / "notes.txt").write_text("hello")
    with pytest.raises(SavepointError) as refused:
        repartition_offline(str(checkpoint), 3, {"env.java.opts.all": "-XX:+UseSerialGC"})
    message = refused.value.message
    assert f"Spark could not repartition the state in {checkpoint} to 3 partitions" in message
    assert "NO_COMMITTED_BATCH" in message  # Spark's own reason, in one line
    assert "Traceback" not in message and "py4j" not in message.lower()
    assert "readable and writable from the job's client machine" in (refused.value.hint or "")
    # no file written (Spark's check may leave an empty directory of its commit log)
    files = sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*") if p.is_file())
    assert files == ["notes.txt"] and (checkpoint / "notes.txt").read_text() == "hello"
