"""What ``flinkish web`` keeps of the registry never lies: a status rewritten behind its back
(the same size, within the same second) is read at once, a job gone is gone, an unchanged
one costs a conditional read without a body (S3: 304 Not Modified; local disk: one
``fstat``) and is not parsed again. On the local disk and on a real S3 server (moto)."""

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
        assert registry.get(JOB).state is state
        documents, unreadable = registry.listing()
        assert [d["state"] for d in documents] == [state.value] and not unreadable
    if kind == "s3":
        assert calls.count("GetObject") == 6 and "HeadObject" not in calls, calls

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
