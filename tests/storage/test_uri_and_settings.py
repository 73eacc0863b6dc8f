"""Paths, URIs and StorageSettings: pure functions, no file system, no server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flinkish_cli.errors import ConfigError, StorageError
from flinkish_cli.storage import StorageSettings, join, relative_to
from flinkish_cli.storage.uri import local_path, parse_s3, redact_url, scheme_of


@pytest.mark.parametrize(
    ("base", "parts", "joined"),
    [
        ("s3://bucket", ("a", "b"), "s3://bucket/a/b"),
        ("s3a://bucket/ckpt/", ("/job/", "status.json"), "s3a://bucket/ckpt/job/status.json"),
        ("hdfs://nn:8020/flink", ("x",), "hdfs://nn:8020/flink/x"),
        ("hdfs:///flink", ("x",), "hdfs:///flink/x"),
        ("file:///tmp", ("x",), "file:///tmp/x"),
        ("file:///", ("x",), "file:///x"),
        ("/", ("x",), "/x"),
        ("/tmp/a/", ("", "b/c"), "/tmp/a/b/c"),
        ("relative/dir", ("x",), "relative/dir/x"),
        ("s3://bucket/a", (), "s3://bucket/a"),
    ],
)
def test_join(base: str, parts: tuple[str, ...], joined: str) -> None:
    assert join(base, *parts) == joined


def test_relative_to() -> None:
    assert relative_to("s3://b/root/", "s3://b/root/a/b") == "a/b"
    with pytest.raises(ValueError):
        relative_to("s3://b/root", "s3://b/rootx/a")


@pytest.mark.parametrize(
    ("uri", "scheme"),
    [
        ("/abs", "file"),
        ("rel/x", "file"),
        ("a:b/c", "file"),
        ("file:///x", "file"),
        ("S3://b/x", "s3"),
        ("s3a://b", "s3a"),
        ("hdfs:///x", "hdfs"),
        ("gs://b", "gs"),
    ],
)
def test_scheme_of(uri: str, scheme: str) -> None:
    assert scheme_of(uri) == scheme


def test_parse_s3() -> None:
    loc = parse_s3("s3a://my-bucket/ckpt/job/")
    assert (loc.scheme, loc.bucket, loc.key, loc.dir_prefix) == (
        "s3a",
        "my-bucket",
        "ckpt/job",
        "ckpt/job/",
    )
    assert loc.uri() == "s3a://my-bucket/ckpt/job"
    root = parse_s3("s3://my-bucket")
    assert (root.key, root.dir_prefix, root.uri()) == ("", "", "s3://my-bucket")
    # keys may hold characters a URL parser would take for a query or a fragment
    assert parse_s3("s3://b1/a?b#c").key == "a?b#c"


def test_local_path(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_path("x/../y") == os.path.join(str(tmp_path), "y")
    assert local_path("file:///a/b/") == "/a/b"
    with pytest.raises(StorageError):
        local_path("s3://b/x")


def test_redact_url() -> None:
    assert redact_url("http://user:pass@minio:9000/x") == "http://******@minio:9000/x"
    assert redact_url("http://minio:9000") == "http://minio:9000"


# -- settings ------------------------------------------------------------------------------
def test_from_flink() -> None:
    settings = StorageSettings.from_flink(
        {
            "s3.endpoint": "http://minio:9000",
            "s3.access-key": "AKIAEXAMPLE",
            "s3.secret-key": "very-secret-value",
            "s3.path.style.access": "TRUE",
            "s3.region": "eu-central-1",
            "flink.hadoop.dfs.replication": "2",
            "flink.hadoop.fs.s3a.secret.key": "hadoop-secret-value",
            "execution.checkpointing.dir": "s3://b/ckpt",
        }
    )
    assert settings.s3_endpoint == "http://minio:9000"
    assert (settings.s3_access_key, settings.s3_secret_key) == ("AKIAEXAMPLE", "very-secret-value")
    assert settings.s3_path_style is True
    assert settings.s3_region == "eu-central-1"
    assert settings.hadoop_conf == {
        "dfs.replication": "2",
        "fs.s3a.secret.key": "hadoop-secret-value",
    }
    shown = repr(settings) + str(settings)
    for secret in ("AKIAEXAMPLE", "very-secret-value", "hadoop-secret-value"):
        assert secret not in shown
    assert "dfs.replication': '2'" in shown and "http://minio:9000" in shown
    assert settings.redact("x very-secret-value y AKIAEXAMPLE") == "x ****** y ******"


def test_from_flink_defaults_and_aliases() -> None:
    empty = StorageSettings.from_flink({})
    assert empty == StorageSettings()
    assert empty.s3_path_style is False and empty.max_workers == 8
    aliases = StorageSettings.from_flink(
        {"s3.access.key": "A1", "s3.secret.key": "S1", "s3.endpoint": "  "}, max_workers=2
    )
    assert (aliases.s3_access_key, aliases.s3_secret_key) == ("A1", "S1")
    assert aliases.s3_endpoint is None and aliases.max_workers == 2
    assert "A1" not in repr(aliases)


def test_a_bad_boolean_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"s3\.path\.style\.access"):
        StorageSettings.from_flink({"s3.path.style.access": "maybe"})


def test_settings_are_frozen_and_hashable() -> None:
    settings = StorageSettings(s3_region="us-east-1", hadoop_conf={"a": "b"})
    with pytest.raises(AttributeError):
        settings.s3_region = "x"  # type: ignore[misc]
    assert hash(settings) == hash(StorageSettings(s3_region="us-east-1", hadoop_conf={"a": "b"}))


def test_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        StorageSettings(max_workers=0)
    with pytest.raises(ValueError):
        StorageSettings(multipart_chunksize=1024)


def test_importing_the_package_is_cheap() -> None:
    """The CLI imports storage on every command: no boto3, botocore or pyspark until used."""
    code = (
        "import sys; import flinkish_cli.storage as s; "
        "s.open_storage('s3://bucket/x', s.StorageSettings()); "
        "heavy = [m for m in ('boto3', 'botocore', 'pyspark', 'py4j') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
