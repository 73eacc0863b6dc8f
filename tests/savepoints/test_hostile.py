"""Hostile or damaged savepoints, without Spark: links, foreign ``_metadata``, unsafe names,
damaged checkpoint files, durability before the manifest, and claim of a live job's source.

Every reader is checked: restore (``open_source``, what ``run -s`` and the driver use),
``savepoint info`` (``JobClient.savepoint_info``) and dispose; each refusal is one clear
:class:`~flinkish_cli.errors.FlinkishError` naming the path, never an internal error.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.config import Configuration
from flinkish_cli.errors import FlinkishError, SavepointError
from flinkish_cli.registry.status import JobState, JobStatus
from flinkish_cli.registry.store import JobRegistry
from flinkish_cli.savepoints.create import DamagedCheckpointError, take_savepoint
from flinkish_cli.savepoints.dispose import dispose
from flinkish_cli.savepoints.manifest import FLINK_MAGIC, Manifest
from flinkish_cli.savepoints.restore import open_source, plan_restore, same_location
from flinkish_cli.storage import LocalStorage, open_storage
from tests.savepoints.checkpoints import fake_checkpoint, hadoop_crc

JOB = "ab" * 16
OTHER = "cd" * 16


def _config(tmp_path: Path, **extra: str) -> Configuration:
    flat = {
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "parallelism.default": "2",
        "state.backend.type": "rocksdb",
        **extra,
    }
    return Configuration.from_flat(flat)


def _savepoint(tmp_path: Path, committed: int = 1) -> Path:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=committed)
    storage = LocalStorage(str(tmp_path))
    path = take_savepoint(
        storage, {"q": str(checkpoint)}, storage, str(tmp_path / "sp"), JOB, "job", "4.3.0"
    )
    return Path(path)


def _readers(tmp_path: Path) -> dict[str, Any]:
    """Each way a savepoint is read: restore, info and dispose."""
    storage = LocalStorage(str(tmp_path))
    config = _config(tmp_path)
    return {
        "restore": lambda p: open_source(storage, str(p)),
        "info": lambda p: JobClient(config).savepoint_info(str(p), rows=False),
        "dispose": lambda p: dispose(storage, str(p)),
    }


READERS = ["restore", "info", "dispose"]


# -- symbolic links --------------------------------------------------------------------------
@pytest.mark.parametrize("reader", READERS)
def test_a_savepoint_with_a_link_is_refused_by_every_reader(tmp_path: Path, reader: str) -> None:
    path = _savepoint(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    (path / "q" / "state" / "0" / "0" / "evil").symlink_to(outside)
    with pytest.raises(SavepointError, match=r"contains q/state/0/0/evil \(symbolic link\)"):
        _readers(tmp_path)[reader](path)
    assert (outside / "precious").read_text() == "keep me"
    assert (path / "_metadata").exists(), "nothing of the savepoint was deleted either"


def test_a_linked_manifest_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text((path / "_metadata").read_text())  # even a valid-looking one
    (path / "_metadata").unlink()
    (path / "_metadata").symlink_to(secret)
    for reader in _readers(tmp_path).values():
        with pytest.raises(SavepointError, match=r"contains _metadata \(symbolic link\)"):
            reader(path)
    assert secret.exists()


def test_dispose_refuses_a_savepoint_given_through_a_link(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    alias = tmp_path / "links" / path.name
    alias.parent.mkdir()
    alias.symlink_to(path)
    with pytest.raises(SavepointError, match="is a symbolic link, not a savepoint directory"):
        dispose(LocalStorage(str(tmp_path)), str(alias))
    assert (path / "_metadata").exists()
    assert open_source(LocalStorage(str(tmp_path)), str(alias)).kind == "savepoint"  # reading is


def test_taking_a_savepoint_never_copies_through_a_link(tmp_path: Path) -> None:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    secret = tmp_path / "secret"
    secret.write_text("TOP SECRET")
    (checkpoint / "state" / "0" / "0" / "3.zip").unlink()
    (checkpoint / "state" / "0" / "0" / "3.zip").symlink_to(secret)
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(SavepointError, match=r"contains state/0/0/3\.zip \(symbolic link\)"):
        take_savepoint(
            storage, {"q": str(checkpoint)}, storage, str(tmp_path / "sp"), JOB, "job", "4"
        )
    assert not (tmp_path / "sp").exists() or not any((tmp_path / "sp").iterdir())


def test_a_retained_checkpoint_with_a_link_is_refused(tmp_path: Path) -> None:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    (checkpoint / "commits" / "9").symlink_to("/etc/hostname")
    with pytest.raises(SavepointError, match=r"contains q/commits/9 \(symbolic link\)"):
        open_source(LocalStorage(str(tmp_path)), str(tmp_path / "checkpoints" / JOB))


# -- durability ------------------------------------------------------------------------------
def test_savepoint_data_is_synced_before_the_manifest_which_is_atomic_and_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        events.append(("replace", str(dst)))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    storage = LocalStorage(str(tmp_path))
    path = take_savepoint(
        storage, {"q": str(checkpoint)}, storage, str(tmp_path / "sp"), JOB, "job", "4.3.0"
    )
    metadata = f"{path}/_metadata"
    first_manifest_event = next(i for i, (_, p) in enumerate(events) if "_metadata." in p)
    before = {p for _, p in events[:first_manifest_event]}
    on_disk = {str(p) for p in Path(path).rglob("*") if p.name != "_metadata"}
    assert on_disk and on_disk <= before, "every file and directory is synced first"
    assert {path, str(tmp_path / "sp")} <= before, "the savepoint's entries too"
    rest = events[first_manifest_event:]
    assert rest[0][0] == "fsync" and "/._metadata." in rest[0][1], "the temporary file synced"
    assert rest[1] == ("replace", metadata), "then renamed into place"
    assert ("fsync", path) in rest[2:], "then the rename made durable"


# -- names read back from manifests ----------------------------------------------------------
def _manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / "_metadata").read_text())


def _rewrite(path: Path, data: dict[str, Any]) -> None:
    (path / "_metadata").write_text(json.dumps(data))


@pytest.mark.parametrize("name", ["../../etc", "/etc", "a/b", "..", ".x", "", 7, None])
@pytest.mark.parametrize("reader", READERS)
def test_query_names_in_a_manifest_are_validated_first(
    tmp_path: Path, reader: str, name: object
) -> None:
    path = _savepoint(tmp_path)
    data = _manifest(path)
    data["queries"][0]["name"] = name
    data["files"] = [dict(f, path=f"{name}/{f['path'].split('/', 1)[1]}") for f in data["files"]]
    _rewrite(path, data)
    with pytest.raises(SavepointError, match=r"names a query .*cannot be a checkpoint directory"):
        _readers(tmp_path)[reader](path)
    assert (path / "_metadata").exists()


@pytest.mark.parametrize("entry", ["q/../../../etc/passwd", "/etc/passwd", "q", "other/x", "q//x"])
def test_a_manifest_file_outside_its_query_is_refused(tmp_path: Path, entry: str) -> None:
    path = _savepoint(tmp_path)
    data = _manifest(path)
    data["files"][0]["path"] = entry
    _rewrite(path, data)
    with pytest.raises(SavepointError, match="not inside the directory of one of its queries"):
        open_source(LocalStorage(str(tmp_path)), str(path))


# -- _metadata that is not a flinkish manifest -----------------------------------------------
def _flink_metadata() -> bytes:
    """The start of a Flink 1.x/2.x savepoint's _metadata: magic number, version 4, ..."""
    return FLINK_MAGIC + (4).to_bytes(4, "big") + bytes(range(64))


FOREIGN: dict[str, tuple[Any, str]] = {
    "flink": (_flink_metadata(), "This is a Flink savepoint; flinkish can only restore"),
    "random": (random.Random(7).randbytes(4096), "binary data"),
    "empty": (b"", "is empty"),
    "blank": (b"  \n", "is empty"),
    "nul": (b'{"a": "\x00"}', "binary data"),
    "text": (b"savepoint, trust me", "text that is not JSON"),
    "list": (b"[1, 2]", "a JSON list"),
    "string": (b'"hello"', "a JSON str"),
    "other-json": (b'{"checkpointId": 12, "operators": []}', "a JSON document of another kind"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "not a flinkish savepoint manifest"),
    "version": (b'{"format_version": "1"}', "format version '1'"),
    "no-queries": (b'{"format_version": 1, "kind": "savepoint"}', "has no 'job_id'"),
    "bad-types": ("queries-not-list", "'queries' of the manifest is"),
    "bad-batch": ("batch-is-string", "'last_committed_batch' of query 'q' is"),
    "bad-file": ("size-negative", "invalid size or checksum"),
    "bad-job": ("job-id", "is not a JobID"),
}


def _foreign(path: Path, kind: str) -> None:
    content, _ = FOREIGN[kind]
    if isinstance(content, bytes):
        (path / "_metadata").write_bytes(content)
        return
    data = _manifest(path)
    if content == "queries-not-list":
        data["queries"] = {"q": {}}
    elif content == "batch-is-string":
        data["queries"][0]["last_committed_batch"] = "3"
    elif content == "size-negative":
        data["files"][0]["size"] = -1
    elif content == "job-id":
        data["job_id"] = "../x"
    _rewrite(path, data)


@pytest.mark.parametrize("kind", sorted(FOREIGN))
@pytest.mark.parametrize("reader", READERS)
def test_a_metadata_that_is_not_a_flinkish_manifest_is_refused_clearly(
    tmp_path: Path, reader: str, kind: str
) -> None:
    path = _savepoint(tmp_path)
    _foreign(path, kind)
    with pytest.raises(SavepointError) as caught:
        _readers(tmp_path)[reader](path)
    message = str(caught.value)
    assert FOREIGN[kind][1] in message
    assert f"{path}/_metadata" in message or "manifest" in message
    assert (path / "_metadata").exists(), "nothing was deleted"


@pytest.mark.parametrize("reader", READERS)
def test_a_huge_or_directory_metadata_is_refused_without_reading_it(
    tmp_path: Path, reader: str
) -> None:
    path = _savepoint(tmp_path)
    metadata = path / "_metadata"
    metadata.unlink()
    with open(metadata, "wb") as out:
        out.truncate(300 * 1024 * 1024)  # sparse: no disk used
    with pytest.raises(SavepointError, match="more than any flinkish manifest"):
        _readers(tmp_path)[reader](path)
    metadata.unlink()
    metadata.mkdir()
    with pytest.raises(SavepointError, match=r"_metadata is a directory, not a flinkish"):
        _readers(tmp_path)[reader](path)


def test_a_query_checkpoint_given_as_a_savepoint_is_named_so(tmp_path: Path) -> None:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    with pytest.raises(SavepointError, match="is the Spark checkpoint of one query"):
        open_source(LocalStorage(str(tmp_path)), str(checkpoint))


# -- damaged checkpoint files ----------------------------------------------------------------
def _flip(path: Path, at: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


DAMAGE = {
    "state-flipped": ("state/0/1/2.zip", "flip", r"state/0/1/2\.zip does not match its Hadoop"),
    "state-truncated": ("state/0/1/2.zip", "truncate", r"2\.zip is shorter than its Hadoop"),
    "offsets-flipped": ("offsets/1", "flip", "offsets/1 is not a Spark offset log entry"),
    "offsets-truncated": ("offsets/1", "truncate", "offsets/1 is not a Spark offset log entry"),
    "commit-flipped": ("commits/1", "flip", "commits/1 is not a Spark commit log entry"),
    "metadata-truncated": ("metadata", "truncate", "metadata is not a Spark checkpoint"),
    "crc-damaged": ("state/0/0/.1.zip.crc", "flip", r"\.1\.zip\.crc is not a valid Hadoop"),
}


def _damage(checkpoint: Path, case: str) -> None:
    name, how, _ = DAMAGE[case]
    target = checkpoint / name
    if how == "flip":
        _flip(target)
    else:
        target.write_bytes(target.read_bytes()[: max(1, target.stat().st_size // 3)])


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_checkpoint_file_is_refused_at_savepoint_and_restore_time(
    tmp_path: Path, case: str
) -> None:
    checkpoint = fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    _damage(checkpoint, case)
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(DamagedCheckpointError, match=DAMAGE[case][2]) as taken:
        take_savepoint(
            storage, {"q": str(checkpoint)}, storage, str(tmp_path / "sp"), JOB, "job", "4"
        )
    assert "No savepoint was written" in str(taken.value) or "damaged" in str(taken.value)
    assert not (tmp_path / "sp").exists() or not any((tmp_path / "sp").iterdir())
    with pytest.raises(DamagedCheckpointError, match=DAMAGE[case][2]) as restored:
        open_source(storage, str(tmp_path / "checkpoints" / JOB))
    assert "Nothing was started" in str(restored.value)


def test_a_damaged_savepoint_file_is_refused_at_restore(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    _flip(path / "q" / "state" / "0" / "1" / "2.zip")
    with pytest.raises(SavepointError, match=r"q/state/0/1/2\.zip does not match its checksum"):
        open_source(LocalStorage(str(tmp_path)), str(path))


def test_hadoop_checksums_of_every_chunk_size_are_checked(tmp_path: Path) -> None:
    from flinkish_cli.savepoints.integrity import DamagedFileError, digest

    storage = LocalStorage(str(tmp_path))
    for size in (0, 1, 511, 512, 513, 5000):
        data = random.Random(size).randbytes(size)
        (tmp_path / "f").write_bytes(data)
        for per_sum in (512, 100):
            found = digest(storage, str(tmp_path / "f"), "f", hadoop_crc(data, per_sum))
            assert found.size == size
        if size:
            longer = hadoop_crc(data + b"x")
            with pytest.raises(DamagedFileError):
                digest(storage, str(tmp_path / "f"), "f", longer)


# -- claim mode ------------------------------------------------------------------------------
def _job(tmp_path: Path, job_id: str, state: JobState, **fields: Any) -> None:
    registry = JobRegistry.open(str(tmp_path / "checkpoints"))
    status = JobStatus(job_id=job_id, name="counts", state=state, pid=1)
    status.heartbeat = time.time()
    for key, value in fields.items():
        setattr(status, key, value)
    registry.write(status)


def _run(source: Path | str, claim: str = "claim") -> Any:
    return SimpleNamespace(
        from_savepoint=str(source), allow_non_restored_state=False, claim_mode=claim
    )


@pytest.mark.parametrize("state", [JobState.RUNNING, JobState.RESTARTING, JobState.CREATED])
def test_claim_refuses_the_checkpoint_of_a_live_job(tmp_path: Path, state: JobState) -> None:
    fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    _job(tmp_path, JOB, state)
    source = tmp_path / "checkpoints" / JOB
    with pytest.raises(SavepointError, match=f"belongs to job {JOB} .*which is {state.value}"):
        plan_restore(_run(source), _config(tmp_path))
    assert plan_restore(_run(source, "no_claim"), _config(tmp_path)).source == str(source)


@pytest.mark.parametrize("state", [JobState.FINISHED, JobState.CANCELED, JobState.FAILED])
def test_claim_takes_the_checkpoint_of_an_ended_job(tmp_path: Path, state: JobState) -> None:
    fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    _job(tmp_path, JOB, state)
    plan = plan_restore(_run(tmp_path / "checkpoints" / JOB), _config(tmp_path))
    assert plan.claim_mode == "claim"


def test_claim_takes_the_checkpoint_of_a_job_whose_driver_is_gone(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    _job(tmp_path, JOB, JobState.RUNNING, heartbeat=time.time() - 3600, heartbeat_timeout=5)
    assert plan_restore(_run(tmp_path / "checkpoints" / JOB), _config(tmp_path))


def test_claim_refuses_a_checkpoint_whose_job_status_is_unreadable(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path / "checkpoints" / JOB / "q", committed=1)
    status = tmp_path / "checkpoints" / JOB / "_flinkish" / "status.json"
    status.parent.mkdir(parents=True)
    status.write_text("{damaged")
    with pytest.raises(SavepointError, match=r"the state of its job .* is unknown"):
        plan_restore(_run(tmp_path / "checkpoints" / JOB), _config(tmp_path))


def test_claim_refuses_a_savepoint_a_live_job_was_restored_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _savepoint(tmp_path)
    _job(tmp_path, JOB, JobState.RUNNING)  # the job that took it does not own it
    assert plan_restore(_run(path), _config(tmp_path)).claim_mode == "claim"
    _job(tmp_path, OTHER, JobState.RUNNING, restored_from=f"file://{path}/")
    with pytest.raises(SavepointError, match=f"job {OTHER} .*a job restored from it"):
        plan_restore(_run(path), _config(tmp_path))
    monkeypatch.chdir(path.parent)  # spelled relatively, it is the same savepoint
    with pytest.raises(SavepointError, match=f"job {OTHER}"):
        plan_restore(_run(path.name), _config(tmp_path))
    _job(tmp_path, OTHER, JobState.FINISHED, restored_from=str(path))
    assert plan_restore(_run(path.name), _config(tmp_path)).source == str(path)


def test_same_location() -> None:
    assert same_location("s3a://b/sp/", "s3://b/sp")
    assert not same_location("s3://b/sp1", "s3://b/sp")
    assert not same_location(None, "s3://b/sp")


def test_every_refusal_is_a_flinkish_error_not_an_internal_one(tmp_path: Path) -> None:
    """A fuzz of damaged manifests: whatever the bytes, a FlinkishError or a manifest."""
    path = _savepoint(tmp_path)
    original = (path / "_metadata").read_bytes()
    rng = random.Random(11)
    storage = LocalStorage(str(tmp_path))
    outcomes = {"refused": 0, "read": 0}
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        (path / "_metadata").write_bytes(bytes(data))
        try:  # anything but a FlinkishError fails the test
            open_source(storage, str(path))
            outcomes["read"] += 1
        except FlinkishError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 200, outcomes


def test_manifest_round_trip_is_unchanged(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    text = (path / "_metadata").read_text()
    manifest = Manifest.from_json(text, "x")
    assert json.loads(manifest.to_json()) == json.loads(text)
    assert open_storage(str(path)).exists(str(path / "_metadata"))


def test_the_cli_refuses_a_flink_savepoint_in_one_message(flinkish_env: Any) -> None:
    """``savepoint info``, ``savepoint -d`` and ``run -s`` on a Flink savepoint: exit 1, one
    message naming the path and what flinkish expected, no traceback, nothing touched."""
    from tests.fixtures.flinkish_env import JOBS

    flink = flinkish_env.root / "flink-savepoints" / "savepoint-3f9c12-8e1d0c4b7a21"
    flink.mkdir(parents=True)
    (flink / "_metadata").write_bytes(_flink_metadata())
    (flink / "a1b2c3d4-state").write_bytes(b"\x00" * 100)
    script = str(JOBS / "counts" / "counts_job.py")
    for args in (
        ["savepoint", "info", "--no-rows", str(flink)],
        ["savepoint", "-d", str(flink)],
        ["run", "-d", "-s", str(flink), script, "--input", "in", "--output", "out"],
    ):
        result = flinkish_env.run(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert f"{flink}/_metadata is the metadata of an Apache Flink savepoint" in result.stderr
        assert "This is a Flink savepoint; flinkish can only restore savepoints it took" in (
            result.stderr
        )
        assert "Traceback" not in result.stderr
    assert sorted(p.name for p in flink.iterdir()) == ["_metadata", "a1b2c3d4-state"]
    assert not flinkish_env.checkpoints.exists() or not any(flinkish_env.checkpoints.iterdir())
