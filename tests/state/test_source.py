"""What ``flinkish state`` reads, found and checked before Spark starts (no Spark here).

A checkpoint is read from a copy of the files of its last committed batch, made in a
temporary directory and removed on close; the checkpoint itself is left as it was. Anything
that is not a savepoint or a checkpoint, a query or an operator that is not there, is one
:class:`StateError` naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flinkish_cli.config import Configuration
from flinkish_cli.errors import StateError, StateNotFoundError
from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.state.source import open_source
from tests.savepoints.checkpoints import fake_checkpoint

JOB = "c3" * 16


def _config(tmp_path: Path) -> Configuration:
    return Configuration.from_flat({"execution.checkpointing.dir": str(tmp_path / "registry")})


def _tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file: size, modification time and inode (a copy would change none of them)."""
    found = {}
    for top, _dirs, names in os.walk(root):
        for name in names:
            stat = os.stat(os.path.join(top, name))
            found[os.path.relpath(os.path.join(top, name), root)] = (
                stat.st_size,
                stat.st_mtime_ns,
                stat.st_ino,
            )
    return found


def test_a_retained_checkpoint_is_read_from_a_copy_of_its_last_committed_batch(
    tmp_path: Path,
) -> None:
    job = tmp_path / "registry" / JOB
    fake_checkpoint(job / "counts", committed=2)
    before = _tree(job)
    with open_source(str(job), _config(tmp_path)) as source:
        assert (source.kind, source.job_id) == ("checkpoint", JOB)
        (query,) = source.queries
        assert (query.name, query.batch, query.location) == ("counts", 2, str(job / "counts"))
        copy = Path(query.read_path)
        assert copy.is_relative_to(source.temp_dir) and copy.is_dir()
        assert (copy / "commits" / "2").exists() and not (copy / "offsets" / ".3.tmp").exists()
        assert not (copy / "state" / "0" / "0" / "4.zip").exists()  # batch 3's, not committed
        assert [o.operator_id for o in query.operators] == [0]
        assert query.state_bytes(0) == sum(
            size for path, size in query.state_files.items() if path.startswith("state/0/")
        )
        temp = source.temp_dir
    assert not os.path.exists(temp)
    assert _tree(job) == before


def test_one_querys_checkpoint_and_a_job_by_its_id(tmp_path: Path) -> None:
    config = _config(tmp_path)
    checkpoint = fake_checkpoint(tmp_path / "elsewhere" / "counts", committed=1)
    with open_source(str(checkpoint), config) as source:
        assert [(q.name, q.batch) for q in source.queries] == [("counts", 1)]
    registry = JobRegistry.open(str(tmp_path / "registry"))
    status = JobStatus(job_id=JOB, name="j", state=JobState.RUNNING, start_time=1, pid=1)
    status.queries["counts"] = QueryStatus(name="counts", checkpoint=str(checkpoint))
    registry.write(status)
    with open_source(JOB.upper(), config) as source:  # where its status says the query is
        assert (source.kind, source.job_id, source.path) == ("job", JOB, f"job {JOB}")
        assert [q.location for q in source.queries] == [str(checkpoint)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "nowhere", "does not exist"),
        (lambda p: _file(p / "file.txt"), "is neither a savepoint nor a checkpoint"),
        (
            lambda p: _file(p / "dir" / "notes.txt").parent,
            "is neither a savepoint nor a checkpoint",
        ),
        (lambda p: _file(p / "sp" / "_metadata", "{}").parent, "not a flinkish savepoint manifest"),
        (lambda p: "", "No savepoint, checkpoint or JobID given"),
        (lambda p: "ab" * 16, f"Job {'ab' * 16} not found"),
    ],
)
def test_what_is_not_state_is_refused_in_one_message(tmp_path: Path, make, message) -> None:
    with pytest.raises(StateError) as refused:
        open_source(str(make(tmp_path)), _config(tmp_path))
    assert message in refused.value.message
    assert refused.value.hint


def test_an_interrupted_savepoint_is_refused_not_read_as_a_checkpoint(tmp_path: Path) -> None:
    """A savepoint directory without its manifest (its writer was cut off) holds query
    directories that look like checkpoints: it is refused as incomplete all the same."""
    partial = tmp_path / "savepoints" / "savepoint-c3c3c3-0123456789ab"
    fake_checkpoint(partial / "counts", committed=1)
    with pytest.raises(StateError) as refused:
        open_source(str(partial), _config(tmp_path))
    assert refused.value.message == f"{partial} is not a complete savepoint: it has no _metadata."


def test_a_savepoint_on_hdfs_is_read_through_webhdfs(tmp_path: Path) -> None:
    """hdfs:// is reached through the NameNode's WebHDFS (no Hadoop client here): a NameNode
    that does not answer is one message naming its address, before Spark starts."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Configuration.from_flat(
        {
            "execution.checkpointing.dir": str(tmp_path / "registry"),
            "flink.hadoop.dfs.namenode.http-address": f"127.0.0.1:{port}",
        }
    )
    path = "hdfs://127.0.0.1:8020/savepoints/savepoint-c3c3c3-0123456789ab"
    with pytest.raises(StateError) as refused:
        open_source(path, config)
    assert refused.value.message.startswith(
        f"Cannot reach the NameNode's WebHDFS at http://127.0.0.1:{port} (to read {path})"
    ), refused.value.message
    assert "flink.hadoop.dfs.namenode.http-address" in str(refused.value.hint)


def _file(path: Path, text: str = "not state") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_damaged_checkpoint_file_is_refused_and_the_copy_removed(tmp_path: Path) -> None:
    job = tmp_path / "registry" / JOB
    fake_checkpoint(job / "counts", committed=1)
    victim = job / "counts" / "state" / "0" / "1" / "2.zip"
    victim.write_text("flipped" + victim.read_text()[7:])
    temps = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("flinkish-state-*"))
    with pytest.raises(StateError) as refused:
        open_source(str(job), _config(tmp_path))
    assert refused.value.message.startswith(f"The checkpoint of query 'counts' ({job / 'counts'})")
    assert "state/0/1/2.zip does not match its Hadoop checksum" in refused.value.message
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("flinkish-state-*")) == temps


def test_queries_and_operators_are_chosen_or_refused_by_name(tmp_path: Path) -> None:
    job = tmp_path / "registry" / JOB
    fake_checkpoint(job / "counts", committed=1)
    fake_checkpoint(job / "sessions", committed=1)
    with open_source(str(job), _config(tmp_path)) as source:
        assert [(q.name, o.operator_id) for q, o in source.select(None, None)] == [
            ("counts", 0),
            ("sessions", 0),
        ]
        assert [q.name for q, _ in source.select("sessions", 0)] == ["sessions"]
        with pytest.raises(StateNotFoundError, match=r"has no query 'nope' \(its queries: "):
            source.select("nope", None)
        with pytest.raises(StateNotFoundError, match=r"has no stateful operator 3 \(its"):
            source.select("counts", 3)
        with pytest.raises(StateError, match=r"Several queries .* have an operator 0"):
            source.select(None, 0)


def test_the_state_package_needs_no_spark_to_find_state(tmp_path: Path) -> None:
    """Finding and checking what is named imports no pyspark (the CLI refuses bad input
    before any JVM)."""
    import subprocess
    import sys

    checkpoint = str(fake_checkpoint(tmp_path / "q", 1))
    code = (
        "import sys; from flinkish_cli.config import Configuration;"
        "from flinkish_cli.state.source import open_source;"
        f"open_source({checkpoint!r}, Configuration.from_flat({{}})).close();"
        "import flinkish_cli.state.model, flinkish_cli.state.api, flinkish_cli.state.reader;"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')];"
        "print(json.dumps(sorted(loaded)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", "import json;" + code], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []
