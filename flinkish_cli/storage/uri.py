"""Storage URIs: telling schemes apart, joining paths, and taking URIs apart.

This module owns the spelling of every path flinkish hands to a storage:

- a plain path (absolute, relative to the working directory, or starting with ``~``), or a
  ``file:`` URI (``file:///abs``, ``file:/abs``, ``file://localhost/abs``): the local disk;
- ``s3://bucket/key`` and ``s3a://bucket/key``: S3 or an S3-compatible store;
- ``hdfs://namenode:port/path`` and ``hdfs:///path``: HDFS, through Hadoop in the driver.

Paths are plain strings everywhere; :func:`join` adds segments with ``/`` and keeps the
scheme as written, so a path that went in as ``s3a://`` comes out as ``s3a://``.
Nothing here touches a file system or imports a client library.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from flinkish_cli.config.secrets import REDACTED
from flinkish_cli.errors import StorageError

LOCAL = "file"
S3_SCHEMES = ("s3", "s3a")
HDFS = "hdfs"
SUPPORTED = "a local path, file://, s3://, s3a:// or hdfs://"

# A scheme is only recognised when a "/" follows the colon, so that a relative local path
# such as "a:b/c" stays a path.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):/")
# Bucket names as botocore accepts them (wider than AWS's rules for new buckets).
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-_]{1,254}$")


def scheme_of(uri: str) -> str:
    """The lower-case scheme of ``uri``: ``"file"`` for plain paths."""
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else LOCAL


def check_uri(uri: str) -> str:
    """The scheme of ``uri``; :class:`StorageError` for an empty or unsupported one."""
    if not isinstance(uri, str) or not uri.strip():
        raise StorageError(
            f"An empty path ({uri!r}) cannot name a storage location.",
            f"Use {SUPPORTED}.",
        )
    scheme = scheme_of(uri)
    if scheme not in (LOCAL, HDFS, *S3_SCHEMES):
        raise StorageError(
            f"The path {uri} uses the scheme '{scheme}://', which flinkish does not support.",
            f"Use {SUPPORTED}.",
        )
    return scheme


def join(base: str, *parts: str) -> str:
    """``base`` and ``parts`` joined with single ``/``; the scheme of ``base`` is kept.

    ``join("s3a://b/ckpt/", "job", "/status.json")`` is ``"s3a://b/ckpt/job/status.json"``;
    empty parts are skipped; ``join("/", "x")`` is ``"/x"``.
    """
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]*:/*)(.*)$", base) if _SCHEME.match(base) else None
    head, rest = (match.group(1), match.group(2)) if match else ("", base)
    segments = [rest.rstrip("/")] if rest.strip("/") else []
    segments += [p.strip("/") for p in parts if p and p.strip("/")]
    joined = "/".join(segments)
    if head:
        return head + joined
    if base.startswith("/") and not joined.startswith("/"):
        return "/" + joined
    return joined


def relative_to(root: str, path: str) -> str:
    """``path`` without the leading ``root/`` (both as spelled by the caller)."""
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise ValueError(f"{path} is not under {root}")
    return path[len(prefix) :]


def check_relative(name: str) -> str:
    """``name`` as a clean relative path (``a/b``); rejects absolute paths and ``..``."""
    clean = name.strip("/")
    segments = clean.split("/")
    if not clean or name.startswith("/") or any(s in ("", ".", "..") for s in segments):
        raise StorageError(
            f"'{name}' is not a relative path inside the directory being copied.",
            "Name files relative to the source directory, without '..' or a leading '/'.",
        )
    return clean


# -- local ---------------------------------------------------------------------------------
def local_path(uri: str) -> str:
    """The absolute local path that a plain path or ``file:`` URI names."""
    if scheme_of(uri) != LOCAL:
        raise StorageError(
            f"{uri} is not a local path.", "Local storage takes plain paths and file:// URIs."
        )
    path = uri
    if _SCHEME.match(uri):
        rest = uri[len("file:") :]
        if rest.startswith("//"):
            host, sep, tail = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise StorageError(
                    f"{uri} names the host '{host}'; a file: URI can only name this machine.",
                    "Use file:///absolute/path (three slashes), or a plain path.",
                )
            path = "/" + tail if sep else "/"
        else:
            path = rest
    return os.path.abspath(os.path.expanduser(path))


# -- S3 ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/key`` taken apart; ``key`` has no leading or trailing ``/``."""

    scheme: str
    bucket: str
    key: str

    @property
    def dir_prefix(self) -> str:
        """The key prefix of the "directory" at ``key``: ``key/``, or ``""`` at the root."""
        return f"{self.key}/" if self.key else ""

    def uri(self, key: str | None = None) -> str:
        key = self.key if key is None else key
        return f"{self.scheme}://{self.bucket}/{key}" if key else f"{self.scheme}://{self.bucket}"


def parse_s3(uri: str) -> S3Location:
    """Bucket and key of an ``s3://`` or ``s3a://`` URI; :class:`StorageError` if malformed."""
    scheme = scheme_of(uri)
    hint = "Write S3 paths as s3://bucket/path (or s3a://bucket/path)."
    if scheme not in S3_SCHEMES:
        raise StorageError(f"{uri} is not an S3 path.", hint)
    rest = uri[len(scheme) + 1 :]
    if not rest.startswith("//"):
        raise StorageError(f"The S3 path {uri} has no bucket (it needs '//').", hint)
    bucket, _, key = rest[2:].partition("/")
    if not bucket:
        raise StorageError(f"The S3 path {uri} names no bucket.", hint)
    if not _BUCKET.match(bucket):
        raise StorageError(
            f"The S3 path {uri} names the bucket '{bucket}', which is not a valid bucket name.",
            "Bucket names have 3 to 63 letters, digits, dots and hyphens; " + hint,
        )
    return S3Location(scheme=scheme, bucket=bucket, key=key.strip("/"))


def redact_url(url: str) -> str:
    """``url`` without any ``user:password@`` part."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/@]*@", rf"\1{REDACTED}@", url)


def location(uri: str, s3_endpoint: str | None = None) -> str:
    """Where ``uri`` is, as a string two processes compare to know they reach the same files
    (the same on every host that reaches them the same way), never with a secret: a local
    path as ``file://`` and its real absolute path (symbolic links resolved), an S3 path as
    ``s3://bucket/key`` (``s3a://`` written as ``s3://``) with ``s3_endpoint`` (the
    endpoint's URL, as :func:`~.s3_client.endpoint_url` makes it), anything else as given.
    :meth:`Storage.location <flinkish_cli.storage.base.Storage.location>` is this, for its
    backend; a caller without a storage (the registry's identity) calls it directly."""
    scheme = scheme_of(uri)
    if scheme == LOCAL:
        return "file://" + os.path.realpath(local_path(uri))
    if scheme in S3_SCHEMES:
        loc = parse_s3(uri)
        where = f" at {redact_url(s3_endpoint).rstrip('/').lower()}" if s3_endpoint else ""
        return f"s3://{loc.bucket}/{loc.key}".rstrip("/") + where
    return uri.rstrip("/") or uri
