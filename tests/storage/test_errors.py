"""Failures a user can fix come out as StorageErrors with a hint, and never show a key.

The signature tests run against a moto server of their own that checks every request's
signature and IAM permissions (moto accepts any key unless told to authenticate, and doing
that on the shared session server would break the other tests).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import StorageNotFoundError, StorageSettings, join, open_storage
from tests.fixtures.s3server import S3Server, start_s3_server

ALLOW_S3 = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
)


def _everything_shown(error: BaseException, *objects: object) -> str:
    """All text a user or a log could ever see about ``error``: message, hint, repr, the
    full chained traceback, and the reprs of ``objects``."""
    parts = [str(error), repr(error), getattr(error, "hint", "") or ""]
    parts += traceback.format_exception(type(error), error, error.__traceback__)
    parts += [repr(o) for o in objects] + [str(o) for o in objects]
    return "\n".join(parts)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- URIs and settings ------------------------------------------------------------------------
@pytest.mark.parametrize("uri", ["gs://bucket/x", "ftp://host/x", "abfs://c@a/x", "S3N://b/x"])
def test_unsupported_scheme(uri: str) -> None:
    with pytest.raises(StorageError) as caught:
        open_storage(uri)
    assert uri in caught.value.message
    assert "s3://" in str(caught.value.hint) and "hdfs://" in str(caught.value.hint)


@pytest.mark.parametrize(
    "uri", ["s3://", "s3:///key", "s3:/bucket/key", "s3://bad bucket/x", "s3a://-x!/y", "  "]
)
def test_malformed_uri(uri: str) -> None:
    with pytest.raises(StorageError) as caught:
        open_storage(uri)
    assert caught.value.hint


@pytest.mark.parametrize("endpoint", ["ftp://host:21", "http://", "http://host:notaport"])
def test_malformed_endpoint(endpoint: str) -> None:
    with pytest.raises(StorageError, match=r"s3\.endpoint"):
        open_storage("s3://bucket/x", StorageSettings(s3_endpoint=endpoint))


@pytest.mark.parametrize("given", ["access", "secret"])
def test_one_key_without_the_other(given: str) -> None:
    settings = StorageSettings(
        s3_access_key="AKIAONLYONE" if given == "access" else None,
        s3_secret_key="only-the-secret-0123" if given == "secret" else None,
    )
    with pytest.raises(StorageError) as caught:
        open_storage("s3://bucket/x", settings)
    assert "s3.access-key" in str(caught.value) and "s3.secret-key" in str(caught.value)
    assert "only-the-secret-0123" not in _everything_shown(caught.value)


# -- the server cannot help ---------------------------------------------------------------------
def test_missing_bucket(s3_server: S3Server, tmp_path) -> None:
    uri = "s3://flinkish-no-such-bucket"
    s = open_storage(uri, s3_server.settings())
    local = tmp_path / "f"
    local.write_bytes(b"x")
    operations = {
        "read": lambda: s.read_text(join(uri, "x")),
        "stat": lambda: s.stat(join(uri, "x")),
        "exists": lambda: s.exists(join(uri, "x")),
        "exists root": lambda: s.exists(uri),
        "list": lambda: s.list(join(uri, "dir")),
        "walk": lambda: list(s.walk(join(uri, "dir"))),
        "write": lambda: s.write_text(join(uri, "x"), "x"),
        "create": lambda: s.create_exclusive(join(uri, "x"), b"x"),
        "upload": lambda: s.upload_file(str(local), join(uri, "x")),
        "download": lambda: s.download_file(join(uri, "x"), str(tmp_path / "d")),
        "delete_tree": lambda: s.delete_tree(join(uri, "dir")),
    }
    for name, operation in operations.items():
        with pytest.raises(StorageError) as caught:
            operation()
        assert not isinstance(caught.value, FileNotFoundError), name
        assert "bucket 'flinkish-no-such-bucket' does not exist" in caught.value.message, name
        assert "s3.endpoint" in str(caught.value.hint), name
        assert s3_server.secret_key not in _everything_shown(caught.value, s), name


def test_unreachable_endpoint() -> None:
    port = _closed_port()
    settings = StorageSettings(
        s3_endpoint=f"http://127.0.0.1:{port}",
        s3_access_key="AKIAUNREACHABLE",
        s3_secret_key="unreachable-secret-4711",
        max_attempts=1,
        connect_timeout=2,
    )
    s = open_storage("s3://bucket/ckpt", settings)
    for operation in (
        lambda: s.exists("s3://bucket/ckpt"),
        lambda: s.read_text("s3://bucket/ckpt/x"),
        lambda: s.write_text("s3://bucket/ckpt/x", "x"),
        lambda: s.list("s3://bucket/ckpt"),
    ):
        with pytest.raises(StorageError) as caught:
            operation()
        assert f"Cannot connect to the S3 endpoint http://127.0.0.1:{port}" in caught.value.message
        assert "s3.endpoint" in str(caught.value.hint)
        shown = _everything_shown(caught.value, s, settings)
        assert "unreachable-secret-4711" not in shown
        assert "AKIAUNREACHABLE" not in str(caught.value) + repr(s) + repr(settings)


def test_no_credentials_anywhere(
    monkeypatch: pytest.MonkeyPatch, s3_server: S3Server, s3_bucket: str
) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s = open_storage(s3_bucket, s3_server.settings(s3_access_key=None, s3_secret_key=None))
    with pytest.raises(StorageError, match="No S3 credentials") as caught:
        s.read_text(join(s3_bucket, "x"))
    assert "s3.access-key" in str(caught.value.hint)


def test_missing_key_is_not_found(s3_server: S3Server, s3_bucket: str, tmp_path) -> None:
    s = open_storage(s3_bucket, s3_server.settings())
    with pytest.raises(StorageNotFoundError):
        s.read_bytes(join(s3_bucket, "none"))
    with pytest.raises(StorageNotFoundError):  # a bare 404 to HEAD: the bucket is checked
        s.download_file(join(s3_bucket, "none"), str(tmp_path / "none"))
    assert list(tmp_path.iterdir()) == []


def test_hdfs_without_a_spark_driver_goes_through_webhdfs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain CLI has no JVM: hdfs:// goes to the NameNode's WebHDFS, and a NameNode that
    does not answer is said in one message naming the address and the key that sets it."""
    import socket
    import sys

    monkeypatch.delitem(sys.modules, "pyspark", raising=False)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = StorageSettings(hadoop_conf={"dfs.namenode.http-address": f"127.0.0.1:{port}"})
    storage = open_storage("hdfs://127.0.0.1:8020/flink/checkpoints", settings)
    assert type(storage).__name__ == "WebHdfsStorage"
    with pytest.raises(StorageError) as caught:
        storage.list("hdfs://127.0.0.1:8020/flink/checkpoints")
    assert caught.value.message.startswith(
        f"Cannot reach the NameNode's WebHDFS at http://127.0.0.1:{port} (to list "
        "hdfs://127.0.0.1:8020/flink/checkpoints)"
    )
    assert "flink.hadoop.dfs.namenode.http-address" in str(caught.value.hint)


# -- a server that checks signatures ----------------------------------------------------------
@dataclass
class AuthServer:
    server: S3Server
    bucket: str
    access_key: str
    secret_key: str
    denied_access_key: str
    denied_secret_key: str

    def settings(self, access_key: str, secret_key: str) -> StorageSettings:
        return self.server.settings(s3_access_key=access_key, s3_secret_key=secret_key)


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with start_s3_server() as server:
        iam = server.client("iam")
        iam.create_user(UserName="flinkish")
        iam.put_user_policy(UserName="flinkish", PolicyName="s3", PolicyDocument=ALLOW_S3)
        allowed = iam.create_access_key(UserName="flinkish")["AccessKey"]
        iam.create_user(UserName="nobody")
        denied = iam.create_access_key(UserName="nobody")["AccessKey"]
        bucket = server.bucket()
        server.enable_authentication()
        yield AuthServer(
            server,
            bucket,
            allowed["AccessKeyId"],
            allowed["SecretAccessKey"],
            denied["AccessKeyId"],
            denied["SecretAccessKey"],
        )


def test_the_right_keys_work(auth_server: AuthServer) -> None:
    a = auth_server
    s = open_storage(a.bucket, a.settings(a.access_key, a.secret_key))
    s.write_text(join(a.bucket, "ok"), "signed")
    assert s.read_text(join(a.bucket, "ok")) == "signed"


def test_wrong_secret_key(auth_server: AuthServer, caplog: pytest.LogCaptureFixture) -> None:
    a = auth_server
    wrong = "wrong-secret-" + a.secret_key[::-1]
    s = open_storage(a.bucket, a.settings(a.access_key, wrong))
    caplog.set_level(logging.DEBUG)
    for operation in (
        lambda: s.write_text(join(a.bucket, "x"), "x"),
        lambda: s.read_text(join(a.bucket, "x")),
        lambda: s.list(a.bucket),
    ):
        with pytest.raises(StorageError) as caught:
            operation()
        assert "secret key does not match" in caught.value.message
        assert "s3.secret-key" in str(caught.value.hint)
        shown = _everything_shown(caught.value, s, s.settings)
        assert wrong not in shown and a.secret_key not in shown
    assert wrong not in caplog.text  # not even botocore's debug logging


def test_unknown_access_key(auth_server: AuthServer) -> None:
    a = auth_server
    s = open_storage(a.bucket, a.settings("AKIANOTKNOWN00000000", a.secret_key))
    with pytest.raises(StorageError) as caught:
        s.read_text(join(a.bucket, "x"))
    assert "does not know the access key" in caught.value.message
    assert "s3.access-key" in str(caught.value.hint)
    assert a.secret_key not in _everything_shown(caught.value, s)


def test_access_denied(auth_server: AuthServer) -> None:
    a = auth_server
    s = open_storage(a.bucket, a.settings(a.denied_access_key, a.denied_secret_key))
    with pytest.raises(StorageError) as caught:
        s.write_text(join(a.bucket, "x"), "x")
    assert caught.value.message.startswith("Access denied")
    assert "s3.access-key" in str(caught.value.hint)
    assert a.denied_secret_key not in _everything_shown(caught.value, s)
