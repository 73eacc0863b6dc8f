"""The :class:`Storage` interface that every backend implements, and what they share.

This module owns the contract (what each operation promises, on every backend), the value
types :class:`FileInfo` and :class:`CopyStats`, :class:`StorageNotFoundError`, and the
backend-independent parts: text helpers, streaming SHA-256, and the parallel driver of
:meth:`Storage.copy_tree`, which asks the source backend how to copy each file
(:meth:`Storage._copy_file`) so each pair of backends can use its fast path.

Contract, for all backends:

- paths are full URIs or local paths, as strings; paths returned by :meth:`Storage.list` and
  :meth:`Storage.walk` are the directory *as the caller spelled it* joined with the
  relative name, so ``relative_to(dir, info.path)`` always works;
- writes are atomic: a reader sees the old content or the new, never part of a file;
- a missing file read raises :class:`StorageNotFoundError` (both a ``StorageError`` and a
  ``FileNotFoundError``); listing a missing directory gives nothing (S3 cannot tell a missing
  "directory" from an empty one, so no backend does);
- every failure a user can fix is a :class:`~flinkish_cli.errors.StorageError` with a hint,
  and no message ever contains an S3 key;
- :meth:`Storage.copy_tree` copies regular files only: it never copies through a symbolic
  link (the local disk refuses one), and :meth:`Storage.special_entries` finds what a tree
  holds besides files and directories, so a savepoint with a link can be refused before it
  is read, restored or deleted;
- :meth:`Storage.sync_tree` makes a tree durable (``fsync`` of every file and directory on
  the local disk; S3 objects and closed HDFS files are durable already);
- :meth:`Storage.read_if_changed` lets a long-running reader keep what it read and ask
  again cheaply: it returns the file's version (an ETag on S3, the inode, times and size on
  the local disk) and the content only when the version is not the one the reader has;
- :meth:`Storage.location` names where a path is, the same in every process that reaches
  it the same way, never with a secret (processes compare it to know they share a
  registry).
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import errno
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from flinkish_cli.config.units import human_bytes
from flinkish_cli.errors import StorageError
from flinkish_cli.storage.settings import StorageSettings
from flinkish_cli.storage.uri import check_relative, join, location, relative_to

if TYPE_CHECKING:
    from concurrent.futures import Future

CHUNK = 1024 * 1024
"""Bytes read at a time when streaming (checksums, copies between backends)."""

TEMP_MARK = ".flinkish-tmp"
"""Atomic writes use temporary files ``.<name>.<random><TEMP_MARK>``; listings skip them."""


def temp_name(path: str) -> str:
    """A fresh temporary name beside ``path`` (hidden, and skipped by listings)."""
    head, _, name = path.rstrip("/").rpartition("/")
    return f"{head}/.{name}.{uuid.uuid4().hex[:12]}{TEMP_MARK}"


def is_temp(name: str) -> bool:
    """Whether ``name`` is one of :func:`temp_name`'s."""
    return name.startswith(".") and name.endswith(TEMP_MARK)


LINKED, SERVER_SIDE, TRANSFERRED = "linked", "server_side", "transferred"
#: a file the caller allowed to vanish, gone when its copy started (not a CopyStats field)
VANISHED = "vanished"


class StorageNotFoundError(StorageError, FileNotFoundError):
    """A file that does not exist (catch it as ``FileNotFoundError`` or ``StorageError``)."""

    def __init__(self, path: str, hint: str | None = None) -> None:
        super().__init__(f"{path} does not exist.", hint)
        self.errno = errno.ENOENT
        self.filename = path
        self.path = path


@dataclass(frozen=True)
class FileInfo:
    """One entry of a listing: a file, or a directory (``size`` 0, and on S3 ``mtime`` None)."""

    path: str
    name: str
    size: int
    is_dir: bool
    mtime: float | None = None
    #: the object's ETag, without quotes, where a listing carries one (S3); else None
    etag: str | None = None


@dataclass
class CopyStats:
    """What :meth:`Storage.copy_tree` did: files and bytes, and how each file travelled."""

    files: int = 0
    bytes: int = 0
    linked: int = 0
    server_side: int = 0
    transferred: int = 0
    seconds: float = 0.0
    #: files the caller allowed to vanish (``may_vanish``) that were gone when their turn came
    vanished: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        how = [
            f"{n} {label}"
            for n, label in (
                (self.linked, "hard-linked"),
                (self.server_side, "copied server-side"),
                (self.transferred, "transferred"),
            )
            if n
        ]
        if self.vanished:
            how.append(f"{len(self.vanished)} gone before their copy")
        detail = f" ({', '.join(how)})" if how else ""
        return f"{self.files} files, {human_bytes(self.bytes)} in {self.seconds:.2f} s{detail}"


class Storage(abc.ABC):
    """A file system reached by URI: the local disk, S3, or HDFS (see the module contract)."""

    scheme: str = ""
    #: whether :meth:`list` gives each file's ETag (:attr:`FileInfo.etag`): one request then
    #: tells which of many small files changed
    etags_in_listings: bool = False

    def __init__(self, root: str, settings: StorageSettings | None = None) -> None:
        self.root = root
        self.settings = settings or StorageSettings()

    # -- errors ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self, action: str, path: str) -> Iterator[None]:
        """Turn the backend's own exceptions into :class:`StorageError`s for ``action``."""
        try:
            yield
        except StorageError:
            raise
        except Exception as error:
            translated = self._storage_error(error, action, path)
            if translated is None:
                raise
            raise translated from error

    def _storage_error(self, error: Exception, action: str, path: str) -> StorageError | None:
        """The :class:`StorageError` that ``error`` means, or None to let it through."""
        return None

    # -- description -----------------------------------------------------------------------
    @abc.abstractmethod
    def describe(self) -> str:
        """A short description for messages (never with secrets)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    def location(self, path: str) -> str:
        """Where ``path`` is, as a string two processes compare to know they reach the same
        files (the same on every host that reaches them the same way), never with a secret.
        Here: :func:`~.uri.location` without an S3 endpoint; S3 gives its own."""
        return location(path)

    def local_path(self, path: str) -> str | None:
        """Where ``path`` is on this machine's file system, or None when this storage is not
        the local file system (a copy to it must then go through this process or a server)."""
        return None

    # -- queries ---------------------------------------------------------------------------
    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file or a directory (on S3: a key, or a prefix ``path/``)."""

    @abc.abstractmethod
    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (on S3: some key starts with ``path/``)."""

    @abc.abstractmethod
    def stat(self, path: str) -> FileInfo:
        """The :class:`FileInfo` of the file ``path``; :class:`StorageNotFoundError` if none."""

    def size(self, path: str) -> int:
        """The size of the file ``path`` in bytes."""
        return self.stat(path).size

    @abc.abstractmethod
    def list(self, path: str) -> list[FileInfo]:
        """The immediate children of the directory ``path``, files and directories."""

    @abc.abstractmethod
    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file under the directory ``path``, at any depth (directories are not given)."""

    def special_entries(self, path: str, limit: int = 10) -> builtins.list[tuple[str, str]]:
        """What the tree at ``path`` holds besides regular files and directories: symbolic
        links (at any depth, never followed), named pipes, sockets, devices; at most
        ``limit`` of them, as ``(relative path, kind)``.

        The directory ``path`` itself may be a link (only what is under it counts). S3 has
        nothing of the kind; HDFS symbolic links are disabled by default and not looked for.
        """
        return []

    # -- reading ---------------------------------------------------------------------------
    @abc.abstractmethod
    def open_read(self, path: str) -> BinaryIO:
        """A binary stream of the file ``path`` (close it, or use it in a ``with``)."""

    def read_bytes(self, path: str) -> bytes:
        """The whole content of the file ``path``."""
        with self.open_read(path) as stream:
            return stream.read()

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def read_if_changed(self, path: str, version: str | None) -> tuple[str | None, bytes | None]:
        """The file's version and its content, or ``(version, None)`` when its version is
        still ``version`` (the caller's copy is the file). The version and the content
        returned always belong together. :class:`StorageNotFoundError` for a missing file.

        Here, without a cheap version: read every time, version None (nothing is kept)."""
        return None, self.read_bytes(path)

    def checksum(self, path: str) -> str:
        """The SHA-256 (hex) of the file ``path``, read as a stream."""
        import hashlib

        digest = hashlib.sha256()
        with self.open_read(path) as stream:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    @abc.abstractmethod
    def download_file(self, src: str, local_path: str) -> None:
        """Copy the file ``src`` to the local file ``local_path`` (atomically, streaming)."""

    # -- writing ---------------------------------------------------------------------------
    @abc.abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file ``path`` with ``data`` atomically (creating directories)."""

    def write_text(self, path: str, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(path, text.encode(encoding))

    @abc.abstractmethod
    def write_stream(self, path: str, stream: BinaryIO) -> None:
        """Replace the file ``path`` with what ``stream`` holds, atomically, without holding
        it all in memory."""

    @abc.abstractmethod
    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create the file ``path`` with ``data`` unless it exists; whether it was created."""

    @abc.abstractmethod
    def upload_file(self, local_path: str, dest: str) -> None:
        """Copy the local file ``local_path`` to ``dest`` (atomically, streaming)."""

    @abc.abstractmethod
    def mkdirs(self, path: str) -> None:
        """Create the directory ``path`` and its parents (nothing to do on S3)."""

    @abc.abstractmethod
    def delete(self, path: str) -> None:
        """Delete the file ``path``; nothing happens if it does not exist."""

    @abc.abstractmethod
    def delete_tree(self, path: str) -> None:
        """Delete the directory ``path`` and everything under it; fine if it is missing.

        Symbolic links under it are removed, never followed: nothing outside ``path`` is
        deleted."""

    def sync_tree(self, path: str) -> None:
        """Make every file and directory under ``path`` durable (and ``path``'s own entry in
        its parent), before a manifest that vouches for them is written.

        Nothing to do here: an S3 object is durable once its upload completed, an HDFS file
        once it was closed. The local disk overrides this with ``fsync``.
        """
        return None

    # -- copying ---------------------------------------------------------------------------
    def copy_tree(
        self,
        src_dir: str,
        dest_storage: Storage,
        dest_dir: str,
        files: Iterable[str] | None = None,
        link: bool = True,
        may_vanish: Collection[str] = (),
    ) -> CopyStats:
        """Copy ``files`` (paths relative to ``src_dir``; all files if None) to ``dest_dir``.

        Files are copied in parallel (``settings.max_workers`` of the source), each by the
        fastest way the two backends allow: a hard link on one local file system (when
        ``link``), a server-side copy within one S3 endpoint, otherwise a streaming
        (multipart, for big files) transfer. Each file lands atomically; on the first failure
        the remaining files are not started and the error is raised (what was copied stays).

        ``may_vanish`` names files of ``files`` that the process owning ``src_dir`` may
        delete at any moment (Spark purging a live checkpoint's old log entries): one that is
        gone when listed or when its copy starts is skipped and named in
        :attr:`CopyStats.vanished`. Any other missing file is a
        :class:`StorageNotFoundError`.
        """
        started = time.monotonic()
        optional = frozenset(may_vanish)
        sizes, vanished = self._source_sizes(src_dir, files, optional)
        stats = CopyStats(files=len(sizes), bytes=sum(s for s in sizes.values() if s))
        stats.vanished = vanished
        if not sizes:
            stats.seconds = time.monotonic() - started
            return stats
        dest_storage.mkdirs(dest_dir)
        self._before_copy(dest_storage, dest_dir, sizes)

        def one(name: str) -> str:
            try:
                return self._copy_file(
                    join(src_dir, name), dest_storage, join(dest_dir, name), sizes[name], link
                )
            except FileNotFoundError:
                if name in optional:
                    return VANISHED
                raise

        workers = max(1, min(self.settings.max_workers, len(sizes)))
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="flinkish-copy") as pool:
            futures: dict[str, Future[str]] = {name: pool.submit(one, name) for name in sizes}
            _, pending = wait(futures.values(), return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            for future in futures.values():
                if future.done() and not future.cancelled() and future.exception() is not None:
                    raise future.exception()  # type: ignore[misc]
        for name, future in futures.items():
            kind = future.result()
            if kind == VANISHED:
                stats.vanished.append(name)
                stats.files -= 1
                stats.bytes -= sizes[name] or 0
            else:
                setattr(stats, kind, getattr(stats, kind) + 1)
        stats.seconds = time.monotonic() - started
        return stats

    def _source_sizes(
        self, src_dir: str, files: Iterable[str] | None, optional: frozenset[str]
    ) -> tuple[dict[str, int | None], builtins.list[str]]:
        """``relative name -> size`` of the files to copy (sizes from one listing), and the
        ``optional`` ones that listing no longer holds."""
        listed: dict[str, int | None] = {
            relative_to(src_dir, info.path): info.size for info in self.walk(src_dir)
        }
        if files is None:
            return listed, []
        wanted = list(dict.fromkeys(check_relative(name) for name in files))
        missing = [name for name in wanted if name not in listed and name not in optional]
        if missing:
            shown = ", ".join(missing[:5]) + (
                f" and {len(missing) - 5} more" if missing[5:] else ""
            )
            raise StorageNotFoundError(
                join(src_dir, missing[0]),
                f"{len(missing)} of the files to copy from {src_dir} are missing: {shown}.",
            )
        gone = [name for name in wanted if name not in listed]
        return {name: listed[name] for name in wanted if name in listed}, gone

    def _before_copy(self, dest: Storage, dest_dir: str, sizes: dict[str, int | None]) -> None:
        """Prepare ``dest_dir`` before the files are copied in parallel (create directories)."""
        parents = {name.rpartition("/")[0] for name in sizes}
        for parent in sorted(p for p in parents if p):
            dest.mkdirs(join(dest_dir, parent))

    def _copy_file(
        self, src: str, dest: Storage, dest_path: str, size: int | None, link: bool
    ) -> str:
        """Copy one file to ``dest``; which way it went (LINKED, SERVER_SIDE or TRANSFERRED).

        This generic way streams through this process; backends override it for their fast
        paths and call it for the rest.
        """
        target = dest.local_path(dest_path)
        if target is not None:
            self.download_file(src, target)
        else:
            with self.open_read(src) as stream:
                dest.write_stream(dest_path, stream)
        return TRANSFERRED
