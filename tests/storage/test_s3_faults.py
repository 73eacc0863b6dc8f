"""S3 faults at the storage level, against the real moto server over HTTP: the server stopped
during an upload, the connection slowed and stalled (a TCP proxy on loopback between the
client and the server; boto3 is not mocked). Each case: one clear StorageError (no secret in
it, no hang), and a retry that works once the server is back."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from flinkish_cli.errors import StorageError
from flinkish_cli.storage import LocalStorage, join, open_storage
from tests.fixtures.s3server import S3Server, after_uploads, start_s3_server
from tests.storage.tcp_proxy import TcpProxy

pytestmark = pytest.mark.timeout(300)


def _files(base: Path, count: int, size: int = 2048) -> list[str]:
    names = []
    for i in range(count):
        path = base / f"part-{i:03d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(hashlib.sha256(str(i).encode()).digest() * (size // 32))
        names.append(path.name)
    return names


def _assert_clear(error: StorageError, server: S3Server) -> None:
    text = str(error)
    assert server.secret_key not in text and server.access_key not in text
    assert "Traceback" not in text
    assert "Cannot connect to the S3 endpoint" in text or "stopped answering" in text, text


def test_the_endpoint_gone_during_an_upload_then_back(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    names = _files(tmp_path / "src", 40)
    with TcpProxy(s3_server.address) as proxy:
        settings = s3_server.settings(
            s3_endpoint=proxy.endpoint, max_workers=2, connect_timeout=2, read_timeout=5
        )
        target = open_storage(s3_bucket, settings)
        stopped = after_uploads(target, 5, proxy.stop)
        with pytest.raises(StorageError) as caught:
            LocalStorage(str(tmp_path)).copy_tree(
                str(tmp_path / "src"), target, join(s3_bucket, "up"), files=names
            )
        assert stopped.is_set()
        _assert_clear(caught.value, s3_server)
        proxy.start()  # the same endpoint again, the server's data untouched
        LocalStorage(str(tmp_path)).copy_tree(
            str(tmp_path / "src"), target, join(s3_bucket, "up"), files=names
        )
        for name in names:
            assert (
                target.read_bytes(join(s3_bucket, "up", name))
                == (tmp_path / "src" / name).read_bytes()
            )


def test_the_server_process_stopped_during_an_upload(tmp_path: Path) -> None:
    names = _files(tmp_path / "src", 30)
    with start_s3_server() as server:
        bucket = server.bucket()
        target = open_storage(bucket, server.settings(max_workers=2, connect_timeout=2))
        assert server.process is not None
        process = server.process

        def kill() -> None:
            process.terminate()
            process.wait(timeout=10)

        after_uploads(target, 4, kill)
        with pytest.raises(StorageError) as caught:
            LocalStorage(str(tmp_path)).copy_tree(
                str(tmp_path / "src"), target, join(bucket, "up"), files=names
            )
        _assert_clear(caught.value, server)
    with start_s3_server() as again:  # a new server: the retry works
        bucket = again.bucket()
        target = open_storage(bucket, again.settings())
        LocalStorage(str(tmp_path)).copy_tree(
            str(tmp_path / "src"), target, join(bucket, "up"), files=names
        )
        assert len(list(target.walk(join(bucket, "up")))) == len(names)


def test_a_slow_connection_still_copies_everything_correctly(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    names = _files(tmp_path / "src", 6, size=64 * 1024)
    big = tmp_path / "src" / "big"
    big.write_bytes(b"0123456789abcdef" * (6 * 1024 * 1024 // 16))  # multipart (5 MiB parts)
    names.append("big")
    with TcpProxy(s3_server.address) as proxy:
        proxy.delay, proxy.piece = 0.002, 16 * 1024
        settings = s3_server.settings(
            s3_endpoint=proxy.endpoint,
            multipart_threshold=5 * 1024 * 1024,
            multipart_chunksize=5 * 1024 * 1024,
        )
        target = open_storage(s3_bucket, settings)
        LocalStorage(str(tmp_path)).copy_tree(
            str(tmp_path / "src"), target, join(s3_bucket, "slow"), files=names
        )
        for name in names:
            local = LocalStorage(str(tmp_path)).checksum(str(tmp_path / "src" / name))
            assert target.checksum(join(s3_bucket, "slow", name)) == local
        assert proxy.requests > 0


def test_a_stalled_connection_fails_clearly_instead_of_hanging(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    names = _files(tmp_path / "src", 4)
    with TcpProxy(s3_server.address) as proxy:
        settings = s3_server.settings(
            s3_endpoint=proxy.endpoint, connect_timeout=1, read_timeout=1, max_attempts=2
        )
        target = open_storage(s3_bucket, settings)
        target.write_text(join(s3_bucket, "before"), "reachable")
        proxy.stall()
        with pytest.raises(StorageError) as caught:
            LocalStorage(str(tmp_path)).copy_tree(
                str(tmp_path / "src"), target, join(s3_bucket, "stalled"), files=names
            )
        _assert_clear(caught.value, s3_server)
        assert "stopped answering" in str(caught.value)
        proxy.unstall()
        LocalStorage(str(tmp_path)).copy_tree(
            str(tmp_path / "src"), target, join(s3_bucket, "stalled"), files=names
        )
        assert len(list(target.walk(join(s3_bucket, "stalled")))) == len(names)
