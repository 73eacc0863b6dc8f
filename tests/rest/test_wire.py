"""The parts of the REST transport that need no server: an error travels whole (class,
message, hint, fields) in one ASCII header line, and ``-m`` is read as Flink reads it."""

from __future__ import annotations

import pytest

from flinkish_cli.client.connect import configured_endpoint, endpoint_of
from flinkish_cli.config import Configuration
from flinkish_cli.errors import FlinkishError, JobError, SavepointError, UsageError
from flinkish_cli.registry.store import UnreadableStatusError
from flinkish_cli.rest.wire import error_from_header, error_header
from flinkish_cli.storage import StorageNotFoundError


@pytest.mark.parametrize(
    "error",
    [
        JobError("Cannot cancel job x: it is FINISHED.", "Only a running job accepts 'cancel'."),
        SavepointError("/sp/ünï\ncode is not a savepoint."),
        UsageError("No savepoint directory given."),
        UnreadableStatusError("ab" * 16, "/cp/ab/_flinkish/status.json", "it is not valid JSON"),
        StorageNotFoundError("/sp/x", "Check the path."),
    ],
    ids=lambda e: type(e).__name__,
)
def test_an_error_travels_whole(error: FlinkishError) -> None:
    header = error_header(error)
    assert header.isascii() and "\n" not in header
    back = error_from_header(header)
    assert type(back) is type(error)
    assert (back.message, back.hint, back.exit_code) == (error.message, error.hint, error.exit_code)
    assert str(back) == str(error)
    if isinstance(error, UnreadableStatusError):
        assert (back.job_id, back.path, back.reason) == (error.job_id, error.path, error.reason)  # type: ignore[attr-defined]
    if isinstance(error, StorageNotFoundError):
        assert isinstance(back, FileNotFoundError) and back.path == "/sp/x"  # type: ignore[attr-defined]


def test_an_unknown_error_class_is_its_nearest_known_one() -> None:
    class NewError(JobError):
        pass

    header = error_header(NewError("from a newer flinkish"))
    known = header.replace("test_wire", "gone").replace("NewError", "Gone")
    back = error_from_header(known)
    assert type(back) is JobError and back.message == "from a newer flinkish"
    for junk in (None, "", "not json", "[]", '{"message": 3}'):
        assert error_from_header(junk) is None


@pytest.mark.parametrize(
    ("given", "endpoint"),
    [
        ("127.0.0.1:8081", "127.0.0.1:8081"),
        ("localhost:8081", "localhost:8081"),  # not local[N]
        ("jobmanager:6123", "jobmanager:6123"),
        ("http://host:8081/", "host:8081"),
        ("[::1]:8081", "[::1]:8081"),
        ("local[2]", None),
        ("local", None),
        ("sc://127.0.0.1:15002", None),
        ("spark://m:7077", None),
        ("yarn-cluster", None),
        ("k8s://https://api:6443", None),
    ],
)
def test_m_names_an_endpoint_or_a_spark_master(given: str, endpoint: str | None) -> None:
    assert endpoint_of(given) == endpoint


@pytest.mark.parametrize("given", ["localhost", "host:port", "host:0", "host:70000", "a/b:1"])
def test_m_that_is_neither_is_refused(given: str) -> None:
    with pytest.raises(UsageError, match="is not the address of a REST endpoint"):
        endpoint_of(given)


def test_the_configurations_endpoint() -> None:
    assert configured_endpoint(Configuration.from_flat({})) is None
    flat = {"rest.address": "localhost", "rest.port": "8082,8083"}
    assert configured_endpoint(Configuration.from_flat(flat)) == "localhost:8082"
    assert configured_endpoint(Configuration.from_flat({"rest.address": "::1"})) == "[::1]:8081"
