"""HDFS (any Hadoop file system) as a :class:`~flinkish_cli.storage.base.Storage`, over py4j.

This module owns flinkish's access to ``hdfs://`` paths. There is no HDFS client in Python
here: the operations are calls to Hadoop's ``FileSystem``, ``FileContext``, ``Path`` and
``FileUtil`` in the JVM of a Spark driver, through PySpark's py4j gateway. So an
:class:`HdfsStorage` needs a live JVM: given explicitly (``jvm`` and ``hadoop_conf``, e.g.
``sc._jvm`` and ``sc._jsc.hadoopConfiguration()``), or found in this process (an active
SparkContext, or the gateway of a driver started by ``spark-submit``). The plain CLI has
none: :func:`flinkish_cli.storage.open_storage` gives it :mod:`.webhdfs` instead.
pyspark is never imported here: only looked up when something else already imported it.

py4j moves bytes from the JVM to Python slowly (its decoder handles one byte at a time), so
only small files (up to :data:`SMALL`) cross the gateway; bigger reads and writes go through
a local temporary file that Hadoop copies (``copyToLocalFile``/``copyFromLocalFile``; the
driver's JVM always runs on the driver's host), and :meth:`HdfsStorage.checksum` hashes in
the JVM.

Atomic writes go to a temporary file beside the target, then ``FileContext.rename`` with
``OVERWRITE`` (atomic on HDFS, as Spark's own checkpoint manager does); exclusive creation
renames with ``NONE``, which the namenode refuses atomically if the name exists (on other
Hadoop file systems, e.g. the local one, that check is not atomic). Because the class only
uses Hadoop's generic API it works with any URI Hadoop knows (``file:///`` included).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import (
    CHUNK,
    TRANSFERRED,
    FileInfo,
    Storage,
    StorageNotFoundError,
    is_temp,
    temp_name,
)
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.uri import join, local_path

SMALL = 256 * 1024
"""Files up to this size cross py4j directly; bigger ones go through a local file."""

_NOT_FOUND = ("java.io.FileNotFoundException",)
_EXISTS = ("org.apache.hadoop.fs.FileAlreadyExistsException",)
_DENIED = (
    "org.apache.hadoop.security.AccessControlException",
    "java.nio.file.AccessDeniedException",
)
_UNREACHABLE = (
    "java.net.ConnectException",
    "java.net.UnknownHostException",
    "java.net.NoRouteToHostException",
    "java.net.SocketTimeoutException",
    "org.apache.hadoop.ipc.StandbyException",
    "org.apache.hadoop.net.ConnectTimeoutException",
)
_NO_FILESYSTEM = ("org.apache.hadoop.fs.UnsupportedFileSystemException",)


def find_live_jvm() -> tuple[Any, Any] | None:
    """``(jvm, hadoop Configuration)`` of a Spark driver in this process, or None.

    An active SparkContext gives its own Hadoop configuration; a driver whose gateway is up
    but whose context is not yet (as early in flinkish's driver) gets the configuration
    Spark will use (``SparkHadoopUtil.newConfiguration(new SparkConf())``).
    """
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark import SparkContext
    except ImportError:  # pragma: no cover
        return None
    sc = SparkContext._active_spark_context
    if sc is not None:
        return sc._jvm, sc._jsc.hadoopConfiguration()
    jvm = SparkContext._jvm
    if jvm is None:
        return None
    try:
        spark_conf = jvm.org.apache.spark.SparkConf()
        conf = jvm.org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(spark_conf)
    except Exception:
        conf = jvm.org.apache.hadoop.conf.Configuration()
    return jvm, conf


class HdfsStorage(Storage):
    """Files on HDFS (or any Hadoop file system), through the JVM of a Spark driver."""

    scheme = "hdfs"

    def __init__(
        self,
        root: str,
        settings: StorageSettings | None = None,
        *,
        jvm: Any = None,
        hadoop_conf: Any = None,
    ) -> None:
        super().__init__(root, settings)
        if jvm is None:
            found = find_live_jvm()
            if found is None:
                raise StorageError(
                    f"{root}: Hadoop's client needs a Spark driver's JVM, and this process "
                    "runs without one.",
                    "Open hdfs:// paths with flinkish_cli.storage.open_storage, which uses the "
                    "NameNode's WebHDFS where there is no driver.",
                )
            jvm, found_conf = found
            hadoop_conf = hadoop_conf if hadoop_conf is not None else found_conf
        if hadoop_conf is None:
            hadoop_conf = jvm.org.apache.hadoop.conf.Configuration()
        if self.settings.hadoop_conf:
            hadoop_conf = jvm.org.apache.hadoop.conf.Configuration(hadoop_conf)  # a copy
            for key, value in self.settings.hadoop_conf.items():
                hadoop_conf.set(key, value)
        self._jvm = jvm
        self._conf = hadoop_conf
        self._filesystems: dict[str, Any] = {}
        self._lock = threading.Lock()
        rename = getattr(jvm.org.apache.hadoop.fs, "Options$Rename")
        self._rename_overwrite = self._rename_options(rename.OVERWRITE)
        self._rename_none = self._rename_options(rename.NONE)

    def _rename_options(self, option: Any) -> Any:
        array = self._jvm.java.lang.reflect.Array.newInstance(option.getDeclaringClass(), 1)
        array[0] = option
        return array

    def describe(self) -> str:
        return f"{self.root} (through Hadoop)"

    # -- the JVM side ----------------------------------------------------------------------
    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def _fs(self, path: str) -> Any:
        """The Hadoop FileSystem of ``path`` (one per scheme and authority)."""
        scheme, _, rest = path.partition("://")
        key = f"{scheme}://{rest.partition('/')[0]}" if rest else path
        fs = self._filesystems.get(key)
        if fs is None:
            with self._lock:
                fs = self._filesystems.get(key)
                if fs is None:
                    fs = self._path(path).getFileSystem(self._conf)
                    self._filesystems[key] = fs
        return fs

    def _rename(self, src: str, dest: str, overwrite: bool) -> None:
        target = self._path(dest)
        context = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(
            target.toUri(), self._conf
        )
        options = self._rename_overwrite if overwrite else self._rename_none
        context.rename(self._path(src), target, options)

    def _storage_error(self, error: Exception, action: str, path: str) -> StorageError | None:
        return _translate(error, action, path, self.settings)

    # -- queries ---------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        with self._errors("read", path):
            return bool(self._fs(path).exists(self._path(path)))

    def is_dir(self, path: str) -> bool:
        try:
            return self.stat(path).is_dir
        except StorageNotFoundError:
            return False

    def stat(self, path: str) -> FileInfo:
        with self._errors("read", path):
            status = self._fs(path).getFileStatus(self._path(path))
            return self._info(path, status)

    @staticmethod
    def _info(path: str, status: Any, name: str | None = None) -> FileInfo:
        is_dir = bool(status.isDirectory())
        return FileInfo(
            path,
            name or path.rstrip("/").rpartition("/")[2],
            0 if is_dir else int(status.getLen()),
            is_dir,
            status.getModificationTime() / 1000.0,
        )

    def list(self, path: str) -> list[FileInfo]:
        found = []
        with self._errors("list", path):
            fs, directory = self._fs(path), self._path(path)
            if not fs.exists(directory):
                return []
            if not fs.getFileStatus(directory).isDirectory():
                raise StorageError(f"{path} is a file, not a directory.")
            for status in fs.listStatus(directory):
                name = status.getPath().getName()
                if not is_temp(name):
                    found.append(self._info(join(path, name), status, name))
        return sorted(found, key=lambda info: info.name)

    def walk(self, path: str) -> Iterator[FileInfo]:
        with self._errors("list", path):
            fs, directory = self._fs(path), self._path(path)
            if not fs.exists(directory):
                return
            root = fs.makeQualified(directory).toUri().getPath().rstrip("/") + "/"
            files = fs.listFiles(directory, True)
            while files.hasNext():
                status = files.next()
                full = status.getPath().toUri().getPath()
                relative = full[len(root) :] if full.startswith(root) else full.lstrip("/")
                name = relative.rpartition("/")[2]
                if not is_temp(name):
                    yield self._info(join(path, relative), status, name)

    # -- reading ---------------------------------------------------------------------------
    # py4j moves a Java byte[] to Python slowly (about a microsecond per byte), so only small
    # files travel that way; bigger ones go through a local temporary file that the JVM
    # writes (the driver's JVM always runs on the driver's host).
    def open_read(self, path: str) -> BinaryIO:
        with self._errors("read", path):
            if int(self._fs(path).getFileStatus(self._path(path)).getLen()) <= SMALL:
                return io.BytesIO(self._read_small(path))  # type: ignore[return-value]
        with self._local_copy(path) as local:
            stream = open(local, "rb")  # noqa: SIM115 (the caller closes it)
        return stream  # type: ignore[return-value]  # still readable: open before unlinked

    def read_bytes(self, path: str) -> bytes:
        with self._errors("read", path):
            if int(self._fs(path).getFileStatus(self._path(path)).getLen()) <= SMALL:
                return self._read_small(path)
        with self._local_copy(path) as local, open(local, "rb") as stream:
            return stream.read()

    def _read_small(self, path: str) -> bytes:
        stream = self._fs(path).open(self._path(path))
        try:
            return bytes(stream.readAllBytes())
        finally:
            stream.close()

    def checksum(self, path: str) -> str:
        """SHA-256 computed in the JVM as it streams the file (commons-codec, on Spark's
        class path), so the bytes never cross into Python."""
        from py4j.protocol import Py4JError, Py4JJavaError

        with self._errors("read", path):
            stream = self._fs(path).open(self._path(path))
            try:
                return str(self._jvm.org.apache.commons.codec.digest.DigestUtils.sha256Hex(stream))
            except Py4JJavaError:
                raise
            except Py4JError:  # no commons-codec in this JVM: hash a local copy instead
                pass
            finally:
                stream.close()
        return super().checksum(path)

    @contextlib.contextmanager
    def _local_copy(self, path: str) -> Iterator[str]:
        """A temporary local copy of ``path``, removed afterwards."""
        directory = tempfile.mkdtemp(prefix="flinkish-hdfs-")
        local = os.path.join(directory, "copy")
        try:
            with self._errors("read", path):
                # useRawLocalFileSystem=True: no ".crc" file beside the copy
                self._fs(path).copyToLocalFile(False, self._path(path), self._path(local), True)
            yield local
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def download_file(self, src: str, local_dest: str) -> None:
        dest = local_path(local_dest)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = temp_name(dest)
        with self._errors("download", src):
            try:
                self._fs(src).copyToLocalFile(False, self._path(src), self._path(tmp), True)
                os.replace(tmp, dest)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    # -- writing ---------------------------------------------------------------------------
    def _write_temp(self, path: str, chunks: Iterator[bytes]) -> str:
        tmp = temp_name(path)
        stream = self._fs(path).create(self._path(tmp), True)
        try:
            for chunk in chunks:
                stream.write(chunk)
        finally:
            stream.close()
        return tmp

    def _write(self, path: str, chunks: Iterator[bytes], overwrite: bool) -> bool:
        with self._errors("write", path):
            tmp = self._write_temp(path, chunks)
            try:
                self._rename(tmp, path, overwrite)
                return True
            except Exception as error:
                if not overwrite and _java_class_in(error, _EXISTS):
                    return False
                raise
            finally:
                with contextlib.suppress(Exception):
                    self._fs(path).delete(self._path(tmp), False)

    def write_bytes(self, path: str, data: bytes) -> None:
        if len(data) <= SMALL:
            self._write(path, _slices(data), overwrite=True)
        else:
            self.write_stream(path, io.BytesIO(data))  # type: ignore[arg-type]

    def write_stream(self, path: str, stream: BinaryIO) -> None:
        with tempfile.TemporaryDirectory(prefix="flinkish-hdfs-") as directory:
            local = os.path.join(directory, "upload")
            with open(local, "wb") as out:
                shutil.copyfileobj(stream, out, CHUNK)
            self.upload_file(local, path)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        return self._write(path, _slices(data), overwrite=False)

    def upload_file(self, local_src: str, dest: str) -> None:
        source = local_path(local_src)
        if not os.path.isfile(source):
            raise StorageNotFoundError(local_src)
        with self._errors("upload to", dest):
            tmp = temp_name(dest)
            try:
                self._fs(dest).copyFromLocalFile(False, True, self._path(source), self._path(tmp))
                self._rename(tmp, dest, overwrite=True)
            finally:
                with contextlib.suppress(Exception):
                    self._fs(dest).delete(self._path(tmp), False)

    def mkdirs(self, path: str) -> None:
        with self._errors("create the directory", path):
            self._fs(path).mkdirs(self._path(path))

    def delete(self, path: str) -> None:
        with self._errors("delete", path):
            fs, target = self._fs(path), self._path(path)
            if fs.exists(target) and fs.getFileStatus(target).isDirectory():
                raise StorageError(
                    f"{path} is a directory; delete() removes files only.",
                    "Use delete_tree() for directories.",
                )
            fs.delete(target, False)

    def delete_tree(self, path: str) -> None:
        target = self._path(path)
        if target.isRoot():
            raise StorageError(f"Refusing to delete the whole file system ({path}).")
        with self._errors("delete", path):
            self._fs(path).delete(target, True)

    # -- copying ---------------------------------------------------------------------------
    def _copy_file(
        self, src: str, dest: Storage, dest_path: str, size: int | None, link: bool
    ) -> str:
        if isinstance(dest, HdfsStorage) and dest._jvm is self._jvm:
            # Hadoop to Hadoop: the bytes flow inside the JVM, not through Python.
            with self._errors("copy", src):
                tmp = temp_name(dest_path)
                try:
                    self._jvm.org.apache.hadoop.fs.FileUtil.copy(
                        self._fs(src),
                        self._path(src),
                        dest._fs(dest_path),
                        dest._path(tmp),
                        False,
                        dest._conf,
                    )
                    dest._rename(tmp, dest_path, overwrite=True)
                finally:
                    with contextlib.suppress(Exception):
                        dest._fs(dest_path).delete(dest._path(tmp), False)
            return TRANSFERRED
        target = dest.local_path(dest_path)
        if target is not None:
            self.download_file(src, target)
        else:  # e.g. to S3: the JVM writes a local copy, the destination uploads it
            with self._local_copy(src) as local:
                dest.upload_file(local, dest_path)
        return TRANSFERRED


def _slices(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), CHUNK):
        yield data[start : start + CHUNK]


def _java_classes(error: BaseException) -> list[str]:
    """The class names of a Py4JJavaError's Java exception and its causes."""
    java = getattr(error, "java_exception", None)
    names: list[str] = []
    while java is not None and len(names) < 10:
        try:
            names.append(str(java.getClass().getName()))
            if names[-1] == "org.apache.hadoop.ipc.RemoteException":
                names.append(str(java.getClassName()))
            java = java.getCause()
        except Exception:
            break
    return names


def _java_class_in(error: BaseException, wanted: tuple[str, ...]) -> bool:
    return any(name in wanted for name in _java_classes(error))


def _translate(
    error: BaseException, action: str, path: str, settings: StorageSettings
) -> StorageError | None:
    try:
        from py4j.protocol import Py4JError, Py4JJavaError
    except ImportError:  # pragma: no cover
        return None
    if isinstance(error, Py4JJavaError):
        names = _java_classes(error)
        try:
            first_line = str(error.java_exception.getMessage() or names[0]).splitlines()[0]
        except Exception:
            first_line = names[0] if names else "unknown error"
        detail = settings.redact(first_line)
        if any(n in _NOT_FOUND for n in names):
            return StorageNotFoundError(path)
        if any(n in _DENIED for n in names):
            return StorageError(
                f"Permission denied: cannot {action} {path}: {detail}",
                "Check the HDFS permissions of the path for the user the Spark driver runs as.",
            )
        if any(n in _UNREACHABLE for n in names):
            return StorageError(
                f"Cannot reach the file system of {path} (to {action} it): {detail}",
                "Check the namenode in the path (hdfs://host:port/...) and fs.defaultFS, and "
                "that HDFS is up and reachable from the driver.",
            )
        if any(n in _NO_FILESYSTEM for n in names):
            return StorageError(
                f"Hadoop has no file system for {path}: {detail}",
                "Add the Hadoop client for that scheme to the job's classpath.",
            )
        return StorageError(f"Cannot {action} {path}: {names[0] if names else 'error'}: {detail}")
    if isinstance(error, Py4JError):
        return StorageError(
            f"Cannot {action} {path}: the Spark driver's JVM does not answer "
            f"({settings.redact(str(error).splitlines()[0] if str(error) else 'py4j error')}).",
            "The Spark session has stopped; HDFS is reachable only while it runs.",
        )
    return None
