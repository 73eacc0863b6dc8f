"""HDFS for the command line: :class:`WebHdfsStorage`, Hadoop's WebHDFS REST API over HTTP.

A process without a Spark driver (``flinkish run``, ``list``, ``savepoint``, ``flinkish
web``) has no Hadoop client: :mod:`.hdfs` needs a driver's JVM. The NameNode serves the same
file system over HTTP (WebHDFS, on by default, ``dfs.webhdfs.enabled``), so the command line
reaches ``hdfs://`` paths through it with Python's own HTTP client: the job registry under an
``execution.checkpointing.dir`` on HDFS, savepoints on HDFS, their copies.

- The NameNode's HTTP address: Hadoop's ``dfs.namenode.http-address``, given as
  ``flink.hadoop.dfs.namenode.http-address`` (as Flink passes Hadoop settings), else the
  host of the ``hdfs://`` URI and Hadoop 3's default port, :data:`DEFAULT_HTTP_PORT`.
- The user: ``HADOOP_USER_NAME`` when set, else the login name, as Hadoop's own client with
  simple authentication (``user.name``). A Kerberos cluster's SPNEGO is not supported.
- Reads and writes of file contents are redirected by the NameNode to a DataNode (HTTP 307),
  whose address the NameNode advertises.
- Atomic writes as :mod:`.hdfs` makes them: a temporary file beside the target, then the
  NameNode's rename with ``OVERWRITE``; exclusive creation renames with ``NONE``, which the
  NameNode refuses atomically when the name exists.
- Proxies from the environment are never used: the NameNode is reached directly.
"""

from __future__ import annotations

import contextlib
import getpass
import http.client
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any, BinaryIO

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import (
    CHUNK,
    FileInfo,
    Storage,
    StorageNotFoundError,
    is_temp,
    temp_name,
)
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.uri import join, local_path

#: The NameNode's HTTP port when ``dfs.namenode.http-address`` is not given (Hadoop 3's).
DEFAULT_HTTP_PORT = 9870
#: The Hadoop setting naming the NameNode's HTTP address (host:port).
HTTP_ADDRESS_KEY = "dfs.namenode.http-address"

_NOT_FOUND = ("FileNotFoundException",)
#: How many times a whole-file read cut short is tried (:meth:`WebHdfsStorage.read_bytes`).
SHORT_READS = 3
_EXISTS = ("FileAlreadyExistsException",)
_DENIED = ("AccessControlException", "SecurityException")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are followed by hand: a PUT's body goes only to the DataNode."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class WebHdfsStorage(Storage):
    """Files on HDFS through the NameNode's WebHDFS REST API (no JVM needed)."""

    scheme = "hdfs"

    def __init__(self, root: str, settings: StorageSettings | None = None) -> None:
        super().__init__(root, settings)
        self._user = os.environ.get("HADOOP_USER_NAME") or _login_name()
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def describe(self) -> str:
        return f"{self.root} (through WebHDFS)"

    # -- HTTP ------------------------------------------------------------------------------
    def _base(self, path: str) -> tuple[str, str]:
        """The NameNode's ``http://host:port`` for ``path``, and the path on HDFS."""
        parsed = urllib.parse.urlsplit(path)
        if parsed.scheme != "hdfs" or not parsed.hostname:
            raise StorageError(
                f"{path} names no NameNode.",
                "Write HDFS paths as hdfs://namenode:port/path.",
            )
        address = self.settings.hadoop_conf.get(HTTP_ADDRESS_KEY)
        if not address:
            address = f"{parsed.hostname}:{DEFAULT_HTTP_PORT}"
        return f"http://{address}", parsed.path or "/"

    def _url(self, path: str, op: str, **params: str) -> str:
        base, hdfs_path = self._base(path)
        query = urllib.parse.urlencode({"op": op, "user.name": self._user, **params})
        return f"{base}/webhdfs/v1{urllib.parse.quote(hdfs_path)}?{query}"

    def _request(
        self, method: str, url: str, data: Any = None, follow: bool = True
    ) -> http.client.HTTPResponse:
        """The answer to ``method url``, a redirect followed once (with the body); an HTTP
        error as :class:`urllib.error.HTTPError`."""
        timeout = self.settings.read_timeout
        for _hop in range(3):
            request = urllib.request.Request(url, data=None, method=method)
            if data is not None and not follow:  # the body goes to the DataNode only
                request.data = data
                request.add_header("Content-Type", "application/octet-stream")
                if not isinstance(data, bytes):
                    request.add_header("Content-Length", str(os.fstat(data.fileno()).st_size))
            try:
                return self._opener.open(request, timeout=timeout)
            except urllib.error.HTTPError as error:
                location = error.headers.get("Location") if error.code in (307, 302) else None
                if location is None:
                    raise
                error.close()
                url, follow = location, False
        raise StorageError(f"Too many redirects from the NameNode for {url}.")

    def _json(self, method: str, path: str, op: str, **params: str) -> Any:
        with self._request(method, self._url(path, op, **params)) as response:
            return json.loads(response.read() or b"null")

    def _storage_error(self, error: Exception, action: str, path: str) -> StorageError | None:
        if isinstance(error, urllib.error.HTTPError):
            kind, message = _remote_exception(error)
            detail = self.settings.redact(message or f"HTTP {error.code}")
            if error.code == 404 or kind in _NOT_FOUND:
                return StorageNotFoundError(path)
            if error.code in (401, 403) and (kind in _DENIED or error.code == 401):
                return StorageError(
                    f"Permission denied: cannot {action} {path}: {detail}",
                    f"Check the HDFS permissions of the path for the user {self._user} "
                    "(HADOOP_USER_NAME).",
                )
            return StorageError(f"Cannot {action} {path}: {kind or 'error'}: {detail}")
        if isinstance(error, (urllib.error.URLError, OSError, http.client.HTTPException)):
            reason = getattr(error, "reason", error)
            base = self._base(path)[0] if path.startswith("hdfs://") else "the NameNode"
            return StorageError(
                f"Cannot reach the NameNode's WebHDFS at {base} (to {action} {path}): {reason}",
                "Check that HDFS is up, and its HTTP address: "
                f"flink.hadoop.{HTTP_ADDRESS_KEY} (default: the path's host, port "
                f"{DEFAULT_HTTP_PORT}).",
            )
        return None

    # -- queries ---------------------------------------------------------------------------
    def _status(self, path: str) -> dict[str, Any] | None:
        try:
            return self._json("GET", path, "GETFILESTATUS")["FileStatus"]
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def exists(self, path: str) -> bool:
        with self._errors("read", path):
            return self._status(path) is not None

    def is_dir(self, path: str) -> bool:
        with self._errors("read", path):
            status = self._status(path)
            return status is not None and status["type"] == "DIRECTORY"

    @staticmethod
    def _info(path: str, status: dict[str, Any], name: str | None = None) -> FileInfo:
        is_dir = status["type"] == "DIRECTORY"
        return FileInfo(
            path,
            name or path.rstrip("/").rpartition("/")[2],
            0 if is_dir else int(status["length"]),
            is_dir,
            int(status["modificationTime"]) / 1000.0,
        )

    def stat(self, path: str) -> FileInfo:
        with self._errors("read", path):
            status = self._status(path)
            if status is None:
                raise StorageNotFoundError(path)
            return self._info(path, status)

    def _children(self, path: str) -> list[dict[str, Any]] | None:
        """The NameNode's listing of the directory ``path`` (None when missing)."""
        try:
            listed = self._json("GET", path, "LISTSTATUS")["FileStatuses"]["FileStatus"]
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise
        if len(listed) == 1 and listed[0].get("pathSuffix") == "" and listed[0]["type"] == "FILE":
            raise StorageError(f"{path} is a file, not a directory.")
        return listed

    def list(self, path: str) -> list[FileInfo]:
        with self._errors("list", path):
            found = [
                self._info(join(path, status["pathSuffix"]), status, status["pathSuffix"])
                for status in self._children(path) or []
                if not is_temp(status["pathSuffix"])
            ]
        return sorted(found, key=lambda info: info.name)

    def walk(self, path: str) -> Iterator[FileInfo]:
        with self._errors("list", path):
            pending = [("", self._children(path) or [])]
            while pending:
                prefix, statuses = pending.pop()
                for status in sorted(statuses, key=lambda s: s["pathSuffix"]):
                    name = status["pathSuffix"]
                    relative = f"{prefix}{name}"
                    if status["type"] == "DIRECTORY":
                        pending.append((f"{relative}/", self._children(join(path, relative)) or []))
                    elif not is_temp(name):
                        yield self._info(join(path, relative), status, name)

    # -- reading ---------------------------------------------------------------------------
    def open_read(self, path: str) -> BinaryIO:
        with self._errors("read", path):
            return self._request("GET", self._url(path, "OPEN"))  # type: ignore[return-value]

    def read_bytes(self, path: str) -> bytes:
        """The whole file; a read cut short is read again (:data:`SHORT_READS` times at most):
        the file was replaced while it streamed, as a job's status file is every few seconds
        (an atomic rename deletes the blocks the DataNode was sending)."""
        with self._errors("read", path):
            for attempt in range(SHORT_READS):
                with self.open_read(path) as stream:
                    try:
                        return stream.read()
                    except http.client.IncompleteRead:
                        if attempt == SHORT_READS - 1:
                            raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def read_if_changed(self, path: str, version: str | None) -> tuple[str | None, bytes | None]:
        """The version is the file's modification time and length on the NameNode."""
        with self._errors("read", path):
            status = self._status(path)
            if status is None or status["type"] != "FILE":
                raise StorageNotFoundError(path)
            current = f"{status['modificationTime']}-{status['length']}"
            if current == version:
                return version, None
            return current, self.read_bytes(path)

    def download_file(self, src: str, local_dest: str) -> None:
        target = local_path(local_dest)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        tmp = temp_name(target)
        try:
            with self.open_read(src) as stream, open(tmp, "wb") as out, self._errors("read", src):
                shutil.copyfileobj(stream, out, CHUNK)
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    # -- writing ---------------------------------------------------------------------------
    def _write(self, path: str, data: bytes | BinaryIO, overwrite: bool) -> bool:
        """Write ``data`` (bytes, or a local file open for reading) to a temporary file
        beside ``path``, then rename it onto ``path``; False when ``overwrite`` is off and
        ``path`` exists."""
        with self._errors("write", path):
            tmp = temp_name(path)
            url = self._url(tmp, "CREATE", overwrite="true")
            self._request("PUT", url, data=data).close()
            try:
                _, hdfs_path = self._base(path)
                options = "OVERWRITE" if overwrite else "NONE"
                try:
                    answer = self._json(
                        "PUT", tmp, "RENAME", destination=hdfs_path, renameoptions=options
                    )
                except urllib.error.HTTPError as error:
                    if not overwrite and _remote_exception(error)[0] in _EXISTS:
                        return False
                    raise
                return answer is None or answer.get("boolean", True) is not False
            finally:
                with contextlib.suppress(Exception):
                    self._json("DELETE", tmp, "DELETE", recursive="false")

    def write_bytes(self, path: str, data: bytes) -> None:
        self._write(path, data, overwrite=True)

    def write_stream(self, path: str, stream: BinaryIO) -> None:
        with tempfile.TemporaryFile(prefix="flinkish-webhdfs-") as spool:
            shutil.copyfileobj(stream, spool, CHUNK)
            spool.seek(0)
            self._write(path, spool, overwrite=True)  # type: ignore[arg-type]

    def create_exclusive(self, path: str, data: bytes) -> bool:
        return self._write(path, data, overwrite=False)

    def upload_file(self, local_src: str, dest: str) -> None:
        source = local_path(local_src)
        if not os.path.isfile(source):
            raise StorageNotFoundError(local_src)
        with open(source, "rb") as stream:
            self._write(dest, stream, overwrite=True)

    def mkdirs(self, path: str) -> None:
        with self._errors("create the directory", path):
            self._json("PUT", path, "MKDIRS")

    def delete(self, path: str) -> None:
        with self._errors("delete", path):
            status = self._status(path)
            if status is None:
                return
            if status["type"] == "DIRECTORY":
                raise StorageError(
                    f"{path} is a directory; delete() removes files only.",
                    "Use delete_tree() for directories.",
                )
            self._json("DELETE", path, "DELETE", recursive="false")

    def delete_tree(self, path: str) -> None:
        if self._base(path)[1].rstrip("/") == "":
            raise StorageError(f"Refusing to delete the whole file system ({path}).")
        with self._errors("delete", path):
            self._json("DELETE", path, "DELETE", recursive="true")


def _login_name() -> str:
    """The login name, as Hadoop's client takes it (a user without one: the uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _remote_exception(error: urllib.error.HTTPError) -> tuple[str, str]:
    """The Java exception's simple name and message in a WebHDFS error body."""
    try:
        body = json.loads(error.read() or b"{}").get("RemoteException", {})
    except (ValueError, OSError, AttributeError):
        return "", ""
    message = str(body.get("message") or "").strip()
    return str(body.get("exception", "")), message.splitlines()[0] if message else ""
