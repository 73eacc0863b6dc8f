"""The S3 client flinkish uses: one botocore client per storage, built from the settings,
boto3's managed transfers called on it, and the streams between them and flinkish.

botocore is imported when the first request is made, not with this module; boto3 only when
a managed (multipart, ranged, parallel) transfer runs.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import FileInfo
from flinkish_cli.storage.s3_errors import CONF
from flinkish_cli.storage.settings import MiB, StorageSettings
from flinkish_cli.storage.uri import redact_url

DEFAULT_REGION = "us-east-1"
MAX_SINGLE_COPY = 5 * 1024 * MiB
"""CopyObject copies objects up to 5 GiB; bigger ones need a multipart copy."""
COPY_PART = 512 * MiB


def make_client(settings: StorageSettings, endpoint: str | None) -> Any:
    """A botocore S3 client for ``settings`` (thread-safe): boto3, and its transfer manager
    (a tenth of a second to import), is imported only when a managed transfer runs
    (:func:`managed`). :class:`StorageError` for an endpoint or region botocore refuses."""
    import botocore.session
    from botocore.config import Config

    s = settings
    options: dict[str, Any] = {}
    if endpoint:
        # Many S3-compatible servers reject the CRC checksums botocore sends by default.
        options.update(
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
    config = Config(
        s3={"addressing_style": "path" if s.s3_path_style else "auto"},
        retries={"total_max_attempts": s.max_attempts, "mode": "standard"},
        connect_timeout=s.connect_timeout,
        read_timeout=s.read_timeout,
        # copy_tree runs max_workers transfers, each with up to max_workers parts
        max_pool_connections=max(10, s.max_workers * s.max_workers),
        user_agent_extra="flinkish",
        **options,
    )
    session = botocore.session.Session()
    region = s.s3_region or session.get_config_variable("region") or DEFAULT_REGION
    try:
        return session.create_client(
            "s3",
            endpoint_url=endpoint,
            region_name=region,
            aws_access_key_id=s.s3_access_key or None,
            aws_secret_access_key=s.s3_secret_key or None,
            aws_session_token=s.s3_session_token or None,
            config=config,
        )
    except ValueError as error:  # botocore: invalid endpoint or region
        raise StorageError(
            f"Cannot use the S3 endpoint {redact_url(endpoint or '')} "
            f"and region '{region}': {settings.redact(str(error))}",
            f"Check s3.endpoint and s3.region in {CONF}.",
        ) from None


def managed(method: str, client: Any, *args: Any, **kwargs: Any) -> Any:
    """boto3's managed transfer ``method`` (``upload_file``, ``upload_fileobj``,
    ``download_file``, ``copy``: multipart, ranged, parallel) run with ``client``: the
    functions boto3 would add to a client of its own, called on this botocore one."""
    from boto3.s3 import inject

    return getattr(inject, method)(client, *args, **kwargs)


def transfer_config(settings: StorageSettings, copy: bool = False) -> Any:
    """boto3's transfer settings: parts and parallelism from ``settings``, or for a
    server-side copy (``copy``), one CopyObject up to S3's 5 GiB limit."""
    from boto3.s3.transfer import TransferConfig

    if copy:
        return TransferConfig(
            multipart_threshold=MAX_SINGLE_COPY,
            multipart_chunksize=COPY_PART,
            max_concurrency=settings.max_workers,
        )
    return TransferConfig(
        multipart_threshold=settings.multipart_threshold,
        multipart_chunksize=settings.multipart_chunksize,
        max_concurrency=settings.max_workers,
    )


def endpoint_url(endpoint: str | None) -> str | None:
    """``s3.endpoint`` as a URL: Flink (like Hadoop) also takes a bare host, meaning https."""
    if not endpoint or not endpoint.strip():
        return None
    url = endpoint.strip()
    if "://" not in url:
        url = "https://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StorageError(
            f"s3.endpoint is '{redact_url(endpoint)}', which is not an http(s) URL.",
            f"Set s3.endpoint in {CONF} to e.g. http://minio:9000 or https://s3.example.com.",
        )
    try:
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise StorageError(
            f"s3.endpoint '{redact_url(endpoint)}' has an invalid port.",
            f"Check s3.endpoint in {CONF}.",
        ) from None
    return url.rstrip("/")


class FullReads:
    """``stream`` with ``read(n)`` returning n bytes unless at the end: boto3 takes a short
    read for the end of the stream, which would silently cut a raw stream's upload short."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self._stream.read()
        parts: list[bytes] = []
        wanted = size
        while wanted > 0:
            data = self._stream.read(wanted)
            if not data:
                break
            parts.append(data)
            wanted -= len(data)
        return b"".join(parts)


class BodyReader(io.RawIOBase):
    """A botocore StreamingBody as a raw binary stream (errors become StorageErrors)."""

    def __init__(
        self, body: Any, errors: Callable[[str, str], AbstractContextManager[None]], path: str
    ) -> None:
        self._body = body
        self._errors = errors  # the storage's error translation, as a context manager
        self._path = path

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with self._errors("read", self._path):
            data = self._body.read(len(view))
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def file_info(path: str, name: str, obj: dict[str, Any]) -> FileInfo:
    """A listed or headed object as a :class:`~.base.FileInfo` (its ETag as its version)."""
    modified = obj.get("LastModified")
    etag = str(obj.get("ETag") or "").strip('"') or None
    return FileInfo(
        path,
        name,
        int(obj.get("Size", 0)),
        False,
        modified.timestamp() if modified else None,
        etag,
    )
