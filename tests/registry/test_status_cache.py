"""What ``flinkish web`` keeps of the registry never lies: a status rewritten behind its back
(the same size, within the same second) is read at once, a job gone is gone, an unchanged
one costs a conditional read without a body (S3: 304 Not Modified; local disk: one
``fstat``) and is not parsed again; on S3 a job list of unchanged jobs costs two listings
(the status index) whatever the number of jobs, and no status written, half-written or
written around the index is ever hidden. On the local disk and on a real S3 server (moto)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from flinkish_cli.registry.status import JobState, JobStatus, QueryStatus
from flinkish_cli.registry.store import JobRegistry, RegistryIdentity, StatusCache
from flinkish_cli.storage import join
from tests.fixtures.s3server import S3Server

JOB = "3f9c12ab45cd67ef89013f9c12ab45cd"


def _status(state: JobState) -> JobStatus:
    status = JobStatus(job_id=JOB, name="orders", state=state, pid=1, start_time=1.0)
    status.queries["counts"] = QueryStatus(name="counts", checkpoint="/cp/counts")
    return status


def _registry(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> JobRegistry:
    if kind == "local":
        return JobRegistry(str(tmp_path / "cp"), _open(str(tmp_path / "cp")), StatusCache())
    server: S3Server = request.getfixturevalue("s3_server")
    root = join(request.getfixturevalue("s3_bucket"), "cp")
    return JobRegistry(root, _open(root, server.settings()), StatusCache())


def _open(root: str, settings: Any = None) -> Any:
    from flinkish_cli.storage import open_storage

    return open_storage(root, settings)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_a_kept_status_is_revalidated_on_every_read(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    registry = _registry(kind, tmp_path, request)
    writer = JobRegistry(registry.root, registry.storage)  # another process: no cache
    writer.write(_status(JobState.RUNNING))
    first = registry.get(JOB)
    assert first.state is JobState.RUNNING
    assert registry.get(JOB) is first  # unchanged: not read or parsed again

    calls: list[str] = []
    if kind == "s3":

        def seen(model: Any, **_: Any) -> None:
            calls.append(model.name)

        registry.storage.client.meta.events.register("before-call.s3", seen)  # type: ignore[attr-defined]
    for state in (JobState.FAILED, JobState.CANCELED, JobState.RUNNING):  # all one size
        writer.write(_status(state))
        calls.clear()
        assert registry.get(JOB).state is state
        assert calls == ([] if kind == "local" else ["GetObject"])
        documents, unreadable = registry.listing()
        assert [d["state"] for d in documents] == [state.value] and not unreadable
        # S3: the job directories and the status index, one listing each; nothing read
        assert calls == ([] if kind == "local" else ["GetObject", *["ListObjectsV2"] * 2])

    if kind == "local":
        shutil.rmtree(tmp_path / "cp" / JOB)
    else:
        writer.storage.delete_tree(join(registry.root, JOB))
    assert registry.find(JOB) is None
    assert registry.listing() == ([], [])


def test_the_job_list_leaves_out_the_recent_progress(tmp_path: Path) -> None:
    from flinkish_cli.registry.status import Progress

    registry = JobRegistry.open(str(tmp_path / "cp"))
    status = _status(JobState.RUNNING)
    status.queries["counts"].record(
        Progress(batch_id=3, timestamp="2025-01-01T00:00:00.000Z", input_rows=5)
    )
    status.queries["counts"].last_committed_batch = 3
    registry.write(status)
    (document,), _ = registry.listing()
    assert "recent" not in document["queries"]["counts"]
    listed = JobStatus.from_dict(document)
    assert listed.summary(5.0) == registry.get(JOB).summary(5.0)


def test_the_registry_says_where_it_is_without_touching_it(tmp_path: Path) -> None:
    link = tmp_path / "link"
    (tmp_path / "real").mkdir()
    link.symlink_to(tmp_path / "real")
    by_link = JobRegistry.open(str(link / "cp")).identity()
    assert by_link == JobRegistry.open(str(tmp_path / "real" / "cp/")).identity()
    assert by_link.location == f"file://{tmp_path}/real/cp"
    assert by_link == RegistryIdentity.of(by_link.location) and len(by_link.id) == 16
    from flinkish_cli.storage import StorageSettings

    settings = StorageSettings(
        s3_endpoint="http://S3.example:9000/", s3_secret_key="x", s3_access_key="y"
    )
    s3 = JobRegistry.open("s3a://bucket/cp", settings).identity()
    assert s3.location == "s3://bucket/cp at http://s3.example:9000"
    assert JobRegistry.open("s3://bucket/cp/", settings).identity() == s3
    assert "x" not in s3.location.replace("example", "")


# -- the status index (S3) ------------------------------------------------------------------------
def _s3_registry(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[JobRegistry, list[str]]:
    """A registry on the S3 server that keeps what it read (as flinkish web's does), and the
    S3 operations it sends from now on."""
    registry = _registry("s3", tmp_path, request)
    calls: list[str] = []
    registry.storage.client.meta.events.register(  # type: ignore[attr-defined]
        "before-call.s3", lambda model, **_: calls.append(model.name)
    )
    return registry, calls


def _job(number: int, state: JobState = JobState.RUNNING) -> JobStatus:
    status = _status(state)
    status.job_id = f"{number:032x}"
    status.start_time = float(number)
    return status


def test_a_list_of_unchanged_jobs_on_s3_is_two_listings_whatever_their_number(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    registry, calls = _s3_registry(request, tmp_path)
    writer = JobRegistry(registry.root, registry.storage)  # the jobs' drivers
    for number in range(1, 21):
        writer.write(_job(number))
    calls.clear()
    documents, _ = registry.listing()
    assert len(documents) == 20 and calls.count("GetObject") == 20  # the first: all read
    for _ in range(2):
        calls.clear()
        documents, _ = registry.listing()
        assert len(documents) == 20 and calls == ["ListObjectsV2"] * 2
    writer.write(_job(7, JobState.FAILED))
    calls.clear()
    statuses, unreadable = registry.scan()
    assert calls == ["ListObjectsV2", "ListObjectsV2", "GetObject"]  # only the one changed
    assert {s.job_id: s.state for s in statuses}[f"{7:032x}"] is JobState.FAILED
    assert len(statuses) == 20 and not unreadable


def test_a_write_cut_between_its_index_entry_and_its_status_is_never_hidden(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A writer killed after the index entry and before the status: the listing keeps
    showing the status file as it is (reading it each time), then the next whole write."""
    registry, calls = _s3_registry(request, tmp_path)
    writer = JobRegistry(registry.root, registry.storage)
    writer.write(_status(JobState.RUNNING))
    assert [d["state"] for d in registry.listing()[0]] == ["RUNNING"]

    class Killed(Exception):
        pass

    def die_before_the_status(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith("/status.json"):
            raise Killed

    events = registry.storage.client.meta.events  # type: ignore[attr-defined]
    events.register("before-parameter-build.s3.PutObject", die_before_the_status)
    with pytest.raises(Killed):
        writer.write(_status(JobState.FAILED))
    events.unregister("before-parameter-build.s3.PutObject", die_before_the_status)
    for _ in range(2):
        calls.clear()
        assert [d["state"] for d in registry.listing()[0]] == ["RUNNING"]
        assert calls.count("GetObject") == 1  # the index disagrees: the file is asked
    writer.write(_status(JobState.CANCELED))
    assert [d["state"] for d in registry.listing()[0]] == ["CANCELED"]


def test_statuses_written_without_the_index_are_read_on_every_listing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A registry of a flinkish older than the index: no entry, so every listing asks the
    status file (conditionally), and a rewrite is seen at once."""
    registry, calls = _s3_registry(request, tmp_path)
    storage = registry.storage
    for state in (JobState.RUNNING, JobState.FINISHED):
        storage.write_text(registry.status_path(JOB), _status(state).to_json())
        calls.clear()
        assert [d["state"] for d in registry.listing()[0]] == [state.value]
        assert calls == ["ListObjectsV2", "ListObjectsV2", "GetObject"]
    assert storage.list(registry.status_index_dir()) == []


def test_a_configurations_registry_is_named_without_opening_its_storage(tmp_path: Path) -> None:
    """What ``-m host:port`` compares with the endpoint's registry: the same identity as the
    opened registry's, from the configuration alone (no storage backend imported)."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.registry.store import registry_for, registry_identity

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for flat in (
        {"execution.checkpointing.dir": str(tmp_path / "link" / "cp")},
        {"execution.checkpointing.dir": f"file://{tmp_path}/real/cp/"},
        {
            "execution.checkpointing.dir": "s3a://bucket/cp/",
            "s3.endpoint": "http://user:pw@S3.example:9000/",
            "s3.access-key": "AKIAEXAMPLE",
            "s3.secret-key": "a-secret",
        },
        {"execution.checkpointing.dir": "s3://bucket/cp", "s3.endpoint": "s3.example.com"},
        {"execution.checkpointing.dir": "s3://bucket"},
    ):
        config = Configuration.from_flat(flat)
        identity = registry_identity(config)
        assert identity == registry_for(config).identity(), flat
        assert "a-secret" not in identity.location and ":pw@" not in identity.location
