"""What is particular to S3: pagination, multipart transfers, markers, schemes, settings.

Every test talks HTTP to the moto server of the ``s3_server`` fixture; request counts come
from botocore's event hooks on the real client (observing, not mocking).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import S3Storage, StorageSettings, join, open_storage, relative_to
from flinkish_cli.storage.settings import MiB
from tests.fixtures.s3server import S3Server
from tests.storage.conftest import SMALL_PARTS, Root, count_calls


def _bucket(uri: str) -> str:
    return uri.split("://", 1)[1].split("/", 1)[0]


def test_listing_walking_and_deleting_more_than_1000_keys(s3_root: Root, make_files) -> None:
    """1000 files and 100 sub-directories in one directory: 1100 entries, two pages."""
    names = {f"f{i:04d}": b"" for i in range(1000)}
    names.update({f"s{i:03d}/x": b"x" for i in range(100)})
    source = make_files(names)
    s = s3_root.storage
    stats = open_storage(source).copy_tree(source, s, s3_root.path("many"))
    assert stats.files == stats.transferred == 1100

    calls = count_calls(s)
    listed = s.list(s3_root.path("many"))
    assert len(listed) == 1100
    assert sum(i.is_dir for i in listed) == 100
    assert calls["ListObjectsV2"] == 2  # S3 pages at 1000

    walked = list(s.walk(s3_root.path("many")))
    assert len(walked) == 1100
    assert {relative_to(s3_root.path("many"), i.path) for i in walked} == set(names)

    calls.clear()
    s.delete_tree(s3_root.path("many"))
    assert calls["DeleteObjects"] == 2  # 1000 + 100
    assert list(s.walk(s3_root.root)) == []


def test_upload_above_the_threshold_goes_in_parts(s3_root: Root, tmp_path: Path) -> None:
    data = os.urandom(12 * MiB)
    source = tmp_path / "big"
    source.write_bytes(data)
    s, remote = s3_root.storage, s3_root.path("big")
    calls = count_calls(s)
    s.upload_file(str(source), remote)
    assert calls.get("CreateMultipartUpload") == 1
    assert calls.get("UploadPart") == 3  # 5 + 5 + 2 MiB
    assert "PutObject" not in calls
    loc = s3_root.root.split("/")
    head = s.client.head_object(Bucket=loc[2], Key="root/big")  # type: ignore[attr-defined]
    assert head["ETag"].strip('"').endswith("-3")

    calls.clear()
    target = tmp_path / "back"
    s.download_file(remote, str(target))
    assert calls.get("GetObject", 0) >= 3  # ranged GETs, in parallel
    assert target.read_bytes() == data


def test_small_upload_is_a_single_put(s3_root: Root, tmp_path: Path) -> None:
    source = tmp_path / "small"
    source.write_bytes(b"tiny")
    calls = count_calls(s3_root.storage)
    s3_root.storage.upload_file(str(source), s3_root.path("small"))
    assert calls == {"PutObject": 1}


def test_s3a_scheme_is_kept_in_every_returned_path(s3_server: S3Server, s3_bucket: str) -> None:
    root = "s3a://" + _bucket(s3_bucket) + "/ckpt"
    s = open_storage(root, s3_server.settings())
    assert isinstance(s, S3Storage)
    s.write_text(join(root, "job", "offsets", "0"), "v1")
    assert [i.path for i in s.list(root)] == [f"{root}/job"]
    assert [i.path for i in s.walk(root)] == [f"{root}/job/offsets/0"]
    assert s.read_text(f"{root}/job/offsets/0") == "v1"
    # the same object through s3://
    assert s.read_text(f"s3://{_bucket(s3_bucket)}/ckpt/job/offsets/0") == "v1"


def test_directory_marker_objects(s3_root: Root) -> None:
    """Hadoop's s3a writes zero-byte "dir/" markers; they are directories, never files."""
    s = s3_root.storage
    bucket = _bucket(s3_root.root)
    client = s.client  # type: ignore[attr-defined]
    for key in ("root/dir/", "root/dir/empty/", "root/dir/sub/"):
        client.put_object(Bucket=bucket, Key=key, Body=b"")
    s.write_text(s3_root.path("dir", "sub", "f.txt"), "f")
    assert s.exists(s3_root.path("dir")) and s.is_dir(s3_root.path("dir"))
    assert [(i.name, i.is_dir) for i in s.list(s3_root.path("dir"))] == [
        ("empty", True),
        ("sub", True),
    ]
    assert [i.name for i in s.walk(s3_root.path("dir"))] == ["f.txt"]
    assert s.stat(s3_root.path("dir")).is_dir
    s.delete_tree(s3_root.path("dir"))
    assert client.list_objects_v2(Bucket=bucket, Prefix="root/dir").get("KeyCount") == 0


def test_bucket_root(s3_server: S3Server, s3_bucket: str) -> None:
    s = open_storage(s3_bucket, s3_server.settings())
    assert s.exists(s3_bucket) and s.is_dir(s3_bucket)
    assert s.list(s3_bucket) == []
    s.write_text(join(s3_bucket, "top.txt"), "t")
    assert [i.path for i in s.list(s3_bucket)] == [f"{s3_bucket}/top.txt"]
    with pytest.raises(StorageError, match="Refusing to delete everything"):
        s.delete_tree(s3_bucket)
    with pytest.raises(StorageError, match="names a bucket, not a file"):
        s.write_text(s3_bucket + "/", "x")
    assert s.read_text(join(s3_bucket, "top.txt")) == "t"


def test_create_exclusive_falls_back_for_servers_without_conditional_puts(
    s3_root: Root,
) -> None:
    s = s3_root.storage
    s._if_none_match = False  # type: ignore[attr-defined]  # as after a 501 from the server
    calls = count_calls(s)
    assert s.create_exclusive(s3_root.path("lock"), b"a") is True
    assert s.create_exclusive(s3_root.path("lock"), b"b") is False
    assert s.read_bytes(s3_root.path("lock")) == b"a"
    assert calls["HeadObject"] == 2


def test_create_exclusive_is_one_conditional_put(s3_root: Root) -> None:
    seen: list[str | None] = []
    s = s3_root.storage
    s.client.meta.events.register(  # type: ignore[attr-defined]
        "before-send.s3.PutObject",
        lambda request, **_: seen.append(request.headers.get("If-None-Match")),
    )
    assert s.create_exclusive(s3_root.path("once"), b"1") is True
    assert s.create_exclusive(s3_root.path("once"), b"2") is False
    assert seen == [b"*", b"*"] or seen == ["*", "*"]


def test_settings_from_flink_reach_the_server(s3_server: S3Server, s3_bucket: str) -> None:
    settings = StorageSettings.from_flink(s3_server.flink_conf())
    assert settings.s3_path_style is True
    s = open_storage(s3_bucket, settings)
    s.write_text(join(s3_bucket, "conf"), "from flink keys")
    assert s.read_text(join(s3_bucket, "conf")) == "from flink keys"


def test_default_credential_chain_when_no_keys_are_set(
    s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    settings = s3_server.settings(s3_access_key=None, s3_secret_key=None)
    s = open_storage(s3_bucket, settings)
    s.write_text(join(s3_bucket, "env"), "from the environment")
    assert s.read_text(join(s3_bucket, "env")) == "from the environment"


def test_client_settings(s3_server: S3Server) -> None:
    s = open_storage(
        "s3://bkt/x",
        s3_server.settings(connect_timeout=1.5, read_timeout=7.0, max_attempts=3, s3_region=None),
    )
    config = s.client.meta.config  # type: ignore[attr-defined]
    assert config.connect_timeout == 1.5 and config.read_timeout == 7.0
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}  # 3 in all
    assert config.s3["addressing_style"] == "path"
    assert s.client.meta.region_name == "us-east-1"  # type: ignore[attr-defined]
    auto = open_storage(
        "s3://bkt/x", StorageSettings(s3_region="eu-west-1", s3_access_key="a", s3_secret_key="b")
    )
    assert auto.client.meta.config.s3["addressing_style"] == "auto"  # type: ignore[attr-defined]
    assert auto.client.meta.region_name == "eu-west-1"  # type: ignore[attr-defined]


def test_endpoint_without_a_scheme_means_https() -> None:
    s = open_storage("s3://bkt", StorageSettings(s3_endpoint="minio.example:9000"))
    assert s.endpoint == "https://minio.example:9000"  # type: ignore[attr-defined]


def test_opening_an_s3_storage_does_not_contact_the_server() -> None:
    # a closed port: nothing is sent before the first operation
    s = open_storage("s3://bkt/x", StorageSettings(s3_endpoint="http://127.0.0.1:9"))
    assert "127.0.0.1:9" in s.describe()


def test_small_parts_settings_are_used(s3_root: Root) -> None:
    config = s3_root.storage._transfer_config()  # type: ignore[attr-defined]
    assert config.multipart_threshold == SMALL_PARTS["multipart_threshold"]
    assert config.multipart_chunksize == SMALL_PARTS["multipart_chunksize"]
    assert config.max_concurrency == 8


def test_temporary_credentials_send_their_session_token(
    s3_server: S3Server, s3_bucket: str
) -> None:
    conf = {**s3_server.flink_conf(), "s3.session.token": "FwoGZXIvYXdzEXAMPLETOKEN"}
    settings = StorageSettings.from_flink(conf)
    assert "FwoGZXIvYXdzEXAMPLETOKEN" not in repr(settings)
    s = open_storage(s3_bucket, settings)
    seen: list[object] = []
    s.client.meta.events.register(  # type: ignore[attr-defined]
        "before-send.s3.*",
        lambda request, **_: seen.append(request.headers.get("X-Amz-Security-Token")),
    )
    s.write_text(join(s3_bucket, "sts"), "with a session token")
    assert s.read_text(join(s3_bucket, "sts")) == "with a session token"
    assert seen and all(
        token in (b"FwoGZXIvYXdzEXAMPLETOKEN", "FwoGZXIvYXdzEXAMPLETOKEN") for token in seen
    )
