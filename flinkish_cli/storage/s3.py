"""S3 and S3-compatible stores (MinIO, Ceph, moto...) as a :class:`~.base.Storage`.

This module owns every operation flinkish makes on S3; the client and its streams are
:mod:`.s3_client`'s, the translation of botocore's errors into
:class:`~flinkish_cli.errors.StorageError` (with a hint naming the Flink key to check) is
:mod:`.s3_errors`'s. botocore is imported on first use, not with this module, so commands
that never touch S3 do not pay for it.

How the operations map to S3:

- a "directory" is a key prefix ending in ``/``; Hadoop's zero-byte ``dir/`` marker objects
  are understood and never listed as files; :meth:`S3Storage.mkdirs` does nothing;
- :meth:`~S3Storage.write_bytes` is one ``PutObject``, which S3 applies atomically; big
  uploads and downloads go through boto3's managed transfers (multipart above
  ``settings.multipart_threshold``) and stream from and to disk;
- :meth:`~S3Storage.create_exclusive` is ``PutObject`` with ``If-None-Match: *`` (AWS since
  2024, MinIO, moto). Against a server that answers ``501 Not Implemented`` to it, it falls
  back to a ``HeadObject`` then ``PutObject``, which is *not* safe against a concurrent
  writer; a server that silently ignores the header cannot be detected;
- ``copy_tree`` within one endpoint and set of credentials copies server side
  (``CopyObject``, or a managed multipart copy above 5 GiB); between S3 and local disk it
  transfers files in parallel, each multipart when big;
- :meth:`~S3Storage.delete_tree` lists the prefix and deletes 1000 keys per
  ``DeleteObjects`` call, refusing the root of a bucket.

A missing bucket is always an error (never "does not exist = False"): it is a
configuration problem the user has to fix.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import (
    SERVER_SIDE,
    TRANSFERRED,
    FileInfo,
    Storage,
    StorageNotFoundError,
    temp_name,
)
from flinkish_cli.storage.s3_client import (
    MAX_SINGLE_COPY,
    BodyReader,
    FullReads,
    endpoint_url,
    file_info,
    make_client,
    managed,
    transfer_config,
)
from flinkish_cli.storage.s3_errors import (
    CONF,
    NOT_FOUND,
    NOT_IMPLEMENTED,
    PRECONDITION_FAILED,
    bucket_of,
    error_code,
    translate,
)
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.uri import (
    S3Location,
    join,
    local_path,
    location,
    parse_s3,
    redact_url,
)

DELETE_BATCH = 1000
"""Keys per DeleteObjects call (S3's maximum)."""


class S3Storage(Storage):
    """Objects in S3 buckets, reached with one boto3 client built from the settings."""

    scheme = "s3"
    etags_in_listings = True

    def __init__(self, root: str, settings: StorageSettings | None = None) -> None:
        super().__init__(root, settings)
        parse_s3(root)  # a malformed root fails now, not at first use
        s = self.settings
        if bool(s.s3_access_key) != bool(s.s3_secret_key):
            given, missing = (
                ("s3.access-key", "s3.secret-key")
                if s.s3_access_key
                else ("s3.secret-key", "s3.access-key")
            )
            raise StorageError(
                f"{given} is set but {missing} is not.",
                f"Set both in {CONF}, or neither to use the AWS default credentials.",
            )
        self.endpoint = endpoint_url(s.s3_endpoint)
        self._client: Any = None
        self._lock = threading.Lock()
        self._if_none_match = True  # the server honours PutObject's If-None-Match

    # -- description -----------------------------------------------------------------------
    def _where(self) -> str:
        return f"the S3 endpoint {redact_url(self.endpoint)}" if self.endpoint else "AWS S3"

    def describe(self) -> str:
        return f"{self.root} on {self._where()}"

    def location(self, path: str) -> str:
        """``s3://bucket/key`` (``s3a://`` written as ``s3://``) and the endpoint, if any."""
        return location(path, self.endpoint)

    # -- the client ------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The boto3 S3 client (thread-safe), created on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        with self._errors("connect to", self.root):
            return make_client(self.settings, self.endpoint)

    @staticmethod
    def _managed(method: str, client: Any, *args: Any, **kwargs: Any) -> Any:
        return managed(method, client, *args, **kwargs)

    def _transfer_config(self, copy: bool = False) -> Any:
        return transfer_config(self.settings, copy)

    def _same_service(self, other: S3Storage) -> bool:
        """Whether ``other`` reaches the same endpoint with the same keys (server-side copy)."""
        mine, theirs = self.settings, other.settings
        return (
            self.endpoint == other.endpoint
            and mine.s3_access_key == theirs.s3_access_key
            and mine.s3_secret_key == theirs.s3_secret_key
            and mine.s3_session_token == theirs.s3_session_token
        )

    # -- errors ----------------------------------------------------------------------------
    def _storage_error(self, error: Exception, action: str, path: str) -> StorageError | None:
        """botocore's (and boto3's transfer) errors, as StorageErrors."""
        translated = self._translate(error, action, path)
        if isinstance(translated, StorageNotFoundError) and error_code(error) in (
            "404",
            "NotFound",
        ):
            # HEAD answers a bare 404 for a missing bucket as for a missing key.
            self._check_bucket(path)
        return translated

    def _translate(self, error: BaseException, action: str, path: str) -> StorageError | None:
        return translate(
            error,
            action,
            path,
            where=self._where(),
            redact=self.settings.redact,
            attempts=self.settings.max_attempts,
            no_bucket=self._no_bucket,
        )

    def _no_bucket(self, bucket: str) -> StorageError:
        hint = "Create the bucket, or correct the path"
        if self.endpoint:
            hint += f"; check s3.endpoint and s3.path.style.access in {CONF}"
        return StorageError(
            f"The S3 bucket '{bucket}' does not exist on {self._where()}.", hint + "."
        )

    def _check_bucket(self, path: str) -> None:
        """Raise the "bucket does not exist" StorageError if that is the problem."""
        from botocore.exceptions import ClientError

        bucket = bucket_of(path)
        try:
            self.client.head_bucket(Bucket=bucket)
        except ClientError as error:
            if error_code(error) in ("404", "NoSuchBucket", "NotFound"):
                raise self._no_bucket(bucket) from None
        except Exception:  # whatever else is wrong shows up in the original error
            return

    # -- locations -------------------------------------------------------------------------
    def _loc(self, path: str) -> S3Location:
        return parse_s3(path)

    def _file(self, path: str) -> S3Location:
        loc = parse_s3(path)
        if not loc.key:
            raise StorageError(f"{path} names a bucket, not a file.", "Give a path inside it.")
        return loc

    def _has_children(self, loc: S3Location) -> bool:
        answer = self.client.list_objects_v2(Bucket=loc.bucket, Prefix=loc.dir_prefix, MaxKeys=1)
        return bool(answer.get("KeyCount") or answer.get("Contents"))

    # -- queries ---------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        loc = self._loc(path)
        with self._errors("read", path):
            if not loc.key:
                self.client.head_bucket(Bucket=loc.bucket)
                return True
            try:
                self.client.head_object(Bucket=loc.bucket, Key=loc.key)
                return True
            except Exception as error:
                if error_code(error) not in NOT_FOUND:
                    raise
            return self._has_children(loc)

    def is_dir(self, path: str) -> bool:
        loc = self._loc(path)
        with self._errors("list", path):
            if not loc.key:
                self.client.head_bucket(Bucket=loc.bucket)
                return True
            return self._has_children(loc)

    def stat(self, path: str) -> FileInfo:
        loc = self._loc(path)
        name = loc.key.rpartition("/")[2] or loc.bucket
        with self._errors("read", path):
            if loc.key:
                try:
                    head = self.client.head_object(Bucket=loc.bucket, Key=loc.key)
                    modified = head.get("LastModified")
                    return FileInfo(
                        path,
                        name,
                        int(head.get("ContentLength", 0)),
                        False,
                        modified.timestamp() if modified else None,
                    )
                except Exception as error:
                    if error_code(error) not in NOT_FOUND:
                        raise
                if not self._has_children(loc):
                    self._check_bucket(path)
                    raise StorageNotFoundError(path)
            else:
                self.client.head_bucket(Bucket=loc.bucket)
        return FileInfo(path, name, 0, True, None)

    def list(self, path: str) -> list[FileInfo]:
        loc = self._loc(path)
        prefix = loc.dir_prefix
        found: list[FileInfo] = []
        with self._errors("list", path):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=loc.bucket, Prefix=prefix, Delimiter="/"
            )
            for page in pages:
                for common in page.get("CommonPrefixes", ()):
                    name = common["Prefix"][len(prefix) :].rstrip("/")
                    if name and "/" not in name:
                        found.append(FileInfo(join(path, name), name, 0, True, None))
                for obj in page.get("Contents", ()):
                    name = obj["Key"][len(prefix) :]
                    if name and "/" not in name:  # skips the directory's own "dir/" marker
                        found.append(file_info(join(path, name), name, obj))
        return sorted(found, key=lambda info: info.name)

    def walk(self, path: str) -> Iterator[FileInfo]:
        loc = self._loc(path)
        prefix = loc.dir_prefix
        with self._errors("list", path):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=loc.bucket, Prefix=prefix
            )
            for page in pages:
                for obj in page.get("Contents", ()):
                    relative = obj["Key"][len(prefix) :]
                    if relative and not relative.endswith("/"):  # "sub/" markers are no files
                        yield file_info(join(path, relative), relative.rpartition("/")[2], obj)

    # -- reading ---------------------------------------------------------------------------
    def open_read(self, path: str) -> BinaryIO:
        loc = self._file(path)
        with self._errors("read", path):
            body = self.client.get_object(Bucket=loc.bucket, Key=loc.key)["Body"]
        return io.BufferedReader(BodyReader(body, self._errors, path), 1024 * 1024)  # type: ignore[return-value]

    def read_bytes(self, path: str) -> bytes:
        loc = self._file(path)
        with self._errors("read", path):
            body = self.client.get_object(Bucket=loc.bucket, Key=loc.key)["Body"]
            try:
                return body.read()
            finally:
                body.close()

    def read_if_changed(self, path: str, version: str | None) -> tuple[str | None, bytes | None]:
        """One ``GetObject`` with ``If-None-Match: <the ETag known>``: S3 answers 304 without
        a body while the object is unchanged (reads are strongly consistent)."""
        loc = self._file(path)
        extra = {"IfNoneMatch": version} if version else {}
        with self._errors("read", path):
            try:
                answer = self.client.get_object(Bucket=loc.bucket, Key=loc.key, **extra)
            except Exception as error:
                if version and error_code(error) in ("304", "NotModified"):
                    return version, None
                raise
            body = answer["Body"]
            try:
                return answer.get("ETag"), body.read()
            finally:
                body.close()

    def download_file(self, src: str, local_dest: str) -> None:
        self._download(self._file(src), src, local_path(local_dest), None)

    def _download(self, loc: S3Location, src: str, dest: str, size: int | None) -> None:
        """Fetch ``loc`` into the local file ``dest`` atomically: one streamed GET when it is
        known to be small, else boto3's managed (ranged, parallel) download."""
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with self._errors("download", src):
            if size is not None and size < self.settings.multipart_threshold:
                tmp = temp_name(dest)
                try:
                    body = self.client.get_object(Bucket=loc.bucket, Key=loc.key)["Body"]
                    with open(tmp, "wb") as out:
                        for chunk in body.iter_chunks(1024 * 1024):
                            out.write(chunk)
                    os.replace(tmp, dest)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
            else:
                # boto3 writes to a temporary name beside dest and renames it at the end.
                self._managed(
                    "download_file",
                    self.client,
                    loc.bucket,
                    loc.key,
                    dest,
                    Config=self._transfer_config(),
                )

    # -- writing ---------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        loc = self._file(path)
        with self._errors("write", path):
            self.client.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    def write_stream(self, path: str, stream: BinaryIO) -> None:
        loc = self._file(path)
        with self._errors("write", path):
            self._managed(
                "upload_fileobj",
                self.client,
                FullReads(stream),
                loc.bucket,
                loc.key,
                Config=self._transfer_config(),
            )

    def create_exclusive(self, path: str, data: bytes) -> bool:
        loc = self._file(path)
        with self._errors("create", path):
            if self._if_none_match:
                try:
                    self.client.put_object(
                        Bucket=loc.bucket, Key=loc.key, Body=data, IfNoneMatch="*"
                    )
                    return True
                except Exception as error:
                    code = error_code(error)
                    if code in PRECONDITION_FAILED:
                        return False
                    if code not in NOT_IMPLEMENTED:
                        raise
                    self._if_none_match = False  # an older server: best effort from now on
            try:
                self.client.head_object(Bucket=loc.bucket, Key=loc.key)
                return False
            except Exception as error:
                if error_code(error) not in NOT_FOUND:
                    raise
            self.client.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)
            return True

    def upload_file(self, local_src: str, dest: str) -> None:
        loc = self._file(dest)
        source = local_path(local_src)
        try:
            size = os.stat(source).st_size
        except FileNotFoundError:
            raise StorageNotFoundError(local_src) from None
        except OSError as error:
            raise StorageError(f"Cannot read {local_src}: {error.strerror}.") from error
        with self._errors("upload to", dest):
            if size < self.settings.multipart_threshold:
                with open(source, "rb") as body:
                    self.client.put_object(Bucket=loc.bucket, Key=loc.key, Body=body)
            else:
                self._managed(
                    "upload_file",
                    self.client,
                    source,
                    loc.bucket,
                    loc.key,
                    Config=self._transfer_config(),
                )

    def mkdirs(self, path: str) -> None:
        self._loc(path)  # S3 has no directories; only check the path

    def delete(self, path: str) -> None:
        loc = self._file(path)
        with self._errors("delete", path):
            self.client.delete_object(Bucket=loc.bucket, Key=loc.key)

    def delete_tree(self, path: str) -> None:
        loc = self._loc(path)
        if not loc.key:
            raise StorageError(
                f"Refusing to delete everything in the bucket '{loc.bucket}' ({path}).",
                "Give a directory inside the bucket.",
            )
        from concurrent.futures import ThreadPoolExecutor  # not on a command's path

        with self._errors("delete", path):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=loc.bucket,
                Prefix=loc.dir_prefix,
                PaginationConfig={"PageSize": DELETE_BATCH},
            )
            with ThreadPoolExecutor(max_workers=self.settings.max_workers) as pool:
                futures = []
                for page in pages:
                    keys = [{"Key": obj["Key"]} for obj in page.get("Contents", ())]
                    for start in range(0, len(keys), DELETE_BATCH):
                        batch = keys[start : start + DELETE_BATCH]
                        futures.append(pool.submit(self._delete_batch, loc.bucket, batch))
                for future in futures:
                    future.result()

    def _delete_batch(self, bucket: str, keys: builtins.list[dict[str, str]]) -> None:
        answer = self.client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        errors = [e for e in answer.get("Errors", ()) if e.get("Code") != "NoSuchKey"]
        if errors:
            first = errors[0]
            raise StorageError(
                f"{self._where()} did not delete {len(errors)} objects in bucket '{bucket}', "
                f"e.g. {first.get('Key')}: {first.get('Code')}: {first.get('Message')}",
                "Check that the access key may delete objects (s3:DeleteObject).",
            )

    # -- copying ---------------------------------------------------------------------------
    def _copy_file(
        self, src: str, dest: Storage, dest_path: str, size: int | None, link: bool
    ) -> str:
        source = self._file(src)
        if isinstance(dest, S3Storage) and self._same_service(dest):
            target = dest._file(dest_path)
            copy_source = {"Bucket": source.bucket, "Key": source.key}
            with self._errors("copy", src):
                if size is not None and size < MAX_SINGLE_COPY:
                    dest.client.copy_object(
                        CopySource=copy_source, Bucket=target.bucket, Key=target.key
                    )
                else:
                    self._managed(
                        "copy",
                        dest.client,
                        copy_source,
                        target.bucket,
                        target.key,
                        SourceClient=self.client,
                        Config=self._transfer_config(copy=True),
                    )
            return SERVER_SIDE
        local_target = dest.local_path(dest_path)
        if local_target is not None:
            self._download(source, src, local_target, size)
            return TRANSFERRED
        return super()._copy_file(src, dest, dest_path, size, link)
